package reconcile

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	drinksv1 "github.com/example/myoperator/apis/drinks/v1"
	drinksversions "github.com/example/myoperator/apis/drinks/versions"
	webappv1 "github.com/example/myoperator/apis/webapp/v1"
	"github.com/example/myoperator/internal/names"
	"github.com/example/myoperator/internal/render"
)

// TestFourthDrinkVersion: with v1gamma1 added to a copy of the table, and
// no change to the reconciler, a Drink authored in it gets the ConfigMap
// layout of its row, the keys of another layout it leaves are removed,
// and the inventory metric has its series from the start. The table as
// built has no layout for it and no series, so a list of versions kept here
// would fail.
func TestFourthDrinkVersion(t *testing.T) {
	four := append(slices.Clone(drinksversions.Drinks), drinksversions.Version{
		Name: "v1gamma1", Served: true,
		Fields:  []string{"title", "beverage", "sugarCubes"},
		Renames: map[string]string{"title": "displayName"},
		Layout:  map[string]string{"title": "displayName", "beverage": "beverage", "cubes": "sugarCubes"},
	})
	if err := four.Check(); err != nil {
		t.Fatal(err)
	}
	drink := func(name, version string) *drinksv1.Drink {
		return &drinksv1.Drink{
			ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, Annotations: map[string]string{drinksv1.AuthoredVersionAnnotation: version}},
			Spec:       drinksv1.DrinkSpec{DisplayName: "Cup", Beverage: "tea", Size: drinksv1.SizeLarge, SugarCubes: 2, Extras: []string{"mint"}},
		}
	}
	inV1 := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{names.LayoutAnnotation: "v1"}}}
	for _, tc := range []struct {
		name       string
		table      drinksversions.Table
		wantData   map[string]string // nil: no layout
		wantStale  []string
		wantSeries bool
	}{
		{
			name: "four versions", table: four,
			wantData:   map[string]string{"title": "Cup", "beverage": "tea", "cubes": "2"},
			wantStale:  []string{"displayName", "extras", "size", "sugarCubes"},
			wantSeries: true,
		},
		{
			name: "the table as built", table: drinksversions.Drinks,
			wantStale: []string{"beverage", "displayName", "extras", "size", "sugarCubes"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := drink("gamma", "v1gamma1")
			data, err := render.ConfigMapDataIn(tc.table, d)
			var unknown *render.UnknownVersionError
			switch {
			case tc.wantData == nil && (!errors.As(err, &unknown) || !strings.Contains(err.Error(), "v1alpha1, v1beta1 and v1")):
				t.Errorf("ConfigMapDataIn: %v, want an UnknownVersionError naming the served versions", err)
			case tc.wantData != nil && err != nil:
				t.Errorf("ConfigMapDataIn: %v", err)
			}
			if diff := cmp.Diff(tc.wantData, data); diff != "" {
				t.Errorf("ConfigMap data (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.wantStale, staleKeys(tc.table, inV1, render.LayoutName(tc.table, d))); diff != "" {
				t.Errorf("stale keys of the v1 layout (-want +got):\n%s", diff)
			}

			scheme := runtime.NewScheme()
			for _, add := range []func(*runtime.Scheme) error{drinksv1.AddToScheme, webappv1.AddToScheme} {
				if err := add(scheme); err != nil {
					t.Fatal(err)
				}
			}
			reader := fake.NewClientBuilder().WithScheme(scheme).WithObjects(drink("one", "v1"), drink("two", "v1")).Build()
			c := &inventoryCollector{}
			c.setDrinks(&drinkSource{reader: reader, versions: tc.table})
			series := drinkSeries(t, c)
			if got := series[[2]string{"v1", "unknown"}]; got != 2 {
				t.Errorf("v1 Drinks not Ready: %v, want 2 (series %v)", got, series)
			}
			for _, ready := range []string{"true", "false", "unknown"} {
				n, ok := series[[2]string{"v1gamma1", ready}]
				if ok != tc.wantSeries || n != 0 {
					t.Errorf("v1gamma1 %s series: %v (present %v), want present %v at 0", ready, n, ok, tc.wantSeries)
				}
			}
		})
	}
}

// drinkSeries collects c's myoperator_drinks series by authored version
// and Ready status.
func drinkSeries(t *testing.T, c prometheus.Collector) map[[2]string]float64 {
	t.Helper()
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(c)
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	series := map[[2]string]float64{}
	for _, f := range families {
		if f.GetName() != "myoperator_drinks" {
			continue
		}
		for _, m := range f.GetMetric() {
			labels := map[string]string{}
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			series[[2]string{labels["authored_version"], labels["ready"]}] = m.GetGauge().GetValue()
		}
	}
	return series
}

