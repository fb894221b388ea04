package clusterfaults

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"maps"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	drinksv1 "github.com/example/myoperator/apis/drinks/v1"
	drinksv1alpha1 "github.com/example/myoperator/apis/drinks/v1alpha1"
	drinksv1beta1 "github.com/example/myoperator/apis/drinks/v1beta1"
	"github.com/example/myoperator/test/bench"
	"github.com/example/myoperator/test/reliability"
)

const (
	restartNS     = "restart"
	restartDrinks = 1000
	// writeRate is the writer's steady rate (creates per second): 1,000
	// Drinks take 40 s, and the outage starts 12 s in, so that Drinks are
	// written before, during (retried) and after it.
	writeRate   = 25
	outageAfter = 12 * time.Second
	// outageFor is longer than the manager's renew deadline (10 s, main's
	// default), so that the leader cannot renew its Lease throughout.
	outageFor = 20 * time.Second
	// exitGrace: an exit this long after the API server is back still
	// counts as caused by the outage (the manager notices a lost Lease
	// on its next renewal try).
	exitGrace = 5 * time.Second
)

// TestAPIServerRestart: kube-apiserver and etcd stopped for 20 s (longer
// than the renew deadline) and restarted with the same data while 1,000
// Drinks are written in all three versions, through the webhooks. The
// manager runs as its own process with leader election and main's
// durations; the test restarts it when it exits, as the kubelet would. It
// may exit once because of the outage (client-go gives up leading when it
// cannot renew within the deadline) but must not crash-loop or exit while
// the API server is up; afterwards every accepted Drink reaches
// observedGeneration == generation with Ready=True and exactly its
// ConfigMap, with the layout of the version it was written in, and no
// other ConfigMap exists.
func TestAPIServerRestart(t *testing.T) {
	began := time.Now()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	p := startPlane(ctx, t, bench.PlaneOptions{Restartable: true}, true)
	if err := p.cp.CreateNamespace(ctx, restartNS); err != nil {
		t.Fatal(err)
	}
	k, err := startKubelet(ctx, p.opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { k.stop() })

	// The writer and the outage run against the same clock.
	w := &writer{c: p.cp.Client, accepted: map[string]map[string]string{}}
	writeStart := time.Now()
	written := make(chan struct{})
	go func() { w.run(ctx, restartNS, restartDrinks); close(written) }()

	time.Sleep(time.Until(writeStart.Add(outageAfter)))
	acceptedBefore := w.count()
	downAt := time.Now()
	if err := p.cp.StopServers(); err != nil {
		t.Fatal(err)
	}
	stoppedAt := time.Now()
	// The outage counts from the stop: kube-apiserver's graceful shutdown
	// (in-flight requests, watches) takes seconds, and no renewal succeeds
	// meanwhile.
	time.Sleep(time.Until(downAt.Add(outageFor)))
	if err := p.cp.StartServers(); err != nil {
		t.Fatal(err)
	}
	backAt := time.Now()
	k.setOutage(downAt, backAt.Add(exitGrace))
	t.Logf("outage: the stop began %.1fs after the first write (%d Drinks accepted), both processes gone %.1fs later, restarted %.0fs after the stop began, API server healthy again after %.1fs",
		downAt.Sub(writeStart).Seconds(), acceptedBefore, stoppedAt.Sub(downAt).Seconds(), outageFor.Seconds(), backAt.Sub(downAt).Seconds())

	<-written
	writtenAt := time.Now()
	recovered, err := waitAllReady(ctx, p.cp.Client, w.names(), 3*time.Minute)
	exits := k.stop()
	t.Logf("writer: %d Drinks accepted in %.1fs (%d failed attempts retried); all Ready with their ConfigMaps %.1fs after the API server was back (%.1fs after the last write)",
		w.count(), writtenAt.Sub(writeStart).Seconds(), w.failures.Load(), recovered.Sub(backAt).Seconds(), recovered.Sub(writtenAt).Seconds())
	t.Logf("manager: %d exits, %d restarts", len(exits), len(exits))
	for i, e := range exits {
		t.Logf("exit %d: %.1fs after the stop began, %s, restart: %v; its last log lines:\n%s", i+1, e.at.Sub(downAt).Seconds(), e.how, e.restartErr, e.logTail)
	}
	if err != nil {
		t.Fatal(err)
	}
	if w.count() != restartDrinks {
		t.Errorf("%d Drinks accepted, want %d", w.count(), restartDrinks)
	}
	if len(exits) > 1 {
		t.Errorf("the manager exited %d times: a crash loop", len(exits))
	}
	for _, e := range exits {
		if !e.inOutage {
			t.Errorf("the manager exited %.1fs after the stop began, while the API server was up", e.at.Sub(downAt).Seconds())
		}
	}
	for _, problem := range checkDrinks(ctx, p.cp.Client, restartNS, w.expected()) {
		t.Error(problem)
	}
	took := time.Since(began)
	t.Logf("the test took %.0fs", took.Seconds())
	exitSeconds := []float64{}
	for _, e := range exits {
		exitSeconds = append(exitSeconds, reliability.Seconds(e.at.Sub(downAt)))
	}
	reliability.Save(t, map[string]any{
		"drinks":                     w.count(),
		"acceptedSeconds":            reliability.Seconds(writtenAt.Sub(writeStart)),
		"failedAttempts":             int(w.failures.Load()),
		"acceptedBeforeOutage":       acceptedBefore,
		"outageAfterSeconds":         reliability.Seconds(downAt.Sub(writeStart)),
		"outageSeconds":              reliability.Seconds(outageFor),
		"backAfterSeconds":           reliability.Seconds(backAt.Sub(downAt)),
		"exits":                      len(exits),
		"exitSeconds":                exitSeconds,
		"readyAfterBackSeconds":      reliability.Seconds(recovered.Sub(backAt)),
		"readyAfterLastWriteSeconds": reliability.Seconds(recovered.Sub(writtenAt)),
		"testSeconds":                reliability.Seconds(took),
	}, managerBinaryEnv)
}

