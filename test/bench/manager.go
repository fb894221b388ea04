package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"time"

	"github.com/example/myoperator/internal/memlimit"
)

// WebhookPort is where config/local tells the API server to call the
// webhooks (https://localhost:9443); a replica on another port serves no
// admission.
const WebhookPort = 9443

// ManagerOptions choose how one manager process runs. Its ports are on
// 127.0.0.1 and differ from the defaults of make run-local (8081) and the
// e2e suite, so that nothing else answers in their place.
type ManagerOptions struct {
	Binary     string
	Kubeconfig string
	// LogFile receives the manager's output.
	LogFile string
	// WebhookPort, MetricsPort, ProbePort, PprofPort: 0 picks no port
	// (pprof then stays off); WebhookPort 0 means WebhookPort.
	WebhookPort, MetricsPort, ProbePort, PprofPort int
	MaxConcurrentReconciles                        int
	LeaderElect                                    bool
	// ExtraArgs are appended to the flags (test/faults: Lease timings).
	ExtraArgs []string
	// MemoryLimit, in bytes, is given as MEMORY_LIMIT, as the Deployment's
	// downward API gives its container's limit: the manager then sets its
	// Go soft memory limit from it (internal/memlimit). 0 gives none.
	MemoryLimit int64
}

// Manager is a running manager binary.
type Manager struct {
	opts ManagerOptions
	cmd  *exec.Cmd
	done chan error
	// exited is closed once the process has exited.
	exited chan struct{}
	log    *os.File
	http   *http.Client
}

// StartManager starts the built manager binary with its webhooks on
// loopback and its certificates managed by itself, as make run-local does,
// plus plain-HTTP metrics and pprof on loopback for the bench to read.
func StartManager(o ManagerOptions) (*Manager, error) {
	if o.WebhookPort == 0 {
		o.WebhookPort = WebhookPort
	}
	certDir, err := os.MkdirTemp(filepath.Dir(o.LogFile), "certs-")
	if err != nil {
		return nil, err
	}
	args := []string{
		"--kubeconfig=" + o.Kubeconfig,
		"--namespace=" + OperatorNamespace,
		"--webhook-host=127.0.0.1", "--webhook-extra-dns-names=localhost",
		"--webhook-port=" + strconv.Itoa(o.WebhookPort),
		"--webhook-cert-dir=" + certDir,
		"--metrics-bind-address=" + loopback(o.MetricsPort), "--metrics-secure=false",
		"--health-probe-bind-address=" + loopback(o.ProbePort),
		"--max-concurrent-reconciles=" + strconv.Itoa(max(1, o.MaxConcurrentReconciles)),
	}
	if o.PprofPort != 0 {
		args = append(args, "--pprof-bind-address="+loopback(o.PprofPort))
	}
	if o.LeaderElect {
		args = append(args, "--leader-elect")
	}
	args = append(args, o.ExtraArgs...)
	logFile, err := os.Create(o.LogFile)
	if err != nil {
		return nil, err
	}
	m := &Manager{opts: o, done: make(chan error, 1), exited: make(chan struct{}), log: logFile, http: &http.Client{Timeout: 30 * time.Second}}
	m.cmd = exec.Command(o.Binary, args...)
	m.cmd.Stdout, m.cmd.Stderr = logFile, logFile
	if o.MemoryLimit > 0 {
		m.cmd.Env = append(os.Environ(), memlimit.EnvVar+"="+strconv.FormatInt(o.MemoryLimit, 10))
	}
	if err := m.cmd.Start(); err != nil {
		_ = logFile.Close()
		return nil, fmt.Errorf("starting %s: %w", o.Binary, err)
	}
	go func() {
		m.done <- m.cmd.Wait()
		close(m.exited)
	}()
	return m, nil
}

// StartReady starts a manager and waits until it is ready, stopping it if
// it does not get there.
func StartReady(ctx context.Context, o ManagerOptions) (*Manager, error) {
	m, err := StartManager(o)
	if err != nil {
		return nil, err
	}
	if err := m.WaitReady(ctx, 2*time.Minute); err != nil {
		m.Stop()
		return nil, err
	}
	return m, nil
}

func loopback(port int) string {
	if port == 0 {
		return "0"
	}
	return "127.0.0.1:" + strconv.Itoa(port)
}

