package webhookguard

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"sync"
	"time"

	"golang.org/x/sync/semaphore"
)

// ErrBusy is what a guarded streaming body's Read returns once the bytes
// held across every endpoint reached Limits.BufferBytes: the handler
// answers 429 (Refuse), as the guard does for a whole body.
var ErrBusy = errors.New("the webhook server holds as many request bytes as it may; try again")

// Limits are the guard's bounds.
type Limits struct {
	// MaxInFlight bounds the requests each endpoint serves at once.
	MaxInFlight int
	// BufferBytes bounds the request bytes held across every endpoint.
	BufferBytes int64
	// ReadTimeout bounds the time from a request's headers to the last byte
	// of its body; WriteTimeout, to the last byte of its answer. The API
	// server gives up on a webhook call after at most 30 s.
	ReadTimeout, WriteTimeout time.Duration
}

// Defaults.
const (
	DefaultMaxInFlight = 64
	// DefaultBufferBytes is BufferBytes when the container's memory limit
	// is not known.
	DefaultBufferBytes  int64 = 128 << 20
	DefaultReadTimeout        = 30 * time.Second
	DefaultWriteTimeout       = 35 * time.Second
	// afterAnswer bounds how long net/http may take to flush the end of an
	// answer after the handler returned: the write deadline of a request
	// stays on its connection until the next request's handler sets its
	// own, since the server sets none itself.
	afterAnswer = 5 * time.Second
)

// BufferFor is BufferBytes for a container memory limit of limitBytes: half
// of it, the other half for the manager's caches and the Go runtime; the
// default when the limit is not known (0).
func BufferFor(limitBytes int64) int64 {
	if limitBytes <= 0 {
		return DefaultBufferBytes
	}
	return limitBytes / 2
}

// Validate says which bound is not usable, naming its flag.
func (l Limits) Validate() error {
	var errs []error
	if l.MaxInFlight <= 0 {
		errs = append(errs, fmt.Errorf("--webhook-max-requests-in-flight: %d: must be positive", l.MaxInFlight))
	}
	if l.BufferBytes < 0 {
		errs = append(errs, fmt.Errorf("--webhook-max-buffered-bytes: %d: must not be negative (0: from the memory limit)", l.BufferBytes))
	}
	if l.ReadTimeout <= 0 {
		errs = append(errs, fmt.Errorf("--webhook-read-timeout: %s: must be positive", l.ReadTimeout))
	}
	if l.WriteTimeout < l.ReadTimeout {
		errs = append(errs, fmt.Errorf("--webhook-write-timeout: %s: must be at least --webhook-read-timeout (%s): it counts from the same moment", l.WriteTimeout, l.ReadTimeout))
	}
	return errors.Join(errs...)
}

func (l Limits) withDefaults() Limits {
	if l.MaxInFlight <= 0 {
		l.MaxInFlight = DefaultMaxInFlight
	}
	if l.BufferBytes <= 0 {
		l.BufferBytes = DefaultBufferBytes
	}
	if l.ReadTimeout <= 0 {
		l.ReadTimeout = DefaultReadTimeout
	}
	if l.WriteTimeout <= 0 {
		l.WriteTimeout = DefaultWriteTimeout
	}
	return l
}

// Guard applies Limits to the handlers it wraps.
type Guard struct {
	limits Limits
	// Streaming names the paths whose handler reads its body as a stream
	// (the conversion webhook), each with the most it holds of it at once;
	// the guard charges what such a handler reads up to that and leaves the
	// reading to it. Every other handler gets its body read whole by the
	// guard first, up to WholeBodyBytes.
	streaming map[string]int64
	// WholeBodyBytes bounds a body the guard reads whole: controller-runtime's
	// admission handler takes at most 7 MiB.
	wholeBodyBytes int64
	budget         *semaphore.Weighted

	mu       sync.Mutex
	inFlight map[string]int
}

// New returns a Guard with limits (zero fields take the defaults).
// streaming names the streaming paths and what each holds at most.
func New(limits Limits, streaming map[string]int64) *Guard {
	l := limits.withDefaults()
	return &Guard{limits: l, streaming: streaming, wholeBodyBytes: 7 << 20,
		budget: semaphore.NewWeighted(l.BufferBytes), inFlight: map[string]int{}}
}

// Limits returns the bounds in force.
func (g *Guard) Limits() Limits { return g.limits }

