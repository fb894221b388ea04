package reconcile_test

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"maps"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	admissionv1 "k8s.io/api/admission/v1"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	drinksv1 "github.com/example/myoperator/apis/drinks/v1"
	drinksv1alpha1 "github.com/example/myoperator/apis/drinks/v1alpha1"
	drinksv1beta1 "github.com/example/myoperator/apis/drinks/v1beta1"
	"github.com/example/myoperator/internal/names"
	"github.com/example/myoperator/internal/render"
	"github.com/example/myoperator/internal/scheme"
	"github.com/example/myoperator/test/framework/testenv"
	"github.com/example/myoperator/test/reliability"
)

// conflictReason is the Ready reason (and event reason) of a Drink whose
// ConfigMap name is taken by an object it does not control.
const conflictReason = "ConfigMapConflict"

// raceVersions are the served versions a race writes through.
var raceVersions = []string{"v1alpha1", "v1beta1", "v1"}

// raceCase is one way creates, updates and deletes of a Drink race the
// reconciler. act runs the writes of one iteration on the Drink key and
// returns the Drink that must be live at the end (nil: none) and when the
// last write was sent.
type raceCase struct {
	name string
	act  func(t *testing.T, r *rand.Rand, key client.ObjectKey) (*liveDrink, time.Time)
	// gcMax is how long the garbage collector takes at most to delete a
	// ConfigMap whose controller is gone: a random delay up to it for each
	// such ConfigMap, or exactly gcMax when gcFixed.
	gcMax   time.Duration
	gcFixed bool
	// iterations overrides the default number of iterations.
	iterations int
}

// liveDrink is what the last write of an iteration asks for.
type liveDrink struct {
	uid     types.UID
	version string
	data    map[string]string
}

// TestCreateDeleteRaces: a Drink deleted while its ConfigMap is
// written, or recreated at once under the same name, leaves no orphan the
// garbage collector would not delete, and the recreated Drink converges on
// its own layout within 10 s of the garbage collector deleting the old
// ConfigMap. envtest has no garbage collector, so the test plays it:
// ConfigMaps whose controller UID names no live Drink are deleted after a
// delay. Each case runs RACE_ITERATIONS times (default 20) with seeded
// random delays (RACE_SEED, printed).
//
// A recreated Drink may show, for a moment, the Ready status of the dead
// Drink of its name (see TestRecreatedDrinkNeverShowsDeadStatus): counted
// and logged here, not failed.
func TestCreateDeleteRaces(t *testing.T) {
	seed, iterations := raceParams(t)
	cases := raceCases(iterations)
	var results []raceResult
	for ci, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			n := iterations
			if tc.iterations > 0 {
				n = tc.iterations
			}
			results = append(results, runRaceCase(t, tc, n, seed, uint64(ci)))
		})
	}
	if len(results) < len(cases) {
		t.Logf("%d of %d cases ran to their end: no reliability figures", len(results), len(cases))
		return
	}
	// The figures: the slowest convergence over the cases with the usual
	// garbage collector and over those with the slow one, and the sums.
	var slowest, slowGCSlowest, slowGC time.Duration
	slowGCIterations, deadOwned, deadStatus, conflicts, conflictEvents, collected := 0, 0, 0, 0, 0, 0
	for i, r := range results {
		if cases[i].gcFixed {
			slowGC, slowGCIterations = max(slowGC, cases[i].gcMax), r.iterations
			slowGCSlowest = max(slowGCSlowest, r.slowest)
		} else {
			slowest = max(slowest, r.slowest)
		}
		deadOwned += r.deadOwned
		deadStatus += r.deadStatus
		conflicts += r.conflicts
		conflictEvents += r.conflictEvents
		collected += r.collected
	}
	reliability.Save(t, map[string]any{
		"seed":                   strconv.FormatUint(seed, 10),
		"iterationsPerCase":      iterations,
		"slowGCIterations":       slowGCIterations,
		"cases":                  len(cases),
		"slowestConvergeSeconds": reliability.Seconds(slowest),
		"slowGCSeconds":          reliability.Seconds(slowGC),
		"slowGCConvergeSeconds":  reliability.Seconds(slowGCSlowest),
		"deadOwnerConfigMaps":    deadOwned,
		"readyWithDeadStatus":    deadStatus,
		"conflictConditions":     conflicts,
		"conflictEvents":         conflictEvents,
		"collectedConfigMaps":    collected,
	}, "RACE_SEED", "RACE_ITERATIONS")
}

