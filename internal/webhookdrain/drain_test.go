package webhookdrain

import (
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptrace"
	"testing"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/healthz"
	"sigs.k8s.io/controller-runtime/pkg/webhook"
)

// plainServer is a webhook.Server over plain HTTP on loopback, so that the
// test sees what the wrapper does to connections without certificates;
// with h2 it speaks HTTP/2 without TLS, as the manager's server speaks it
// with TLS (--enable-http2).
type plainServer struct {
	mux     *http.ServeMux
	ln      net.Listener
	h2      bool
	stopped chan time.Time
}

var _ webhook.Server = (*plainServer)(nil)

func (p *plainServer) NeedLeaderElection() bool             { return false }
func (p *plainServer) Register(path string, h http.Handler) { p.mux.Handle(path, h) }
func (p *plainServer) StartedChecker() healthz.Checker      { return healthz.Ping }
func (p *plainServer) WebhookMux() *http.ServeMux           { return p.mux }
func (p *plainServer) Start(ctx context.Context) error {
	srv := &http.Server{Handler: p.mux, ReadHeaderTimeout: time.Second, Protocols: protocols(p.h2)}
	go func() {
		<-ctx.Done()
		p.stopped <- time.Now()
		_ = srv.Close()
	}()
	_ = srv.Serve(p.ln)
	return nil
}

// protocols are HTTP/2 alone (without TLS) or HTTP/1.1 alone.
func protocols(h2 bool) *http.Protocols {
	p := new(http.Protocols)
	if h2 {
		p.SetUnencryptedHTTP2(true)
	} else {
		p.SetHTTP1(true)
	}
	return p
}

// TestDrain: while serving, the client's next request goes on the
// connection it has; once draining, a response makes the client open a
// new connection for its next requests (HTTP/1.1: "Connection: close";
// HTTP/2: Go's server turns that header into a GOAWAY), and the wrapped
// server stops a drain period after the manager's context ended.
func TestDrain(t *testing.T) {
	for _, c := range []struct {
		name string
		h2   bool
	}{{"HTTP/1.1", false}, {"HTTP/2", true}} {
		t.Run(c.name, func(t *testing.T) { testDrain(t, c.h2) })
	}
}

func testDrain(t *testing.T, h2 bool) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	inner := &plainServer{mux: http.NewServeMux(), ln: ln, h2: h2, stopped: make(chan time.Time, 1)}
	const period = 700 * time.Millisecond
	s := New(inner, period)
	s.Register("/validate", http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusOK) }))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- s.Start(ctx) }()

	url := "http://" + ln.Addr().String() + "/validate"
	client := &http.Client{Transport: &http.Transport{Protocols: protocols(h2)}}
	defer client.CloseIdleConnections()
	// get returns the status and whether the request went on a
	// connection an earlier request had used.
	get := func() (int, bool) {
		t.Helper()
		var reused bool
		trace := &httptrace.ClientTrace{GotConn: func(i httptrace.GotConnInfo) { reused = i.Reused }}
		req, err := http.NewRequestWithContext(httptrace.WithClientTrace(context.Background(), trace), http.MethodGet, url, nil)
		if err != nil {
			t.Fatal(err)
		}
		resp, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		_, _ = io.Copy(io.Discard, resp.Body)
		// Else the HTTP/2 case would pass over HTTP/1.1.
		if want := map[bool]int{false: 1, true: 2}[h2]; resp.ProtoMajor != want {
			t.Fatalf("answered in %s, want HTTP/%d", resp.Proto, want)
		}
		return resp.StatusCode, reused
	}
	get() // the connection
	if code, reused := get(); !reused || code != http.StatusOK {
		t.Errorf("serving: status %d, connection reused %t; want 200, true", code, reused)
	}
	cancel() // what the manager does on shutdown
	if code, _ := get(); code != http.StatusOK {
		t.Errorf("draining: status %d, want 200", code)
	}
	// The GOAWAY of HTTP/2 reaches the client beside the response, not
	// in it: a request sent before the client read it may still go on
	// the old connection.
	deadline := time.Now().Add(period / 2)
	for {
		code, reused := get()
		if code != http.StatusOK {
			t.Errorf("draining: status %d, want 200", code)
		}
		if !reused {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("draining: the client kept its connection after a draining response")
		}
		time.Sleep(10 * time.Millisecond)
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
