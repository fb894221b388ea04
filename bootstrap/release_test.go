package bootstrap_test

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/go-logr/logr"
	"github.com/go-logr/logr/testr"
	"github.com/google/go-cmp/cmp"
	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	operatorv1alpha1 "github.com/example/myoperator/apis/operator/v1alpha1"
	"github.com/example/myoperator/bootstrap"
	"github.com/example/myoperator/test/framework/testenv"
)

// v020Spec is what v0.2.0's bootstrap created OperatorConfig cluster with
// (its DefaultSpec, every field spelled out).
func v020Spec() operatorv1alpha1.OperatorConfigSpec {
	return operatorv1alpha1.OperatorConfigSpec{
		ManagementState: operatorv1alpha1.Managed,
		LogLevel:        operatorv1alpha1.LogInfo,
		Drinks:          operatorv1alpha1.DrinksConfig{DefaultSize: "Medium"},
		Guestbook:       operatorv1alpha1.GuestbookConfig{Namespace: "guestbook", Image: "registry.k8s.io/pause:3.10"},
	}
}

// createAsV020 creates OperatorConfig cluster as v0.2.0's bootstrap did: a
// Create (an Update entry in managedFields) by the field manager
// myoperator-bootstrap.
func createAsV020(t *testing.T, c client.Client, mutate func(*operatorv1alpha1.OperatorConfigSpec)) {
	t.Helper()
	cfg := &operatorv1alpha1.OperatorConfig{ObjectMeta: metav1.ObjectMeta{Name: operatorv1alpha1.SingletonName}, Spec: v020Spec()}
	if mutate != nil {
		mutate(&cfg.Spec)
	}
	if err := c.Create(context.Background(), cfg, client.FieldOwner(bootstrap.FieldOwner)); err != nil {
		t.Fatal(err)
	}
}

func getConfig(t *testing.T, c client.Client) *operatorv1alpha1.OperatorConfig {
	t.Helper()
	cfg := &operatorv1alpha1.OperatorConfig{}
	if err := c.Get(context.Background(), client.ObjectKey{Name: operatorv1alpha1.SingletonName}, cfg); err != nil {
		t.Fatal(err)
	}
	return cfg
}

// update changes the spec as a user's tool does, with its own field
// manager (kubectl edit's, say).
func update(t *testing.T, c client.Client, manager string, mutate func(*operatorv1alpha1.OperatorConfigSpec)) {
	t.Helper()
	cfg := getConfig(t, c)
	mutate(&cfg.Spec)
	if err := c.Update(context.Background(), cfg, client.FieldOwner(manager)); err != nil {
		t.Fatal(err)
	}
}

