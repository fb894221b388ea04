package drinkload

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	drinksv1 "github.com/example/myoperator/apis/drinks/v1"
)

// PerVersion bounds how many Drinks each version's writer creates; after
// that it only edits and reads them, so a long run does not grow the
// cluster.
const PerVersion = 15

// pause is each worker's wait between two rounds: four workers then send
// about 150 requests a second, enough that a gap of a fraction of a second
// in the webhooks' endpoints is hit, little enough for two cores.
const pause = 20 * time.Millisecond

// Load is a running load: one writer per served version creates Drinks,
// then edits them with merge patches (no resourceVersion, so the
// operator's own status writes cause no conflict) and reads each back
// through another version; one more worker lists the namespace's Drinks
// through v1alpha1, so that every Drink stored in v1 passes the
// conversion webhook. Every write passes the mutating and validating
// webhooks, every read in another version than v1 the conversion webhook.
type Load struct {
	c      client.Client
	ns     string
	cancel context.CancelFunc
	wg     sync.WaitGroup
	start  time.Time

	mu     sync.Mutex
	report Report
}

// Report is what the load saw.
type Report struct {
	Requests int `json:"requests"`
	Failures int `json:"failures"`
	// PerVersion counts requests and failures by the version used.
	PerVersion map[string][2]int `json:"perVersion"`
	// Errors are the first failures' messages, with their time.
	Errors   []string      `json:"errors,omitempty"`
	Duration time.Duration `json:"duration"`
}

func (r Report) String() string {
	var per []string
	for _, v := range slices.Sorted(maps.Keys(r.PerVersion)) {
		per = append(per, fmt.Sprintf("%s %d/%d", v, r.PerVersion[v][1], r.PerVersion[v][0]))
	}
	s := fmt.Sprintf("%d requests in %s, %d failed (failed/sent by version: %s)", r.Requests, r.Duration.Round(time.Millisecond), r.Failures, strings.Join(per, ", "))
	if len(r.Errors) > 0 {
		s += "; first failures:\n  " + strings.Join(r.Errors, "\n  ")
	}
	return s
}

// Start starts the workers in namespace ns, which must exist. c should
// drop the API server's deprecation warnings (every v1alpha1 and v1beta1
// request has some), which would flood a log. The load runs until Stop,
// whatever happens to ctx of the caller.
func Start(c client.Client, ns string) *Load {
	runCtx, cancel := context.WithCancel(context.Background())
	l := &Load{c: c, ns: ns, cancel: cancel, start: time.Now(), report: Report{PerVersion: map[string][2]int{}}}
	for _, v := range []string{"v1alpha1", "v1beta1", "v1"} {
		l.wg.Go(func() { l.write(runCtx, v) })
	}
	l.wg.Go(func() { l.list(runCtx) })
	return l
}

// Stop ends the workers and returns what they saw.
func (l *Load) Stop() Report {
	l.cancel()
	l.wg.Wait()
	return l.Now()
}

// Now is what the load saw so far.
func (l *Load) Now() Report {
	l.mu.Lock()
	defer l.mu.Unlock()
	r := l.report
	r.PerVersion = maps.Clone(l.report.PerVersion)
	r.Errors = slices.Clone(l.report.Errors)
	r.Duration = time.Since(l.start)
	return r
}

// count records one request's outcome; a request cut short by Stop is not
// a request.
func (l *Load) count(ctx context.Context, version, what string, err error) {
	if err != nil && ctx.Err() != nil {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	c := l.report.PerVersion[version]
	c[0]++
	l.report.Requests++
	if err != nil {
		c[1]++
		l.report.Failures++
		if len(l.report.Errors) < 10 {
			l.report.Errors = append(l.report.Errors, fmt.Sprintf("%s +%s %s through %s: %v",
				time.Now().Format("15:04:05.000"), time.Since(l.start).Round(time.Millisecond), what, version, err))
		}
	}
	l.report.PerVersion[version] = c
}

// write is one version's writer.
func (l *Load) write(ctx context.Context, version string) {
	readVia := map[string]string{"v1alpha1": "v1", "v1beta1": "v1alpha1", "v1": "v1beta1"}[version]
	created := 0
	for i := 0; ctx.Err() == nil; i++ {
		slot := i % PerVersion
		name := fmt.Sprintf("load-%s-%d", version, slot)
		if slot >= created {
			err := l.c.Create(ctx, Drink(version, l.ns, name, i))
			if err == nil || apierrors.IsAlreadyExists(err) {
				// Already there: a stop and a restart of the load in one
				// namespace; the create still passed the webhooks.
				created = slot + 1
				err = nil
			}
			l.count(ctx, version, "create "+name, err)
		} else {
			l.count(ctx, version, "patch "+name, l.c.Patch(ctx, Drink(version, l.ns, name, i), client.RawPatch(types.MergePatchType, patch(version, i))))
		}
		got := empty(readVia)
		l.count(ctx, readVia, "get "+name, l.c.Get(ctx, client.ObjectKey{Namespace: l.ns, Name: name}, got))
		wait(ctx)
	}
}

// list lists the namespace's Drinks through v1alpha1: the conversion
// webhook converts every one stored in v1 in one request.
func (l *Load) list(ctx context.Context) {
	for ctx.Err() == nil {
		list := &unstructured.UnstructuredList{}
		list.SetGroupVersionKind(schema.GroupVersionKind{Group: drinksv1.GroupVersion.Group, Version: "v1alpha1", Kind: "DrinkList"})
		l.count(ctx, "v1alpha1", "list", l.c.List(ctx, list, client.InNamespace(l.ns)))
		wait(ctx)
	}
}

func wait(ctx context.Context) {
	select {
	case <-ctx.Done():
	case <-time.After(pause):
	}
}

// Drink is a valid Drink of the version; i varies its content. It is
// unstructured, written as a user's manifest would be: the load needs no
// Go type of any version.
func Drink(version, ns, name string, i int) client.Object {
	spec := map[string]any{"displayName": "Load", "beverage": "cocoa", "size": "Medium", "sugarCubes": int64(i % 5)}
	switch version {
	case "v1alpha1":
		spec = map[string]any{"name": "Load", "drink": "tea"}
	case "v1beta1":
		spec = map[string]any{"name": "Load", "drink": "coffee", "size": "Large", "sugar": int64(i % 5)}
	}
	u := empty(version)
	u.SetNamespace(ns)
	u.SetName(name)
	u.Object["spec"] = spec
	return u
}

// patch changes a field of the version's spec.
func patch(version string, i int) []byte {
	switch version {
	case "v1alpha1":
		return fmt.Appendf(nil, `{"spec":{"name":"Load %d"}}`, i%7)
	case "v1beta1":
		return fmt.Appendf(nil, `{"spec":{"sugar":%d}}`, i%5)
	default:
		return fmt.Appendf(nil, `{"spec":{"sugarCubes":%d}}`, i%5)
	}
}

// empty is a Drink of the version to read into.
func empty(version string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(schema.GroupVersionKind{Group: drinksv1.GroupVersion.Group, Version: version, Kind: "Drink"})
	return u
}