// TestRecreatedDrinkNeverShowsDeadStatus: a Drink deleted and recreated
// under the same name while the deleted one's reconcile is writing its
// ConfigMap is never Ready with the status that reconcile computed for the
// dead Drink. A validating webhook on ConfigMap creates holds the
// reconcile of the first Drink at its create until the second exists.
// (persistStatus once merge-patched that status onto whatever Drink had
// the name by then: no resourceVersion in the patch.)
func TestRecreatedDrinkNeverShowsDeadStatus(t *testing.T) {
	ns := namespace(t)
	key := client.ObjectKey{Namespace: ns, Name: "recreated"}
	held, release := holdConfigMapCreates(t, ns, key.Name)
	ctx, cancel := context.WithCancel(testCtx)
	defer cancel()
	obs := watchDrinks(ctx, t, ns)

	old := createAs(t, "v1alpha1", key, drinksv1.DrinkSpec{DisplayName: "Old", Beverage: "tea", Size: drinksv1.SizeSmall})
	select {
	case <-held:
	case <-time.After(10 * time.Second):
		t.Fatal("the reconcile of the first Drink never created its ConfigMap")
	}
	deleteDrink(t, key, old.uid)
	cur := createAs(t, "v1", key, drinksv1.DrinkSpec{DisplayName: "New", Beverage: "coffee", Size: drinksv1.SizeLarge})
	time.Sleep(200 * time.Millisecond) // the new Drink's create event reaches the manager's cache
	close(release)
	time.Sleep(2 * time.Second)
	obs.mu.Lock()
	defer obs.mu.Unlock()
	for _, v := range obs.violations {
		t.Errorf("%s (the dead Drink was %s)", v, old.uid)
	}
	// The end state is right all the same, once the garbage collector
	// (played here) deletes the dead Drink's ConfigMap.
	dead := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: key.Name}}
	if err := k8s.Delete(testCtx, dead); err != nil {
		t.Fatal(err)
	}
	if _, why := convergeWithin(key, cur, time.Now(), 10*time.Second); why != "" {
		t.Errorf("the recreated Drink did not converge: %s", why)
	}
}

// holdConfigMapCreates registers a validating webhook for ConfigMap
// creates in ns, served here: the first create of name is held until
// release is closed (at most 10 s); held is closed when it arrives.
func holdConfigMapCreates(t *testing.T, ns, name string) (held, release chan struct{}) {
	t.Helper()
	held, release = make(chan struct{}), make(chan struct{})
	wo := env.WebhookInstallOptions
	cert, err := tls.LoadX509KeyPair(filepath.Join(wo.LocalServingCertDir, "tls.crt"), filepath.Join(wo.LocalServingCertDir, "tls.key"))
	if err != nil {
		t.Fatal(err)
	}
	ln, err := tls.Listen("tcp", net.JoinHostPort(wo.LocalServingHost, "0"), &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12})
	if err != nil {
		t.Fatal(err)
	}
	var once sync.Once
	probes := make(chan struct{}, 100)
	srv := &http.Server{ReadHeaderTimeout: 5 * time.Second, Handler: http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		review := &admissionv1.AdmissionReview{}
		if err := json.NewDecoder(req.Body).Decode(review); err != nil || review.Request == nil {
			http.Error(w, "not an AdmissionReview", http.StatusBadRequest)
			return
		}
		if review.Request.Name == name {
			once.Do(func() {
				close(held)
				select {
				case <-release:
				case <-time.After(10 * time.Second):
				}
			})
		} else {
			probes <- struct{}{}
		}
		review.Response = &admissionv1.AdmissionResponse{UID: review.Request.UID, Allowed: true}
		review.Request = nil
		_ = json.NewEncoder(w).Encode(review)
	})}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })

	host := wo.LocalServingHostExternalName
	if host == "" {
		host = wo.LocalServingHost
	}
	_, port, _ := net.SplitHostPort(ln.Addr().String())
	url := "https://" + net.JoinHostPort(host, port) + "/hold"
	vwc := &admissionregistrationv1.ValidatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: "hold-configmaps-" + ns},
		Webhooks: []admissionregistrationv1.ValidatingWebhook{{
			Name:                    "hold.configmaps.race.example.com",
			ClientConfig:            admissionregistrationv1.WebhookClientConfig{URL: &url, CABundle: wo.LocalServingCAData},
			Rules:                   []admissionregistrationv1.RuleWithOperations{{Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create}, Rule: admissionregistrationv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"configmaps"}}}},
			NamespaceSelector:       &metav1.LabelSelector{MatchLabels: map[string]string{corev1.LabelMetadataName: ns}},
			SideEffects:             ptr.To(admissionregistrationv1.SideEffectClassNone),
			AdmissionReviewVersions: []string{"v1"},
			TimeoutSeconds:          ptr.To[int32](15),
		}},
	}
	if err := k8s.Create(testCtx, vwc); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = k8s.Delete(testCtx, vwc) })
	// The API server calls the webhook once it has seen the configuration:
	// probe until a create reaches it.
	for i := 0; ; i++ {
		probe := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: fmt.Sprintf("probe-%d", i)}}
		if err := k8s.Create(testCtx, probe); err != nil {
			t.Fatal(err)
		}
		select {
		case <-probes:
			return held, release
		case <-time.After(200 * time.Millisecond):
		}
		if i == 50 {
			t.Fatal("the API server never called the test's webhook")
		}
	}
}