// TestReleaseEarlierDefaults: of an OperatorConfig created by v0.2.0's
// bootstrap, the step removes exactly the values that bootstrap wrote and
// nobody claimed since; the API server's managedFields decide who claimed
// what.
func TestReleaseEarlierDefaults(t *testing.T) {
	_, _, c := testenv.Start(t, testenv.Options{})
	ctx := context.Background()
	image := "registry.example.com/team/guestbook:2"
	tests := []struct {
		name string
		// prepare creates and changes OperatorConfig cluster.
		prepare func(t *testing.T)
		want    operatorv1alpha1.OperatorConfigSpec
		// released is what the annotation and event name; empty: no write.
		released []string
	}{
		{
			name:     "untouched since v0.2.0: every default goes",
			prepare:  func(t *testing.T) { createAsV020(t, c, nil) },
			want:     operatorv1alpha1.OperatorConfigSpec{},
			released: []string{"managementState", "logLevel", "drinks.defaultSize", "guestbook.namespace", "guestbook.image"},
		},
		{
			name: "a user's edit of the image (kubectl edit) stays, the rest goes",
			prepare: func(t *testing.T) {
				createAsV020(t, c, nil)
				update(t, c, "kubectl-edit", func(s *operatorv1alpha1.OperatorConfigSpec) { s.Guestbook.Image = image })
			},
			want:     operatorv1alpha1.OperatorConfigSpec{Guestbook: operatorv1alpha1.GuestbookConfig{Image: image}},
			released: []string{"managementState", "logLevel", "drinks.defaultSize", "guestbook.namespace"},
		},
		{
			name: "a user's server-side apply of the old default's value stays: it is theirs",
			prepare: func(t *testing.T) {
				createAsV020(t, c, nil)
				apply := &operatorv1alpha1.OperatorConfig{
					TypeMeta:   metav1.TypeMeta{APIVersion: operatorv1alpha1.GroupVersion.String(), Kind: "OperatorConfig"},
					ObjectMeta: metav1.ObjectMeta{Name: operatorv1alpha1.SingletonName},
					Spec:       operatorv1alpha1.OperatorConfigSpec{Guestbook: operatorv1alpha1.GuestbookConfig{Image: "registry.k8s.io/pause:3.10"}},
				}
				if err := c.Patch(ctx, apply, client.Apply, client.FieldOwner("gitops"), client.ForceOwnership); err != nil { //nolint:staticcheck // the typed object is the applied configuration here
					t.Fatal(err)
				}
			},
			want:     operatorv1alpha1.OperatorConfigSpec{Guestbook: operatorv1alpha1.GuestbookConfig{Image: "registry.k8s.io/pause:3.10"}},
			released: []string{"managementState", "logLevel", "drinks.defaultSize", "guestbook.namespace"},
		},
		{
			// The previous release's CRD schema defaults a field it finds
			// empty on every write, and defaulted values belong to no
			// manager: an upgrade whose bootstrap ran before the new CRD was
			// applied leaves them so.
			name: "written back by the previous release's schema defaults (owned by no one): every default goes",
			prepare: func(t *testing.T) {
				createAsV020(t, c, nil)
				cfg := getConfig(t, c)
				cfg.ManagedFields = []metav1.ManagedFieldsEntry{{}}
				if err := c.Update(ctx, cfg); err != nil {
					t.Fatal(err)
				}
				if cfg := getConfig(t, c); len(cfg.ManagedFields) != 0 {
					t.Fatalf("managedFields %v, want none", cfg.ManagedFields)
				}
			},
			want:     operatorv1alpha1.OperatorConfigSpec{},
			released: []string{"managementState", "logLevel", "drinks.defaultSize", "guestbook.namespace", "guestbook.image"},
		},
		{
			name: "a value no release wrote as its default stays",
			prepare: func(t *testing.T) {
				createAsV020(t, c, func(s *operatorv1alpha1.OperatorConfigSpec) { s.LogLevel = operatorv1alpha1.LogDebug })
			},
			want:     operatorv1alpha1.OperatorConfigSpec{LogLevel: operatorv1alpha1.LogDebug},
			released: []string{"managementState", "drinks.defaultSize", "guestbook.namespace", "guestbook.image"},
		},
		{
			name: "created by a user with every default: all of it stays",
			prepare: func(t *testing.T) {
				cfg := &operatorv1alpha1.OperatorConfig{ObjectMeta: metav1.ObjectMeta{Name: operatorv1alpha1.SingletonName}, Spec: v020Spec()}
				if err := c.Create(ctx, cfg, client.FieldOwner("kubectl-create")); err != nil {
					t.Fatal(err)
				}
			},
			want: v020Spec(),
		},
		{
			name: "created by this release's bootstrap: nothing to release",
			prepare: func(t *testing.T) {
				if err := bootstrap.CreateDefaultConfig(ctx, logr.Discard(), c); err != nil {
					t.Fatal(err)
				}
			},
			want: operatorv1alpha1.OperatorConfigSpec{},
		},
		{
			name:    "no OperatorConfig: nothing to do",
			prepare: func(t *testing.T) {},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.prepare(t)
			t.Cleanup(func() {
				cfg := &operatorv1alpha1.OperatorConfig{ObjectMeta: metav1.ObjectMeta{Name: operatorv1alpha1.SingletonName}}
				if err := c.Delete(ctx, cfg); err != nil && !apierrors.IsNotFound(err) {
					t.Fatal(err)
				}
				if err := c.DeleteAllOf(ctx, &eventsv1.Event{}, client.InNamespace(metav1.NamespaceDefault)); err != nil {
					t.Fatal(err)
				}
			})
			before := &operatorv1alpha1.OperatorConfig{}
			beforeErr := c.Get(ctx, client.ObjectKey{Name: operatorv1alpha1.SingletonName}, before)
			if err := bootstrap.ReleaseEarlierDefaults(ctx, testr.New(t), c); err != nil {
				t.Fatal(err)
			}
			if apierrors.IsNotFound(beforeErr) {
				return
			}
			after := getConfig(t, c)
			if diff := cmp.Diff(tt.want, after.Spec); diff != "" {
				t.Errorf("spec (-want +got):\n%s", diff)
			}
			note := after.Annotations[bootstrap.ReleasedAnnotation]
			if len(tt.released) == 0 {
				if after.ResourceVersion != before.ResourceVersion {
					t.Errorf("nothing to release, yet the OperatorConfig was written (annotation %q)", note)
				}
				return
			}
			evs := &eventsv1.EventList{}
			if err := c.List(ctx, evs, client.InNamespace(metav1.NamespaceDefault)); err != nil {
				t.Fatal(err)
			}
			// The API server's own events land here too (its ClusterIP
			// repair reports the kubernetes Service now and then).
			evs.Items = slices.DeleteFunc(evs.Items, func(e eventsv1.Event) bool { return e.Regarding.Kind != "OperatorConfig" })
			if len(evs.Items) != 1 || evs.Items[0].Reason != bootstrap.ReasonDefaultsReleased || evs.Items[0].Regarding.Name != operatorv1alpha1.SingletonName {
				t.Fatalf("events %+v, want one %s about the OperatorConfig", evs.Items, bootstrap.ReasonDefaultsReleased)
			}
			for _, f := range tt.released {
				if !strings.Contains(note, "spec."+f+" ") || !strings.Contains(evs.Items[0].Note, "spec."+f+" ") {
					t.Errorf("the annotation %q or the event %q does not name spec.%s", note, evs.Items[0].Note, f)
				}
			}
			// Run again (every pod start does): nothing more to release.
			if err := bootstrap.ReleaseEarlierDefaults(ctx, logr.Discard(), c); err != nil {
				t.Fatal(err)
			}
			if again := getConfig(t, c); again.ResourceVersion != after.ResourceVersion {
				t.Errorf("a second run wrote the OperatorConfig again: %s -> %s", after.ResourceVersion, again.ResourceVersion)
			}
		})
	}
}