// TestCourseForm: a Drink in v1's course form gets exactly the course's
// ConfigMap keys, whether the course's operator stored it (course fields
// alone, no authored version) or a client wrote it through this operator's
// webhook (both forms, authored v1); leaving the course form removes them.
func TestCourseForm(t *testing.T) {
	course := map[string]string{"name": "my-drink", "drink": "coffee"}
	for _, tc := range []struct {
		name        string
		d           *drinksv1.Drink
		wantVersion string
		wantLayout  string
		wantData    map[string]string
	}{
		{
			name:        "stored by the course's operator",
			d:           &drinksv1.Drink{Spec: drinksv1.DrinkSpec{Name: "my-drink", Drink: "coffee"}},
			wantVersion: "v1", wantLayout: "v1+course", wantData: course,
		},
		{
			name: "written through the webhook",
			d: &drinksv1.Drink{
				ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{drinksv1.AuthoredVersionAnnotation: "v1"}},
				Spec: drinksv1.DrinkSpec{Name: "my-drink", Drink: "coffee", DisplayName: "my-drink", Beverage: "coffee",
					Size: drinksv1.SizeMedium},
			},
			wantVersion: "v1", wantLayout: "v1+course", wantData: course,
		},
		{
			name: "v1's own form",
			d: &drinksv1.Drink{
				ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{drinksv1.AuthoredVersionAnnotation: "v1"}},
				Spec:       drinksv1.DrinkSpec{DisplayName: "my-drink", Beverage: "coffee", Size: drinksv1.SizeMedium},
			},
			wantVersion: "v1", wantLayout: "v1",
			wantData: map[string]string{"displayName": "my-drink", "beverage": "coffee", "size": "Medium", "sugarCubes": "0", "extras": ""},
		},
		{
			name:        "neither recorded nor in the course form",
			d:           &drinksv1.Drink{Spec: drinksv1.DrinkSpec{DisplayName: "my-drink", Beverage: "coffee"}},
			wantVersion: "", wantLayout: "",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := render.AuthoredVersion(tc.d); got != tc.wantVersion {
				t.Errorf("AuthoredVersion = %q, want %q", got, tc.wantVersion)
			}
			if got := render.LayoutName(drinksversions.Drinks, tc.d); got != tc.wantLayout {
				t.Errorf("LayoutName = %q, want %q", got, tc.wantLayout)
			}
			data, err := render.ConfigMapData(tc.d)
			if tc.wantData == nil {
				if err == nil {
					t.Errorf("ConfigMapData = %v, want an UnknownVersionError", data)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.wantData, data); diff != "" {
				t.Errorf("ConfigMap data (-want +got):\n%s", diff)
			}
		})
	}
	inCourse := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{names.LayoutAnnotation: "v1+course"}}}
	if diff := cmp.Diff([]string{"drink", "name"}, staleKeys(drinksversions.Drinks, inCourse, "v1")); diff != "" {
		t.Errorf("stale keys on leaving the course form (-want +got):\n%s", diff)
	}
}

// TestInventoryOfAShare: with the Drinks shared, a share counts only the
// Drinks InShare accepts, and a collector without a Guestbook source
// exports no Guestbook series (the leader's).
func TestInventoryOfAShare(t *testing.T) {
	scheme := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{drinksv1.AddToScheme, webappv1.AddToScheme} {
		if err := add(scheme); err != nil {
			t.Fatal(err)
		}
	}
	mine := &drinksv1.Drink{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "mine", Annotations: map[string]string{drinksv1.AuthoredVersionAnnotation: "v1"}}}
	theirs := &drinksv1.Drink{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "theirs", Annotations: map[string]string{drinksv1.AuthoredVersionAnnotation: "v1"}}}
	gb := &webappv1.Guestbook{ObjectMeta: metav1.ObjectMeta{Name: "gb"}}
	reader := fake.NewClientBuilder().WithScheme(scheme).WithObjects(mine, theirs, gb).Build()
	c := &inventoryCollector{}
	c.setDrinks(&drinkSource{reader: reader, versions: drinksversions.Drinks, inShare: func(d *drinksv1.Drink) bool { return d.Name == "mine" }})
	if got := drinkSeries(t, c)[[2]string{"v1", "unknown"}]; got != 1 {
		t.Errorf("v1 Drinks of the share: %v, want 1", got)
	}
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(c)
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() == "myoperator_guestbooks" {
			t.Errorf("a share exports Guestbooks: %v", f)
		}
	}
}

// storeInformers is a cache whose Drink informer holds store: the
// inventory must walk it, and never List (the embedded nil Cache would
// panic), since a List copies every cached Drink.
type storeInformers struct {
	cache.Cache
	inf storeInformer
}

func (s storeInformers) GetInformer(context.Context, client.Object, ...cache.InformerGetOption) (cache.Informer, error) {
	return s.inf, nil
}

type storeInformer struct {
	cache.Informer
	store  toolscache.Store
	synced bool
}

func (s storeInformer) GetStore() toolscache.Store { return s.store }
func (s storeInformer) HasSynced() bool            { return s.synced }

// TestInventoryFromTheStore: from a cache, the Drinks are counted from
// the informer's store, without a List; an informer not synced yet gives
// no series rather than a partial count.
func TestInventoryFromTheStore(t *testing.T) {
	store := toolscache.NewStore(toolscache.MetaNamespaceKeyFunc)
	for _, name := range []string{"mine", "also-mine", "theirs"} {
		d := &drinksv1.Drink{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, Annotations: map[string]string{drinksv1.AuthoredVersionAnnotation: "v1"}}}
		if err := store.Add(d); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct {
		name   string
		synced bool
		want   float64
		series bool
	}{
		{name: "synced", synced: true, want: 2, series: true},
		{name: "not synced", synced: false, series: false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := &inventoryCollector{}
			c.setDrinks(&drinkSource{reader: storeInformers{inf: storeInformer{store: store, synced: tc.synced}}, versions: drinksversions.Drinks,
				inShare: func(d *drinksv1.Drink) bool { return strings.HasSuffix(d.Name, "mine") }})
			got, ok := drinkSeries(t, c)[[2]string{"v1", "unknown"}]
			if ok != tc.series || got != tc.want {
				t.Errorf("v1 Drinks of the share: %v (series %v), want %v (series %v)", got, ok, tc.want, tc.series)
			}
		})
	}
}