// raceParams reads RACE_SEED (default: the clock) and RACE_ITERATIONS
// (default 20) and prints them.
func raceParams(t *testing.T) (seed uint64, iterations int) {
	t.Helper()
	seed = uint64(time.Now().UnixNano())
	if s := os.Getenv("RACE_SEED"); s != "" {
		var err error
		if seed, err = strconv.ParseUint(s, 10, 64); err != nil {
			t.Fatalf("RACE_SEED %q: %v", s, err)
		}
	}
	iterations = 20
	if s := os.Getenv("RACE_ITERATIONS"); s != "" {
		var err error
		if iterations, err = strconv.Atoi(s); err != nil || iterations < 1 {
			t.Fatalf("RACE_ITERATIONS %q: want a positive integer", s)
		}
	}
	t.Logf("RACE_SEED=%d RACE_ITERATIONS=%d", seed, iterations)
	return seed, iterations
}

// raceCases are the ways creates, updates and deletes race.
func raceCases(iterations int) []raceCase {
	return []raceCase{{
		name:  "delete right after create",
		gcMax: 2 * time.Second,
		act: func(t *testing.T, r *rand.Rand, key client.ObjectKey) (*liveDrink, time.Time) {
			d := createAs(t, pick(r, raceVersions), key, randomSpec(r))
			time.Sleep(jitter(r, 40*time.Millisecond))
			deleteDrink(t, key, d.uid)
			return nil, time.Now()
		},
	}, {
		name:  "delete and recreate in another version",
		gcMax: 2 * time.Second,
		// From before the first render to well after it.
		act: recreateAfter(func(r *rand.Rand) time.Duration { return jitter(r, 300*time.Millisecond) }),
	}, {
		name:  "recreate several times in a row",
		gcMax: 2 * time.Second,
		act: func(t *testing.T, r *rand.Rand, key client.ObjectKey) (*liveDrink, time.Time) {
			var d *liveDrink
			prev := ""
			for range 3 + r.IntN(3) {
				v := pick(r, raceVersions)
				for v == prev {
					v = pick(r, raceVersions)
				}
				prev = v
				if d != nil {
					deleteDrink(t, key, d.uid)
				}
				d = createAs(t, v, key, randomSpec(r))
				time.Sleep(jitter(r, 40*time.Millisecond))
			}
			return d, time.Now()
		},
	}, {
		name:  "update through another version while deleting",
		gcMax: 2 * time.Second,
		act: func(t *testing.T, r *rand.Rand, key client.ObjectKey) (*liveDrink, time.Time) {
			versions := shuffled(r, raceVersions)
			d := createAs(t, versions[0], key, randomSpec(r))
			time.Sleep(jitter(r, 200*time.Millisecond))
			spec, lag := randomSpec(r), jitter(r, 10*time.Millisecond) // r is not for two goroutines
			concurrently(
				func() { updateAs(t, versions[1], key, d.uid, spec) },
				func() { time.Sleep(lag); deleteDrink(t, key, d.uid) },
			)
			return nil, time.Now()
		},
	}, {
		name:  "delete the ConfigMap by hand while deleting",
		gcMax: 2 * time.Second,
		act: func(t *testing.T, r *rand.Rand, key client.ObjectKey) (*liveDrink, time.Time) {
			d := createAs(t, pick(r, raceVersions), key, randomSpec(r))
			time.Sleep(50*time.Millisecond + jitter(r, 300*time.Millisecond))
			lag := jitter(r, 10*time.Millisecond)
			concurrently(
				func() {
					err := k8s.Delete(testCtx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: key.Name}})
					if err != nil && !apierrors.IsNotFound(err) {
						t.Errorf("deleting ConfigMap %s: %v", key, err)
					}
				},
				func() { time.Sleep(lag); deleteDrink(t, key, d.uid) },
			)
			return nil, time.Now()
		},
	}, {
		name:       "delete and recreate, slow garbage collector (5 s)",
		gcMax:      5 * time.Second,
		gcFixed:    true,
		iterations: max(iterations/4, 1),
		// Rendered: the old ConfigMap is there when the new Drink comes.
		act: recreateAfter(func(*rand.Rand) time.Duration { return 300 * time.Millisecond }),
	}}
}

