package clusterfaults

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"math"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/example/myoperator/test/bench"
	"github.com/example/myoperator/test/reliability"
)

// longFaultsEnv turns on the cluster faults that take minutes.
const longFaultsEnv = "MYOPERATOR_LONG_FAULTS"

const (
	// foreignPrefix names every foreign object and namespace, so that the
	// audit log tells a request for one from a request for the operator's.
	foreignPrefix = "foreign-"
	// heapTolerance: the median heap with the foreign objects may exceed
	// the one without by this share at most.
	heapTolerance = 0.10
)

// foreignLoad is how many objects of each kind TestForeignObjectsMemory
// makes, how often it restarts the manager and for how long it counts
// requests at steady state.
type foreignLoad struct {
	drinks, namespaces, configMaps, secrets, services int
	restarts                                          int
	// steadyWindow is how long requests are counted at steady state.
	steadyWindow time.Duration
	// heap: the heap is compared with and without the foreign objects.
	heap bool
}

var (
	// longForeignLoad: the long form (MYOPERATOR_LONG_FAULTS=1), whose
	// figures docs/RELIABILITY.md reports.
	longForeignLoad = foreignLoad{drinks: 1000, namespaces: 50, configMaps: 20000, secrets: 5000, services: 2000,
		restarts: 3, steadyWindow: 60 * time.Second, heap: true}
	// shortForeignLoad: the form make test runs, for the requests only: one
	// request for a foreign object or a collection holding one fails it
	// at any size, while a heap of a few hundred small objects more is
	// within the noise of one run.
	shortForeignLoad = foreignLoad{drinks: 20, namespaces: 3, configMaps: 60, secrets: 30, services: 15,
		restarts: 1, steadyWindow: 10 * time.Second}
)

// foreignAuditPolicy logs the metadata (user agent, verb, URI with its
// label selector, object reference) of every request for the three kinds
// of foreign objects, and nothing else.
const foreignAuditPolicy = `apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: ["RequestReceived"]
rules:
- level: Metadata
  resources:
  - group: ""
    resources: ["configmaps", "secrets", "services"]
- level: None
`

