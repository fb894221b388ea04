package webhookdrain

import (
	"context"
	"net"
	"net/http"
	"testing"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/healthz"
	"sigs.k8s.io/controller-runtime/pkg/webhook"
)

// plainServer is a webhook.Server over plain HTTP on loopback, so that the
// test sees what the wrapper does to connections without certificates.
type plainServer struct {
	mux     *http.ServeMux
	ln      net.Listener
	stopped chan time.Time
}

var _ webhook.Server = (*plainServer)(nil)

func (p *plainServer) NeedLeaderElection() bool             { return false }
func (p *plainServer) Register(path string, h http.Handler) { p.mux.Handle(path, h) }
func (p *plainServer) StartedChecker() healthz.Checker      { return healthz.Ping }
func (p *plainServer) WebhookMux() *http.ServeMux           { return p.mux }
func (p *plainServer) Start(ctx context.Context) error {
	srv := &http.Server{Handler: p.mux, ReadHeaderTimeout: time.Second}
	go func() {
		<-ctx.Done()
		p.stopped <- time.Now()
		_ = srv.Close()
	}()
	_ = srv.Serve(p.ln)
	return nil
}

func TestDrain(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	inner := &plainServer{mux: http.NewServeMux(), ln: ln, stopped: make(chan time.Time, 1)}
	const period = 700 * time.Millisecond
	s := New(inner, period)
	s.Register("/validate", http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusOK) }))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- s.Start(ctx) }()

	url := "http://" + ln.Addr().String() + "/validate"
	// get returns the status and whether the response closes its
	// connection.
	get := func() (int, bool) {
		t.Helper()
		resp, err := http.Get(url)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		return resp.StatusCode, resp.Close
	}
	for _, c := range []struct {
		name      string
		drain     bool
		wantClose bool
	}{
		{"serving: connections stay open", false, false},
		{"draining: each response closes its connection", true, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			if c.drain {
				cancel() // what the manager does on shutdown
			}
			if code, closes := get(); closes != c.wantClose || code != http.StatusOK {
				t.Errorf("status %d, Connection: close %t; want 200, %t", code, closes, c.wantClose)
			}
		})
	}
	cancelled := time.Now()
	select {
	case stopped := <-inner.stopped:
		if d := stopped.Sub(cancelled); d < period-100*time.Millisecond {
			t.Errorf("the wrapped server stopped %s after the manager's context ended, want about %s", d, period)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the wrapped server did not stop after the drain")
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

func TestDrainOnStopBeginsTheDrain(t *testing.T) {
	s := New(&plainServer{mux: http.NewServeMux()}, time.Second)
	r := s.DrainOnStop()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := r.Start(ctx); err != nil || !s.Draining() {
		t.Fatalf("after the runnable stopped: err %v, draining %t", err, s.Draining())
	}
}