// Wrap returns h behind the guard's bounds for path.
func (g *Guard) Wrap(path string, h http.Handler) http.Handler {
	for _, reason := range reasons {
		refused.WithLabelValues(path, reason) // at 0 before the first
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !g.enter(path) {
			g.refuse(w, path, reasonInFlight, fmt.Sprintf("the webhook server serves %d requests to %s at once; try again", g.limits.MaxInFlight, path))
			return
		}
		defer g.leave(path)
		rc := http.NewResponseController(w)
		now := time.Now()
		// Errors mean the writer cannot take deadlines (a test's recorder):
		// nothing to bound then.
		_ = rc.SetReadDeadline(now.Add(g.limits.ReadTimeout))
		_ = rc.SetWriteDeadline(now.Add(g.limits.WriteTimeout))
		defer func() { _ = rc.SetWriteDeadline(time.Now().Add(afterAnswer)) }()
		if hold, ok := g.streaming[path]; ok {
			body := &chargedBody{r: r.Body, g: g, cap: hold}
			defer body.release()
			h.ServeHTTP(w, withBody(r, body))
			return
		}
		body, charged, err := g.readWhole(r)
		defer g.budget.Release(charged)
		switch {
		case errors.Is(err, ErrBusy):
			RefuseBusy(w, path)
			return
		case errors.Is(err, errTooLarge):
			g.refuseWith(w, path, reasonTooLarge, http.StatusRequestEntityTooLarge,
				fmt.Sprintf("the request is longer than the %d bytes a webhook takes", g.wholeBodyBytes))
			return
		case err != nil:
			// The body did not arrive (in time): nobody waits for an answer.
			refused.WithLabelValues(path, reasonRead).Inc()
			w.Header().Set("Connection", "close")
			http.Error(w, "reading the request: "+err.Error(), http.StatusRequestTimeout)
			return
		}
		h.ServeHTTP(w, withBody(r, io.NopCloser(bytes.NewReader(body))))
	})
}

var errTooLarge = errors.New("request too large")

// withBody is a shallow copy of r reading body. The server's own request
// keeps its body: net/http looks at it after the handler to see whether
// the body was left unread, and then closes the connection gently (the
// client reads the answer, a 413 say) rather than resetting it.
func withBody(r *http.Request, body io.ReadCloser) *http.Request {
	r2 := r.WithContext(r.Context())
	r2.Body = body
	return r2
}

// readWhole reads r's body, charging the budget as it grows; it returns
// what it charged, which the caller releases once the handler is done.
func (g *Guard) readWhole(r *http.Request) ([]byte, int64, error) {
	if r.ContentLength > g.wholeBodyBytes {
		return nil, 0, errTooLarge
	}
	var (
		buf     bytes.Buffer
		charged int64
		chunk   = make([]byte, 32<<10)
	)
	for {
		n, err := r.Body.Read(chunk)
		if n > 0 {
			if int64(buf.Len()+n) > g.wholeBodyBytes {
				return nil, charged, errTooLarge
			}
			if !g.budget.TryAcquire(int64(n)) {
				return nil, charged, ErrBusy
			}
			charged += int64(n)
			buf.Write(chunk[:n])
		}
		if errors.Is(err, io.EOF) {
			return buf.Bytes(), charged, nil
		}
		if err != nil {
			return nil, charged, err
		}
	}
}

func (g *Guard) enter(path string) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.inFlight[path] >= g.limits.MaxInFlight {
		return false
	}
	g.inFlight[path]++
	return true
}

func (g *Guard) leave(path string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.inFlight[path]--
}

func (g *Guard) refuse(w http.ResponseWriter, path, reason, msg string) {
	g.refuseWith(w, path, reason, http.StatusTooManyRequests, msg)
}

func (g *Guard) refuseWith(w http.ResponseWriter, path, reason string, code int, msg string) {
	refused.WithLabelValues(path, reason).Inc()
	Refuse(w, code, msg)
}

// RefuseBusy answers a request to path whose handler met ErrBusy: 429,
// counted as the guard counts its own.
func RefuseBusy(w http.ResponseWriter, path string) {
	refused.WithLabelValues(path, reasonBytes).Inc()
	Refuse(w, http.StatusTooManyRequests, ErrBusy.Error())
}

// Refuse answers code with msg and closes the connection (the rest of the
// body is not read); a 429 says when to try again.
func Refuse(w http.ResponseWriter, code int, msg string) {
	if code == http.StatusTooManyRequests {
		w.Header().Set("Retry-After", strconv.Itoa(1))
	}
	w.Header().Set("Connection", "close")
	http.Error(w, msg, code)
}

// chargedBody charges the guard's budget for what a streaming handler
// reads, up to cap: past that the handler holds no more of it at once,
// whatever it reads.
type chargedBody struct {
	r       io.ReadCloser
	g       *Guard
	cap     int64
	charged int64
}

func (b *chargedBody) Read(p []byte) (int, error) {
	if b.charged < b.cap {
		want := min(int64(len(p)), b.cap-b.charged)
		if !b.g.budget.TryAcquire(want) {
			return 0, ErrBusy
		}
		n, err := b.r.Read(p[:want])
		// Keep the charge of what was read only.
		b.g.budget.Release(want - int64(n))
		b.charged += int64(n)
		return n, err
	}
	return b.r.Read(p)
}

func (b *chargedBody) Close() error { return b.r.Close() }

func (b *chargedBody) release() {
	b.g.budget.Release(b.charged)
	b.charged = 0
}