// TestForeignObjectsMemory: a cluster full of objects that are not the
// operator's (20,000 ConfigMaps, 5,000 Secrets, 2,000 Services in 50
// namespaces) costs the manager nothing. With 1,000 Drinks converged, the
// manager's heap in use after a forced GC, median of 3 restarts, is
// measured without and with them: within 10 %. The manager's requests
// come from the API server's audit log (its user agent): none for a
// foreign object or for a collection that holds them, from its start
// through a 60 s steady-state window, and the API server's request
// counters for the three resources over that window are printed. What it
// protects: the manager caches ConfigMaps by the managed-by label, Secrets
// in its own namespace and Services in the operand namespaces only.
// Without MYOPERATOR_LONG_FAULTS=1 (in make test; the long form takes about
// 3.5 minutes) it makes 20 Drinks and 105 foreign objects, restarts the
// manager once and counts requests for 10 s: the requests are checked, not
// the heap, and only the long form records its figures.
func TestForeignObjectsMemory(t *testing.T) {
	load := shortForeignLoad
	if os.Getenv(longFaultsEnv) == "1" {
		load = longForeignLoad
	}
	began := time.Now()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	p := startPlane(ctx, t, bench.PlaneOptions{AuditPolicy: foreignAuditPolicy}, false)
	if err := p.cp.CreateNamespace(ctx, "drinks"); err != nil {
		t.Fatal(err)
	}
	opts := p.opts
	opts.LogFile = filepath.Join(p.dir, "manager-converge.log")
	m, err := bench.StartReady(ctx, opts)
	if err != nil {
		t.Fatal(err)
	}
	phase, err := bench.Converge(ctx, p.cp, m, "drinks", load.drinks, 16, 5*time.Minute)
	m.Stop()
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%d Drinks converged in %.1fs", load.drinks, phase.Seconds)

	without := measureRuns(ctx, t, p, load, "without")
	created := time.Now()
	createForeign(ctx, t, p.cp, load)
	t.Logf("created %d ConfigMaps, %d Secrets, %d Services in %d namespaces in %.1fs",
		load.configMaps, load.secrets, load.services, load.namespaces, time.Since(created).Seconds())
	with := measureRuns(ctx, t, p, load, "with")
	for _, r := range []runs{without, with} {
		if len(r.foreign) > 0 {
			t.Errorf("%s foreign objects: the manager sent %d requests that read them, first: %v", r.label, len(r.foreign), r.foreign[:min(5, len(r.foreign))])
		}
	}
	if !load.heap {
		return
	}

	a, b := bench.SpreadOf(without.heap), bench.SpreadOf(with.heap)
	ratio := b.Median / a.Median
	t.Logf("heap in use after a forced GC, median (min-max) of %d restarts: without foreign objects %.1f MiB (%.1f-%.1f), with %.1f MiB (%.1f-%.1f): ratio %.3f",
		load.restarts, a.Median/mib, a.Min/mib, a.Max/mib, b.Median/mib, b.Min/mib, b.Max/mib, ratio)
	took := time.Since(began)
	t.Logf("the test took %.0fs", took.Seconds())
	if ratio > 1+heapTolerance {
		t.Errorf("the manager's heap grew by %.1f %% with objects that are not its own, want at most %.0f %%", (ratio-1)*100, heapTolerance*100)
	}
	reliability.Save(t, map[string]any{
		"drinks":            load.drinks,
		"convergeSeconds":   round1(phase.Seconds),
		"foreignConfigMaps": load.configMaps,
		"foreignSecrets":    load.secrets,
		"foreignServices":   load.services,
		"foreignNamespaces": load.namespaces,
		"restarts":          load.restarts,
		"withoutHeapMiB":    round1(a.Median / mib),
		"withoutHeapMinMiB": round1(a.Min / mib),
		"withoutHeapMaxMiB": round1(a.Max / mib),
		"withHeapMiB":       round1(b.Median / mib),
		"withHeapMinMiB":    round1(b.Min / mib),
		"withHeapMaxMiB":    round1(b.Max / mib),
		"heapRatio":         math.Round(ratio*1000) / 1000,
		"heapRatioLimit":    1 + heapTolerance,
		"foreignRequests":   len(without.foreign) + len(with.foreign),
		"testSeconds":       reliability.Seconds(took),
	}, longFaultsEnv, managerBinaryEnv)
}

const mib = 1 << 20

// runs is what the restarts of one phase measured.
type runs struct {
	label   string
	heap    []float64
	foreign []string // the manager's requests that could return foreign objects
}

// measureRuns restarts the manager load.restarts times; each time it waits
// until the manager is idle (the initial reconcile of every Drink done),
// forces a GC and reads the heap in use. The last run also counts
// requests over load.steadyWindow. The audit log gives the manager's
// requests of each run.
func measureRuns(ctx context.Context, t *testing.T, p *plane, load foreignLoad, label string) runs {
	t.Helper()
	r := runs{label: label}
	for i := range load.restarts {
		offset := fileSize(bench.AuditLog(p.dir))
		opts := p.opts
		opts.LogFile = filepath.Join(p.dir, fmt.Sprintf("manager-%s-%d.log", label, i))
		m, err := bench.StartReady(ctx, opts)
		if err != nil {
			t.Fatal(err)
		}
		settled, err := settle(ctx, m)
		if err != nil {
			m.Stop()
			t.Fatal(err)
		}
		mem, err := m.MeasureMemory(ctx)
		if err != nil {
			m.Stop()
			t.Fatal(err)
		}
		r.heap = append(r.heap, mem.HeapInuse)
		window := ""
		if i == load.restarts-1 {
			windowStart := fileSize(bench.AuditLog(p.dir))
			api, err := apiRequests(ctx, p.cp, load.steadyWindow)
			if err != nil {
				m.Stop()
				t.Fatal(err)
			}
			steady := auditOf(t, bench.AuditLog(p.dir), windowStart)
			window = fmt.Sprintf("; over %s at steady state the API server served %s for configmaps/secrets/services, of them from the manager: %s",
				load.steadyWindow, api, steady.summary())
		}
		m.Stop()
		all := auditOf(t, bench.AuditLog(p.dir), offset)
		r.foreign = append(r.foreign, all.foreign...)
		t.Logf("%s foreign objects, run %d: idle %.1fs after ready, heap in use %.1f MiB, RSS %.1f MiB; the manager's requests for configmaps/secrets/services from start to stop: %s%s",
			label, i+1, settled.Seconds(), mem.HeapInuse/mib, mem.RSS/mib, all.summary(), window)
	}
	return r
}