// recreateAfter deletes a Drink wait after creating it and at once
// creates it again in another version with another spec: the new one wins.
func recreateAfter(wait func(*rand.Rand) time.Duration) func(*testing.T, *rand.Rand, client.ObjectKey) (*liveDrink, time.Time) {
	return func(t *testing.T, r *rand.Rand, key client.ObjectKey) (*liveDrink, time.Time) {
		versions := shuffled(r, raceVersions)
		d := createAs(t, versions[0], key, randomSpec(r))
		time.Sleep(wait(r))
		deleteDrink(t, key, d.uid)
		return createAs(t, versions[1], key, randomSpec(r)), time.Now()
	}
}

// raceResult is what one case measured.
type raceResult struct {
	iterations int
	// slowest is the longest an iteration took to converge after its last
	// write.
	slowest time.Duration
	// deadOwned counts the ConfigMaps left controlled by a dead Drink
	// after the garbage collector ran; deadStatus the times a Drink was
	// seen Ready with a dead Drink's status.
	deadOwned, deadStatus int
	// conflicts counts Ready=False/ConfigMapConflict conditions seen,
	// conflictEvents the events of that reason, collected the ConfigMaps
	// of dead Drinks the garbage collector deleted.
	conflicts, conflictEvents, collected int
}

// runRaceCase runs n iterations of tc, at most 8 at a time, each on its own
// Drink name in one namespace, with the garbage collector and a Drink
// watcher running, then checks the namespace as a whole. A Drink seen
// Ready with a dead Drink's status fails the case.
func runRaceCase(t *testing.T, tc raceCase, n int, seed, stream uint64) raceResult {
	ns := namespace(t)
	ctx, cancel := context.WithCancel(testCtx)
	defer cancel()
	gcRand := rand.New(rand.NewPCG(seed, stream<<32|0xffffffff))
	gc := &fakeGC{ns: ns, due: map[types.UID]time.Time{}, finished: make(chan struct{}), delay: func() time.Duration {
		if tc.gcFixed {
			return tc.gcMax
		}
		return jitter(gcRand, tc.gcMax)
	}}
	go gc.run(ctx)
	obs := watchDrinks(ctx, t, ns)

	var (
		mu      sync.Mutex
		slowest time.Duration
		wg      sync.WaitGroup
		slots   = make(chan struct{}, 8)
	)
	// The bound: 10 s once the garbage collector deleted the old ConfigMap.
	bound := tc.gcMax + 10*time.Second
	for i := range n {
		wg.Add(1)
		slots <- struct{}{}
		go func() {
			defer func() { <-slots; wg.Done() }()
			r := rand.New(rand.NewPCG(seed, stream<<32|uint64(i)))
			key := client.ObjectKey{Namespace: ns, Name: fmt.Sprintf("race-%d", i)}
			want, last := tc.act(t, r, key)
			took, why := convergeWithin(key, want, last, bound)
			if why != "" {
				t.Errorf("iteration %d (%s): not converged %s after the last write: %s", i, key.Name, bound, why)
				return
			}
			mu.Lock()
			slowest = max(slowest, took)
			mu.Unlock()
		}()
	}
	wg.Wait()
	// Settled: nothing changes back a second later. The garbage collector
	// gets its delay for each ConfigMap it found with a dead controller
	// (one the operator wrote for a Drink deleted meanwhile): on a loaded
	// machine the last of them may be found within that second.
	time.Sleep(time.Second)
	testenv.Eventually(t, tc.gcMax+10*time.Second, func() string {
		gc.mu.Lock()
		defer gc.mu.Unlock()
		if len(gc.due) > 0 {
			return fmt.Sprintf("%d ConfigMaps with a dead controller not collected yet", len(gc.due))
		}
		return ""
	})
	cancel()
	<-gc.finished
	whys, deadOwned := namespaceOracle(t, ns, n)
	for _, why := range whys {
		t.Error(why)
	}
	gc.mu.Lock()
	for _, v := range gc.violations {
		t.Error(v)
	}
	deleted := gc.deleted
	gc.mu.Unlock()
	obs.mu.Lock()
	defer obs.mu.Unlock()
	for _, v := range obs.violations {
		t.Error(v)
	}
	events := 0
	for _, e := range listEvents(t, ns) {
		if e.Reason == conflictReason {
			events += 1 + int(seriesCount(e))
		}
	}
	outcome := "ok"
	if t.Failed() {
		outcome = "FAILED"
	}
	t.Logf("%s: %d iterations, max time to converge %s, transient conflicts: %d Ready=False/%s conditions and %d events, "+
		"%d ConfigMaps of dead Drinks deleted by the garbage collector, %d Ready with a dead Drink's status, outcome %s",
		tc.name, n, slowest.Round(time.Millisecond), obs.conflicts, conflictReason, events, deleted, len(obs.violations), outcome)
	return raceResult{iterations: n, slowest: slowest, deadOwned: deadOwned, deadStatus: len(obs.violations),
		conflicts: obs.conflicts, conflictEvents: events, collected: deleted}
}

