package shard_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	drinksv1 "github.com/example/myoperator/apis/drinks/v1"
	"github.com/example/myoperator/internal/scheme"
	"github.com/example/myoperator/internal/shard"
	"github.com/example/myoperator/test/framework/testenv"
)

const drinks = 300

// TestServerSelectsTheBuckets: with the ShardedListAndWatch gate on, the
// project-built API server answers each member's selector with exactly
// the Drinks the member's matcher accepts, in lists and in a watch, so the
// members' lists cover every Drink once; with the gate off it ignores the
// selector and sends every Drink, which the matcher shows.
func TestServerSelectsTheBuckets(t *testing.T) {
	members := []string{"replica-a", "replica-b", "replica-c"}
	a := shard.Assign(members)
	for _, tc := range []struct {
		name, gates string
		selects     bool
	}{
		{"gate on", "ShardedListAndWatch=true", true},
		{"gate off", "", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, cfg, c := testenv.Start(t, testenv.Options{FeatureGates: tc.gates})
			ctx := context.Background()
			ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "shards"}}
			if err := c.Create(ctx, ns); err != nil {
				t.Fatal(err)
			}
			if errs := testenv.InParallel(drinks, 8, func(i int) error {
				return c.Create(ctx, drink(i))
			}); len(errs) > 0 {
				t.Fatalf("%d creates failed, the first: %v", len(errs), errs[0])
			}
			seen := map[types.UID]string{}
			for _, m := range members {
				list := &drinksv1.DrinkList{}
				if err := c.List(ctx, list, &client.ListOptions{Namespace: ns.Name, Raw: &metav1.ListOptions{ShardSelector: shard.Selector(a[m])}}); err != nil {
					t.Fatalf("%s: list: %v", m, err)
				}
				outside := 0
				matcher := shard.NewMatcher(a[m])
				for i := range list.Items {
					ok, err := matcher.Matches(&list.Items[i])
					if err != nil {
						t.Fatal(err)
					}
					if !ok {
						outside++
						continue
					}
					if prev, dup := seen[list.Items[i].UID]; dup {
						t.Errorf("Drink %s listed for %s and %s", list.Items[i].Name, prev, m)
					}
					seen[list.Items[i].UID] = m
				}
				t.Logf("%s (%d buckets): %d Drinks listed, %d outside its ranges", m, len(a[m]), len(list.Items), outside)
				if tc.selects && outside > 0 {
					t.Errorf("%s: the server sent %d Drinks outside the selector's ranges", m, outside)
				}
				if !tc.selects && len(list.Items) != drinks {
					t.Errorf("%s: %d Drinks listed without the gate, want all %d", m, len(list.Items), drinks)
				}
			}
			if len(seen) != drinks {
				t.Errorf("the members' ranges hold %d of the %d Drinks", len(seen), drinks)
			}
			if tc.selects {
				watchOneMember(ctx, t, cfg, c, ns.Name, shard.NewMatcher(a[members[0]]), shard.Selector(a[members[0]]))
			}
		})
	}
}

// watchOneMember watches with a member's selector while more Drinks are
// created: every event is of a Drink in the member's ranges, and every such
// Drink arrives.
func watchOneMember(ctx context.Context, t *testing.T, cfg *rest.Config, c client.Client, ns string, matcher shard.Matcher, selector string) {
	t.Helper()
	wc, err := client.NewWithWatch(cfg, client.Options{Scheme: scheme.New()})
	if err != nil {
		t.Fatal(err)
	}
	list := &drinksv1.DrinkList{}
	if err := c.List(ctx, list, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	w, err := wc.Watch(ctx, &drinksv1.DrinkList{}, &client.ListOptions{Namespace: ns,
		Raw: &metav1.ListOptions{ShardSelector: selector, ResourceVersion: list.ResourceVersion}})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	const more = 100
	want := map[string]bool{}
	for i := drinks; i < drinks+more; i++ {
		d := drink(i)
		if err := c.Create(ctx, d); err != nil {
			t.Fatal(err)
		}
		if ok, err := matcher.Matches(d); err != nil {
			t.Fatal(err)
		} else if ok {
			want[d.Name] = true
		}
	}
	var got []string
	deadline := time.After(30 * time.Second)
	for len(got) < len(want) {
		select {
		case ev := <-w.ResultChan():
			if ev.Type != watch.Added {
				t.Fatalf("watch event %s: %v", ev.Type, ev.Object)
			}
			d := ev.Object.(*drinksv1.Drink)
			if !want[d.Name] {
				t.Fatalf("the watch sent Drink %s, outside the selector's ranges", d.Name)
			}
			got = append(got, d.Name)
		case <-deadline:
			t.Fatalf("the watch sent %d of the %d Drinks in the selector's ranges within 30 s", len(got), len(want))
		}
	}
	slices.Sort(got)
	if len(slices.Compact(got)) != len(want) {
		t.Fatalf("the watch sent %v, want each of the %d once", got, len(want))
	}
	t.Logf("watch: %d of %d new Drinks in the member's ranges, each sent once, no other", len(want), more)
}

func drink(i int) *drinksv1.Drink {
	return &drinksv1.Drink{
		ObjectMeta: metav1.ObjectMeta{Namespace: "shards", Name: fmt.Sprintf("d-%04d", i)},
		Spec:       drinksv1.DrinkSpec{DisplayName: fmt.Sprintf("Drink %d", i), Beverage: "tea", Size: drinksv1.SizeMedium},
	}
}