// settle waits until the manager's work queues have been empty and its
// reconcile count unchanged for 3 s.
func settle(ctx context.Context, m *bench.Manager) (time.Duration, error) {
	start := time.Now()
	var last float64 = -1
	var stableSince time.Time
	for time.Since(start) < 2*time.Minute {
		mm, err := m.Metrics(ctx)
		if err != nil {
			return 0, err
		}
		depth := mm.Sum("workqueue_depth", func(map[string]string) bool { return true })
		total := mm.Sum("controller_runtime_reconcile_total", func(map[string]string) bool { return true })
		switch {
		case depth != 0 || total != last:
			last, stableSince = total, time.Now()
		case time.Since(stableSince) >= 3*time.Second:
			return time.Since(start), nil
		}
		time.Sleep(500 * time.Millisecond)
	}
	return 0, fmt.Errorf("the manager did not settle within 2 minutes")
}

// apiRequests is the API server's count of requests for configmaps,
// secrets and services, by verb, resource and scope, over d.
func apiRequests(ctx context.Context, cp *bench.ControlPlane, d time.Duration) (string, error) {
	count := func() (map[string]float64, error) {
		m, err := cp.APIMetrics(ctx)
		if err != nil {
			return nil, err
		}
		out := map[string]float64{}
		for _, s := range m {
			if s.Name == "apiserver_request_total" && slices.Contains([]string{"configmaps", "secrets", "services"}, s.Labels["resource"]) {
				out[s.Labels["verb"]+" "+s.Labels["resource"]+" ("+s.Labels["scope"]+")"] += s.Value
			}
		}
		return out, nil
	}
	before, err := count()
	if err != nil {
		return "", err
	}
	time.Sleep(d)
	after, err := count()
	if err != nil {
		return "", err
	}
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(after)) {
		if n := after[k] - before[k]; n > 0 {
			parts = append(parts, fmt.Sprintf("%s=%.0f", k, n))
		}
	}
	if len(parts) == 0 {
		return "0 requests", nil
	}
	return strings.Join(parts, " "), nil
}

// createForeign creates the foreign objects with 32 workers: small
// objects, none with the operator's labels or owner references.
func createForeign(ctx context.Context, t *testing.T, cp *bench.ControlPlane, load foreignLoad) {
	t.Helper()
	for i := range load.namespaces {
		if err := cp.CreateNamespace(ctx, fmt.Sprintf("%s%02d", foreignPrefix, i)); err != nil {
			t.Fatal(err)
		}
	}
	total := load.configMaps + load.secrets + load.services
	var next atomic.Int64
	var (
		mu       sync.Mutex
		firstErr error
	)
	var wg sync.WaitGroup
	for range 32 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1) - 1)
				if i >= total {
					return
				}
				if err := createForeignObject(ctx, cp, load, i); err != nil {
					mu.Lock()
					if firstErr == nil {
						firstErr = err
					}
					mu.Unlock()
					return
				}
			}
		}()
	}
	wg.Wait()
	if firstErr != nil {
		t.Fatal(firstErr)
	}
}