// round1 is x rounded to one decimal.
func round1(x float64) float64 { return math.Round(x*10) / 10 }

// writer creates Drinks at a steady rate, cycling through the three
// versions, and retries each create until the API server accepts it: a
// create that failed on the client's side may have been stored (the
// connection dropped after the write), so AlreadyExists counts as
// accepted.
type writer struct {
	c        client.Client
	mu       sync.Mutex
	accepted map[string]map[string]string // name -> expected ConfigMap data
	failures atomic.Int64
}

func (w *writer) run(ctx context.Context, ns string, n int) {
	jobs := make(chan int, n)
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range jobs {
				obj, want := drinkAt(ns, i)
				for ctx.Err() == nil {
					cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
					err := w.c.Create(cctx, obj.DeepCopyObject().(client.Object))
					cancel()
					if err == nil || apierrors.IsAlreadyExists(err) {
						w.mu.Lock()
						w.accepted[obj.GetName()] = want
						w.mu.Unlock()
						break
					}
					w.failures.Add(1)
					time.Sleep(250 * time.Millisecond)
				}
			}
		}()
	}
	tick := time.NewTicker(time.Second / writeRate)
	defer tick.Stop()
	for i := range n {
		jobs <- i
		<-tick.C
	}
	close(jobs)
	wg.Wait()
}

func (w *writer) count() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.accepted)
}

func (w *writer) names() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return slices.Sorted(maps.Keys(w.accepted))
}

func (w *writer) expected() map[string]map[string]string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return maps.Clone(w.accepted)
}