// convergeWithin polls until the Drink key is in its final state (want, or
// gone with its ConfigMap when want is nil) and reports how long after
// last it got there, or why it did not within bound.
func convergeWithin(key client.ObjectKey, want *liveDrink, last time.Time, bound time.Duration) (time.Duration, string) {
	for {
		var why string
		if want == nil {
			why = gone(key)
		} else {
			why = liveConverged(key, want)
		}
		if why == "" {
			return time.Since(last), ""
		}
		if time.Since(last) > bound {
			return 0, why
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// gone: the Drink and its ConfigMap are deleted (the garbage collector
// having run).
func gone(key client.ObjectKey) string {
	if err := k8s.Get(testCtx, key, &drinksv1.Drink{}); !apierrors.IsNotFound(err) {
		return fmt.Sprintf("Drink still there (%v)", err)
	}
	cm := &corev1.ConfigMap{}
	if err := k8s.Get(testCtx, key, cm); !apierrors.IsNotFound(err) {
		return fmt.Sprintf("ConfigMap still there (%v), owners %+v", err, cm.OwnerReferences)
	}
	return ""
}

// liveConverged: the Drink is the one last created, Ready at its
// generation in its authored version, and its ConfigMap is controlled by
// it and holds exactly its layout.
func liveConverged(key client.ObjectKey, want *liveDrink) string {
	d := &drinksv1.Drink{}
	if err := k8s.Get(testCtx, key, d); err != nil {
		return err.Error()
	}
	if d.UID != want.uid {
		return fmt.Sprintf("Drink UID %s, want %s", d.UID, want.uid)
	}
	c := meta.FindStatusCondition(d.Status.Conditions, drinksv1.ConditionReady)
	if c == nil || c.Status != metav1.ConditionTrue || c.ObservedGeneration != d.Generation ||
		d.Status.ObservedGeneration != d.Generation || d.Status.AuthoredVersion != want.version {
		return fmt.Sprintf("Drink not Ready at generation %d in %s: status %+v", d.Generation, want.version, d.Status)
	}
	cm := &corev1.ConfigMap{}
	if err := k8s.Get(testCtx, key, cm); err != nil {
		return err.Error()
	}
	if ref := metav1.GetControllerOf(cm); ref == nil || ref.UID != want.uid {
		return fmt.Sprintf("ConfigMap controlled by %+v, want Drink %s", ref, want.uid)
	}
	if !maps.Equal(cm.Data, want.data) {
		return fmt.Sprintf("ConfigMap data %v, want %v", cm.Data, want.data)
	}
	return ""
}

// namespaceOracle checks the namespace once everything settled: every
// ConfigMap is controlled by the live Drink of its name, no Drink is
// missing its ConfigMap, and no ConfigMap is left with a dead controller.
// It returns the problems and how many ConfigMaps a dead Drink controls.
func namespaceOracle(t *testing.T, ns string, n int) (whys []string, deadOwned int) {
	t.Helper()
	drinks := &drinksv1.DrinkList{}
	if err := k8s.List(testCtx, drinks, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	live := map[string]types.UID{}
	for _, d := range drinks.Items {
		live[d.Name] = d.UID
	}
	cms := &corev1.ConfigMapList{}
	if err := k8s.List(testCtx, cms, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, cm := range cms.Items {
		if cm.Name == "kube-root-ca.crt" {
			continue
		}
		ref := metav1.GetControllerOf(&cm)
		switch {
		case ref == nil:
			whys = append(whys, fmt.Sprintf("ConfigMap %s has no controller (labels %v)", cm.Name, cm.Labels))
		case live[cm.Name] == "" || ref.UID != live[cm.Name]:
			whys = append(whys, fmt.Sprintf("ConfigMap %s controlled by dead Drink %s after the garbage collector ran", cm.Name, ref.UID))
			deadOwned++
		}
		seen[cm.Name] = true
	}
	for name := range live {
		if !seen[name] {
			whys = append(whys, fmt.Sprintf("Drink %s has no ConfigMap", name))
		}
	}
	if len(live) > n {
		whys = append(whys, fmt.Sprintf("%d Drinks for %d iterations", len(live), n))
	}
	return whys, deadOwned
}

// fakeGC plays the garbage collector that envtest lacks: it deletes a
// ConfigMap whose controller is a Drink UID that is no longer live, a
// delay after it first sees it so. It records ConfigMaps the real one
// would not delete: labelled as the operator's with no controller, or a
// dead controller without blockOwnerDeletion.
type fakeGC struct {
	ns       string
	delay    func() time.Duration
	finished chan struct{} // closed when run returns

	mu         sync.Mutex
	due        map[types.UID]time.Time
	deleted    int
	violations []string
}

func (g *fakeGC) run(ctx context.Context) {
	defer close(g.finished)
	for ctx.Err() == nil {
		g.sweep(testCtx) // a whole sweep: cancelling one mid-request makes client-go log an error
		select {
		case <-ctx.Done():
		case <-time.After(50 * time.Millisecond):
		}
	}
}

func (g *fakeGC) sweep(ctx context.Context) {
	cms := &corev1.ConfigMapList{}
	if err := k8s.List(ctx, cms, client.InNamespace(g.ns)); err != nil {
		return
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	// A ConfigMap deleted by someone else (a scenario deletes them by
	// hand) is no longer due.
	listed := map[types.UID]bool{}
	for _, cm := range cms.Items {
		listed[cm.UID] = true
	}
	for uid := range g.due {
		if !listed[uid] {
			delete(g.due, uid)
		}
	}
	for _, cm := range cms.Items {
		ref := metav1.GetControllerOf(&cm)
		if ref == nil {
			if cm.Labels[names.ManagedByLabel] == names.ManagedByValue {
				g.violate(fmt.Sprintf("ConfigMap %s labelled as the operator's has no controller", cm.Name))
			}
			continue
		}
		d := &drinksv1.Drink{}
		err := k8s.Get(ctx, client.ObjectKey{Namespace: g.ns, Name: ref.Name}, d)
		if err == nil && d.UID == ref.UID || err != nil && !apierrors.IsNotFound(err) {
			delete(g.due, cm.UID)
			continue
		}
		if ref.Kind != "Drink" || ref.APIVersion != drinksv1.GroupVersion.String() || ref.BlockOwnerDeletion == nil || !*ref.BlockOwnerDeletion {
			g.violate(fmt.Sprintf("ConfigMap %s has a dead controller the garbage collector would not block on: %+v", cm.Name, *ref))
		}
		due, ok := g.due[cm.UID]
		if !ok {
			due = time.Now().Add(g.delay())
			g.due[cm.UID] = due
		}
		if time.Now().Before(due) {
			continue
		}
		err = k8s.Delete(ctx, &cm, client.Preconditions{UID: &cm.UID})
		if err == nil {
			g.deleted++
		}
		if err == nil || apierrors.IsNotFound(err) || apierrors.IsConflict(err) {
			delete(g.due, cm.UID)
		}
	}
}

func (g *fakeGC) violate(why string) {
	if !slices.Contains(g.violations, why) {
		g.violations = append(g.violations, why)
	}
}

// drinkObserver watches the Drinks of a namespace: it counts conflicts
// reported in Ready and records a Drink that was ever Ready at its
// generation with another authored version in status than the one its
// spec was written in (the status of another Drink of the same name).
type drinkObserver struct {
	mu         sync.Mutex
	conflicts  int
	reason     map[types.UID]string
	violations []string
}

func watchDrinks(ctx context.Context, t *testing.T, ns string) *drinkObserver {
	t.Helper()
	wc, err := client.NewWithWatch(cfg, client.Options{Scheme: scheme.New()})
	if err != nil {
		t.Fatal(err)
	}
	w, err := wc.Watch(ctx, &drinksv1.DrinkList{}, client.InNamespace(ns))
	if err != nil {
		t.Fatal(err)
	}
	o := &drinkObserver{reason: map[types.UID]string{}}
	go func() {
		defer w.Stop()
		for ev := range w.ResultChan() {
			d, ok := ev.Object.(*drinksv1.Drink)
			if !ok || ev.Type == watch.Deleted {
				continue
			}
			o.observe(d)
		}
	}()
	return o
}

func (o *drinkObserver) observe(d *drinksv1.Drink) {
	o.mu.Lock()
	defer o.mu.Unlock()
	c := meta.FindStatusCondition(d.Status.Conditions, drinksv1.ConditionReady)
	if c == nil {
		return
	}
	if c.Reason == conflictReason && o.reason[d.UID] != conflictReason {
		o.conflicts++
	}
	o.reason[d.UID] = c.Reason
	if c.Status == metav1.ConditionTrue && c.ObservedGeneration == d.Generation &&
		d.Status.AuthoredVersion != render.AuthoredVersion(d) {
		o.violations = append(o.violations, fmt.Sprintf("Drink %s (uid %s) Ready at generation %d with status.authoredVersion %q, written in %q (Ready: %s)",
			d.Name, d.UID, d.Generation, d.Status.AuthoredVersion, render.AuthoredVersion(d), c.Message))
	}
}

// createAs creates the Drink through version and returns what it asks for.
func createAs(t *testing.T, version string, key client.ObjectKey, spec drinksv1.DrinkSpec) *liveDrink {
	t.Helper()
	obj := drinkAs(version, spec)
	obj.SetName(key.Name)
	obj.SetNamespace(key.Namespace)
	if err := k8s.Create(testCtx, obj); err != nil {
		t.Errorf("creating %s through %s: %v", key, version, err)
		return &liveDrink{}
	}
	return &liveDrink{uid: obj.GetUID(), version: version, data: layoutOf(version, spec)}
}

// updateAs rewrites the spec of the Drink uid through version; losing to
// its deletion is fine.
func updateAs(t *testing.T, version string, key client.ObjectKey, uid types.UID, spec drinksv1.DrinkSpec) {
	t.Helper()
	for {
		cur := drinkAs(version, spec)
		if err := k8s.Get(testCtx, key, cur); err != nil || cur.GetUID() != uid {
			return // deleted
		}
		setSpec(cur, spec)
		err := k8s.Update(testCtx, cur)
		switch {
		case err == nil || apierrors.IsNotFound(err):
			return
		case apierrors.IsConflict(err):
			continue
		default:
			t.Errorf("updating %s through %s: %v", key, version, err)
			return
		}
	}
}

// deleteDrink deletes the Drink uid (background propagation, as kubectl).
func deleteDrink(t *testing.T, key client.ObjectKey, uid types.UID) {
	t.Helper()
	d := &drinksv1.Drink{ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: key.Name}}
	if err := k8s.Delete(testCtx, d, client.Preconditions{UID: &uid}); err != nil && !apierrors.IsNotFound(err) {
		t.Errorf("deleting %s: %v", key, err)
	}
}

// setSpec sets the spec of a Drink of any version.
func setSpec(obj client.Object, spec drinksv1.DrinkSpec) {
	switch d := obj.(type) {
	case *drinksv1alpha1.Drink:
		d.Spec = drinkAs("v1alpha1", spec).(*drinksv1alpha1.Drink).Spec
	case *drinksv1beta1.Drink:
		d.Spec = drinkAs("v1beta1", spec).(*drinksv1beta1.Drink).Spec
	case *drinksv1.Drink:
		d.Spec = spec
	}
}

// drinkAs is an empty Drink of version holding spec.
func drinkAs(version string, spec drinksv1.DrinkSpec) client.Object {
	switch version {
	case "v1alpha1":
		return &drinksv1alpha1.Drink{Spec: drinksv1alpha1.DrinkSpec{Name: spec.DisplayName, Drink: spec.Beverage}}
	case "v1beta1":
		return &drinksv1beta1.Drink{Spec: drinksv1beta1.DrinkSpec{Name: spec.DisplayName, Drink: spec.Beverage,
			Size: drinksv1beta1.Size(spec.Size), Sugar: spec.SugarCubes}}
	default:
		return &drinksv1.Drink{Spec: spec}
	}
}

// layoutOf is the ConfigMap data of a Drink created through version with
// spec (docs/DESIGN.md's table; size is always set, extras only through v1).
func layoutOf(version string, spec drinksv1.DrinkSpec) map[string]string {
	switch version {
	case "v1alpha1":
		return map[string]string{"name": spec.DisplayName, "drink": spec.Beverage}
	case "v1beta1":
		return map[string]string{"name": spec.DisplayName, "drink": spec.Beverage, "size": string(spec.Size),
			"sugar": strconv.Itoa(int(spec.SugarCubes))}
	default:
		joined := strings.Join(slices.Sorted(slices.Values(spec.Extras)), ",")
		return map[string]string{"displayName": spec.DisplayName, "beverage": spec.Beverage, "size": string(spec.Size),
			"sugarCubes": strconv.Itoa(int(spec.SugarCubes)), "extras": joined}
	}
}

func randomSpec(r *rand.Rand) drinksv1.DrinkSpec {
	return drinksv1.DrinkSpec{
		DisplayName: fmt.Sprintf("Cup %d", r.IntN(1000)),
		Beverage:    pick(r, []string{"tea", "coffee", "cocoa"}),
		Size:        pick(r, []drinksv1.Size{drinksv1.SizeSmall, drinksv1.SizeMedium, drinksv1.SizeLarge}),
		SugarCubes:  r.Int32N(11),
		Extras:      slices.Compact(slices.Sorted(slices.Values([]string{pick(r, []string{"mint", "lemon"}), pick(r, []string{"milk", "honey"})}))),
	}
}

func pick[T any](r *rand.Rand, xs []T) T { return xs[r.IntN(len(xs))] }

func shuffled(r *rand.Rand, xs []string) []string {
	out := slices.Clone(xs)
	r.Shuffle(len(out), func(i, j int) { out[i], out[j] = out[j], out[i] })
	return out
}

// jitter is a random delay in [0, upTo).
func jitter(r *rand.Rand, upTo time.Duration) time.Duration {
	return time.Duration(r.Int64N(int64(upTo)))
}

func concurrently(fs ...func()) {
	var wg sync.WaitGroup
	for _, f := range fs {
		wg.Go(f)
	}
	wg.Wait()
}

func listEvents(t *testing.T, ns string) []eventsv1.Event {
	t.Helper()
	list := &eventsv1.EventList{}
	if err := k8s.List(testCtx, list, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	return list.Items
}

// seriesCount is how many more times an event was seen after the first.
func seriesCount(e eventsv1.Event) int32 {
	if e.Series == nil {
		return 0
	}
	return max(e.Series.Count-1, 0)
}