func createForeignObject(ctx context.Context, cp *bench.ControlPlane, load foreignLoad, i int) error {
	meta := metav1.ObjectMeta{Namespace: fmt.Sprintf("%s%02d", foreignPrefix, i%load.namespaces), Name: fmt.Sprintf("%s%05d", foreignPrefix, i)}
	core, create := cp.Clientset.CoreV1(), metav1.CreateOptions{}
	var err error
	switch {
	case i < load.configMaps:
		_, err = core.ConfigMaps(meta.Namespace).Create(ctx, &corev1.ConfigMap{ObjectMeta: meta, Data: map[string]string{"key": meta.Name}}, create)
	case i < load.configMaps+load.secrets:
		_, err = core.Secrets(meta.Namespace).Create(ctx, &corev1.Secret{ObjectMeta: meta, StringData: map[string]string{"key": meta.Name}}, create)
	default:
		// Headless: envtest's service range has 254 addresses.
		_, err = core.Services(meta.Namespace).Create(ctx, &corev1.Service{ObjectMeta: meta, Spec: corev1.ServiceSpec{
			ClusterIP: corev1.ClusterIPNone, Ports: []corev1.ServicePort{{Port: 80}}}}, create)
	}
	return err
}

// auditCount is the manager's requests for the three resources in part of
// the audit log.
type auditCount struct {
	byKind  map[string]int // "verb resource" -> requests
	foreign []string
}

func (a auditCount) summary() string {
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(a.byKind)) {
		parts = append(parts, fmt.Sprintf("%s=%d", k, a.byKind[k]))
	}
	if len(parts) == 0 {
		parts = []string{"none"}
	}
	return fmt.Sprintf("%s (%d could return foreign objects)", strings.Join(parts, " "), len(a.foreign))
}

type auditEvent struct {
	AuditID    string `json:"auditID"`
	Verb       string `json:"verb"`
	RequestURI string `json:"requestURI"`
	UserAgent  string `json:"userAgent"`
	ObjectRef  struct {
		Resource, Namespace, Name string
	} `json:"objectRef"`
}

// auditOf reads the audit log from offset and counts the manager's
// requests (its user agent starts with "myoperator"; the test's own client
// is "myoperator-bench"). A request could return foreign objects when it
// names one, or when it is a collection that holds them: ConfigMaps
// without the managed-by label selector, Secrets outside the operator's
// namespace, Services cluster-wide or in a foreign namespace.
func auditOf(t *testing.T, path string, offset int64) auditCount {
	t.Helper()
	f, err := os.Open(filepath.Clean(path))
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = f.Close() }()
	if _, err := f.Seek(offset, io.SeekStart); err != nil {
		t.Fatal(err)
	}
	a := auditCount{byKind: map[string]int{}}
	seen := map[string]bool{}
	s := bufio.NewScanner(f)
	s.Buffer(make([]byte, 1<<20), 1<<20)
	for s.Scan() {
		var e auditEvent
		if json.Unmarshal(s.Bytes(), &e) != nil || seen[e.AuditID] ||
			!strings.HasPrefix(e.UserAgent, "myoperator") || strings.HasPrefix(e.UserAgent, "myoperator-bench") {
			continue
		}
		seen[e.AuditID] = true
		a.byKind[e.Verb+" "+e.ObjectRef.Resource]++
		if readsForeign(e) {
			a.foreign = append(a.foreign, e.Verb+" "+e.RequestURI)
		}
	}
	if err := s.Err(); err != nil {
		t.Fatal(err)
	}
	return a
}

func readsForeign(e auditEvent) bool {
	ref := e.ObjectRef
	if ref.Name != "" {
		return strings.HasPrefix(ref.Name, foreignPrefix)
	}
	switch ref.Resource {
	case "configmaps":
		u, err := url.Parse(e.RequestURI)
		return err != nil || !strings.Contains(u.Query().Get("labelSelector"), "app.kubernetes.io/managed-by=myoperator")
	case "secrets":
		return ref.Namespace != bench.OperatorNamespace
	default:
		return ref.Namespace == "" || strings.HasPrefix(ref.Namespace, foreignPrefix)
	}
}

func fileSize(path string) int64 {
	fi, err := os.Stat(path)
	if err != nil {
		return 0
	}
	return fi.Size()
}