// drinkAt is the i-th Drink, written in v1alpha1, v1beta1 or v1 in turn,
// and the ConfigMap data docs/DESIGN.md's layout table gives for it (written
// out here rather than taken from reconcile/, to check the operator
// against the product's contract).
func drinkAt(ns string, i int) (client.Object, map[string]string) {
	meta := metav1.ObjectMeta{Namespace: ns, Name: fmt.Sprintf("drink-%04d", i)}
	name, sugar := fmt.Sprintf("Drink number %d", i), int32(i%11)
	switch i % 3 {
	case 0:
		return &drinksv1alpha1.Drink{ObjectMeta: meta, Spec: drinksv1alpha1.DrinkSpec{Name: name, Drink: "tea"}},
			map[string]string{"name": name, "drink": "tea"}
	case 1:
		return &drinksv1beta1.Drink{ObjectMeta: meta, Spec: drinksv1beta1.DrinkSpec{Name: name, Drink: "coffee", Size: "Medium", Sugar: sugar}},
			map[string]string{"name": name, "drink": "coffee", "size": "Medium", "sugar": strconv.Itoa(int(sugar))}
	default:
		return &drinksv1.Drink{ObjectMeta: meta, Spec: drinksv1.DrinkSpec{
				DisplayName: name, Beverage: "cocoa", Size: drinksv1.SizeLarge, SugarCubes: sugar, Extras: []string{"milk", "cream"}}},
			map[string]string{"displayName": name, "beverage": "cocoa", "size": "Large", "sugarCubes": strconv.Itoa(int(sugar)), "extras": "cream,milk"}
	}
}

// waitAllReady polls until every named Drink is done (observedGeneration
// == generation, Ready=True) and returns when that was first seen.
func waitAllReady(ctx context.Context, c client.Client, names []string, timeout time.Duration) (time.Time, error) {
	deadline := time.Now().Add(timeout)
	for {
		var list drinksv1.DrinkList
		err := c.List(ctx, &list, client.InNamespace(restartNS))
		done := map[string]bool{}
		for i := range list.Items {
			if d := &list.Items[i]; d.Status.ObservedGeneration == d.Generation && meta.IsStatusConditionTrue(d.Status.Conditions, drinksv1.ConditionReady) {
				done[d.Name] = true
			}
		}
		missing := 0
		for _, n := range names {
			if !done[n] {
				missing++
			}
		}
		if err == nil && missing == 0 {
			return time.Now(), nil
		}
		if time.Now().After(deadline) {
			return time.Time{}, fmt.Errorf("after %s, %d of %d accepted Drinks not Ready (last list error: %w)", timeout, missing, len(names), err)
		}
		time.Sleep(time.Second)
	}
}

// checkDrinks is the "nothing lost" oracle: the namespace holds exactly the
// accepted Drinks, each done, authored in the version it was written in,
// and exactly one ConfigMap per Drink, controlled by it, with the data its
// version's layout gives; no other ConfigMap.
func checkDrinks(ctx context.Context, c client.Client, ns string, want map[string]map[string]string) []string {
	var drinks drinksv1.DrinkList
	var cms corev1.ConfigMapList
	if err := c.List(ctx, &drinks, client.InNamespace(ns)); err != nil {
		return []string{err.Error()}
	}
	if err := c.List(ctx, &cms, client.InNamespace(ns)); err != nil {
		return []string{err.Error()}
	}
	var problems []string
	byName := map[string]*corev1.ConfigMap{}
	for i := range cms.Items {
		byName[cms.Items[i].Name] = &cms.Items[i]
	}
	seen := map[string]bool{}
	for i := range drinks.Items {
		d := &drinks.Items[i]
		seen[d.Name] = true
		data, ok := want[d.Name]
		if !ok {
			problems = append(problems, "Drink "+d.Name+" exists but was never accepted")
			continue
		}
		if d.Status.ObservedGeneration != d.Generation || !meta.IsStatusConditionTrue(d.Status.Conditions, drinksv1.ConditionReady) {
			problems = append(problems, fmt.Sprintf("Drink %s not done: observedGeneration %d, generation %d, conditions %v", d.Name, d.Status.ObservedGeneration, d.Generation, d.Status.Conditions))
		}
		cm := byName[d.Name]
		delete(byName, d.Name)
		switch {
		case cm == nil:
			problems = append(problems, "Drink "+d.Name+" has no ConfigMap")
		case metav1.GetControllerOf(cm) == nil || metav1.GetControllerOf(cm).UID != d.UID:
			problems = append(problems, "ConfigMap "+cm.Name+" is not controlled by its Drink")
		case !maps.Equal(cm.Data, data):
			problems = append(problems, fmt.Sprintf("ConfigMap %s holds %v, want %v (authored in %s)", cm.Name, cm.Data, data, d.Status.AuthoredVersion))
		}
	}
	for name := range want {
		if !seen[name] {
			problems = append(problems, "accepted Drink "+name+" is gone")
		}
	}
	for name := range byName {
		problems = append(problems, "ConfigMap "+name+" has no Drink: an orphan")
	}
	return problems
}