// TestReleaseEarlierDefaultsYieldsToAnEdit: a user's edit lands between
// the step's read and its patch. The patch carries the resourceVersion it
// read, so the API server refuses it; the step reads again and keeps the
// edited value.
func TestReleaseEarlierDefaultsYieldsToAnEdit(t *testing.T) {
	_, cfg, c := testenv.Start(t, testenv.Options{})
	ctx := context.Background()
	createAsV020(t, c, nil)
	image := "registry.example.com/team/guestbook:3"
	conflicts := 0
	ww, err := client.NewWithWatch(cfg, client.Options{Scheme: c.Scheme()})
	if err != nil {
		t.Fatal(err)
	}
	racing := interceptor.NewClient(ww, interceptor.Funcs{
		Patch: func(ctx context.Context, cl client.WithWatch, obj client.Object, patch client.Patch, opts ...client.PatchOption) error {
			if conflicts == 0 {
				update(t, c, "kubectl-edit", func(s *operatorv1alpha1.OperatorConfigSpec) { s.Guestbook.Image = image })
			}
			err := cl.Patch(ctx, obj, patch, opts...)
			if apierrors.IsConflict(err) {
				conflicts++
			}
			return err
		},
	})
	if err := bootstrap.ReleaseEarlierDefaults(ctx, logr.Discard(), racing); err != nil {
		t.Fatal(err)
	}
	if conflicts != 1 {
		t.Errorf("%d conflicts, want the API server to refuse the first patch", conflicts)
	}
	want := operatorv1alpha1.OperatorConfigSpec{Guestbook: operatorv1alpha1.GuestbookConfig{Image: image}}
	if diff := cmp.Diff(want, getConfig(t, c).Spec); diff != "" {
		t.Errorf("spec (-want +got):\n%s", diff)
	}
}
