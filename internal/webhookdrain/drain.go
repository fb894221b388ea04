package webhookdrain

import (
	"context"
	"net/http"
	"sync"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/webhook"
)

// Server wraps a webhook server: every handler registered through it
// closes its connection after the response once draining began, and the
// wrapped server stops only Period after that.
type Server struct {
	webhook.Server
	// Period is how long the server drains before it stops.
	Period time.Duration
	// Wrap, if set, wraps each handler registered through the server
	// (internal/webhookguard's bounds), inside the drain.
	Wrap func(path string, h http.Handler) http.Handler

	once  sync.Once
	began chan struct{} // closed when draining begins
	start time.Time     // when it began, read after began is closed
}

// New wraps s.
func New(s webhook.Server, period time.Duration) *Server {
	return &Server{Server: s, Period: period, began: make(chan struct{})}
}

// Register registers hook on the wrapped server, behind the drain.
func (s *Server) Register(path string, hook http.Handler) {
	if s.Wrap != nil {
		hook = s.Wrap(path, hook)
	}
	s.Server.Register(path, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if s.Draining() {
			// net/http closes the connection after this response.
			w.Header().Set("Connection", "close")
		}
		hook.ServeHTTP(w, r)
	}))
}

// BeginDrain starts the drain; calling it again changes nothing.
func (s *Server) BeginDrain() {
	s.once.Do(func() {
		s.start = time.Now()
		close(s.began)
	})
}

// Draining says whether the drain began.
func (s *Server) Draining() bool {
	select {
	case <-s.began:
		return true
	default:
		return false
	}
}

// Start runs the wrapped server until Period after ctx ends (or after the
// drain began, if earlier).
func (s *Server) Start(ctx context.Context) error {
	inner, cancel := context.WithCancel(context.WithoutCancel(ctx))
	defer cancel()
	go func() {
		select {
		case <-ctx.Done():
		case <-inner.Done(): // the wrapped server ended on its own
			return
		}
		s.BeginDrain()
		select {
		case <-time.After(time.Until(s.start.Add(s.Period))):
		case <-inner.Done():
		}
		cancel()
	}()
	return s.Server.Start(inner)
}

// DrainOnStop is a runnable for the manager that begins the drain as soon
// as the manager stops: the manager stops such runnables (no leader
// election) first and the webhook server among the last, so the drain
// overlaps the rest of the shutdown instead of adding to it.
func (s *Server) DrainOnStop() manager.Runnable { return drainOnStop{s} }

type drainOnStop struct{ s *Server }

func (d drainOnStop) Start(ctx context.Context) error {
	<-ctx.Done()
	d.s.BeginDrain()
	return nil
}

func (drainOnStop) NeedLeaderElection() bool { return false }