// kubelet runs the manager and restarts it when it exits, as the kubelet
// restarts a container (restartPolicy Always): the first restart at once,
// then after CrashLoopBackOff's delays of 10 s, 20 s, 40 s..., and records
// each exit.
type kubelet struct {
	opts    bench.ManagerOptions
	baseLog string

	mu                sync.Mutex
	m                 *bench.Manager
	exits             []exit
	outFrom, outUntil time.Time
	stopped           chan struct{}
	done              chan struct{}
}

type exit struct {
	at         time.Time
	how        string
	logTail    string
	inOutage   bool
	restartErr error
}

func startKubelet(ctx context.Context, o bench.ManagerOptions) (*kubelet, error) {
	k := &kubelet{opts: o, baseLog: o.LogFile, stopped: make(chan struct{}), done: make(chan struct{})}
	k.opts.LogFile = logName(o.LogFile, 0)
	m, err := bench.StartReady(ctx, k.opts)
	if err != nil {
		return nil, err
	}
	k.m = m
	go k.watch()
	return k, nil
}

func logName(base string, n int) string {
	return strings.TrimSuffix(base, ".log") + fmt.Sprintf("-%d.log", n)
}

// setOutage is when an exit counts as caused by the outage.
func (k *kubelet) setOutage(from, until time.Time) {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.outFrom, k.outUntil = from, until
	for i := range k.exits {
		k.exits[i].inOutage = !k.exits[i].at.Before(from) && !k.exits[i].at.After(until)
	}
}

func (k *kubelet) watch() {
	defer close(k.done)
	for {
		select {
		case <-k.stopped:
			return
		default:
		}
		err := k.m.Wait(200 * time.Millisecond)
		var ee *exec.ExitError
		if err != nil && !errors.As(err, &ee) {
			continue // still running
		}
		e := exit{at: time.Now(), how: "exit code 0"}
		if ee != nil {
			e.how = ee.String()
		}
		e.logTail = tail(k.opts.LogFile, 12)
		k.m.Stop() // closes its log
		k.mu.Lock()
		e.inOutage = k.outFrom.IsZero() || (!e.at.Before(k.outFrom) && !e.at.After(k.outUntil))
		n := len(k.exits)
		k.mu.Unlock()
		if n > 0 {
			select {
			case <-time.After(crashLoopBackOff(n)):
			case <-k.stopped:
				k.mu.Lock()
				k.exits = append(k.exits, e)
				k.mu.Unlock()
				return
			}
		}
		k.mu.Lock()
		k.opts.LogFile = logName(k.baseLog, len(k.exits)+1)
		m, rerr := bench.StartManager(k.opts)
		e.restartErr = rerr
		k.exits = append(k.exits, e)
		if rerr == nil {
			k.m = m
		}
		k.mu.Unlock()
		if rerr != nil {
			return
		}
	}
}

// crashLoopBackOff is the kubelet's delay before the (n+1)-th restart.
func crashLoopBackOff(n int) time.Duration {
	return min(10*time.Second<<(n-1), 5*time.Minute)
}

// stop stops the manager and returns its exits.
func (k *kubelet) stop() []exit {
	select {
	case <-k.stopped:
	default:
		close(k.stopped)
		<-k.done
		k.m.Stop()
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	return slices.Clone(k.exits)
}

// tail is the last n lines of a log, each cut to 400 characters.
func tail(path string, n int) string {
	f, err := os.Open(filepath.Clean(path))
	if err != nil {
		return err.Error()
	}
	defer func() { _ = f.Close() }()
	var lines []string
	s := bufio.NewScanner(f)
	s.Buffer(make([]byte, 1<<20), 1<<20)
	for s.Scan() {
		line := s.Text()
		if len(line) > 400 {
			line = line[:400] + "..."
		}
		lines = append(lines, "    "+line)
		if len(lines) > n {
			lines = lines[1:]
		}
	}
	return strings.Join(lines, "\n")
}