// WaitReady waits until /readyz answers 200: certificates written, injected
// and served, and caches synced. A follower in leader election is ready too.
func (m *Manager) WaitReady(ctx context.Context, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	url := "http://" + loopback(m.opts.ProbePort) + "/readyz"
	for {
		select {
		case err := <-m.done:
			m.done <- err
			return fmt.Errorf("manager exited before it was ready (see %s): %w", m.opts.LogFile, err)
		default:
		}
		if code, _, err := m.get(ctx, url); err == nil && code == http.StatusOK {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("manager not ready after %s; see %s", timeout, m.opts.LogFile)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func (m *Manager) get(ctx context.Context, url string) (int, []byte, error) {
	return getWith(ctx, m.http, url)
}

// getWith GETs url with c: its status code and body.
func getWith(ctx context.Context, c *http.Client, url string) (int, []byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return 0, nil, err
	}
	resp, err := c.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer func() { _ = resp.Body.Close() }()
	body, err := io.ReadAll(resp.Body)
	return resp.StatusCode, body, err
}

// Memory is the manager's heap in use and resident set, in bytes.
type Memory struct {
	HeapInuse, RSS float64
}

// MeasureMemory forces a garbage collection through pprof (heap?gc=1), so
// that the heap holds live objects only, then reads go_memstats_heap_inuse_bytes
// and process_resident_memory_bytes from the metrics endpoint.
func (m *Manager) MeasureMemory(ctx context.Context) (Memory, error) {
	if m.opts.PprofPort == 0 {
		return Memory{}, errors.New("memory needs the pprof endpoint to force a collection")
	}
	if _, _, err := m.get(ctx, "http://"+loopback(m.opts.PprofPort)+"/debug/pprof/heap?gc=1"); err != nil {
		return Memory{}, fmt.Errorf("forcing a GC: %w", err)
	}
	mm, err := m.Metrics(ctx)
	if err != nil {
		return Memory{}, err
	}
	return Memory{HeapInuse: mm.Value("go_memstats_heap_inuse_bytes"), RSS: mm.Value("process_resident_memory_bytes")}, nil
}

// SaveHeapProfile writes the manager's heap profile (for go tool pprof).
func (m *Manager) SaveHeapProfile(ctx context.Context, path string) error {
	code, body, err := m.get(ctx, "http://"+loopback(m.opts.PprofPort)+"/debug/pprof/heap")
	if err != nil {
		return err
	}
	if code != http.StatusOK {
		return fmt.Errorf("heap profile: HTTP %d", code)
	}
	return os.WriteFile(path, body, 0o644)
}

// Metrics scrapes the manager's own Prometheus metrics.
func (m *Manager) Metrics(ctx context.Context) (Metrics, error) {
	code, body, err := m.get(ctx, "http://"+loopback(m.opts.MetricsPort)+"/metrics")
	if err != nil {
		return nil, err
	}
	if code != http.StatusOK {
		return nil, fmt.Errorf("manager metrics: HTTP %d", code)
	}
	return ParseMetrics(string(body))
}

// Signal sends sig to the manager.
func (m *Manager) Signal(sig syscall.Signal) error {
	return m.cmd.Process.Signal(sig)
}

// Wait waits for the manager to exit, up to timeout, and returns how it
// exited.
func (m *Manager) Wait(timeout time.Duration) error {
	select {
	case err := <-m.done:
		m.done <- err
		return err
	case <-time.After(timeout):
		return errStillRunning
	}
}

var errStillRunning = errors.New("manager still running after the signal")

// Pid is the manager's process ID.
func (m *Manager) Pid() int { return m.cmd.Process.Pid }

// Running says whether the manager has not exited yet.
func (m *Manager) Running() bool {
	select {
	case err := <-m.done:
		m.done <- err
		return false
	default:
		return true
	}
}

// Exited is closed when the manager has exited, asked to or not.
func (m *Manager) Exited() <-chan struct{} { return m.exited }

// Stop ends the manager gracefully (SIGTERM), killing it if it hangs.
func (m *Manager) Stop() {
	_ = m.Signal(syscall.SIGTERM)
	if err := m.Wait(40 * time.Second); errors.Is(err, errStillRunning) {
		_ = m.cmd.Process.Kill()
		_ = m.Wait(5 * time.Second)
	}
	_ = m.log.Close()
}
