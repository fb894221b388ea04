package webhook_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	drinksv1alpha1 "github.com/example/myoperator/apis/drinks/v1alpha1"
)

// Bounds the package's manager runs with (main_test.go): a replica with a
// 512 Mi limit, and read and write timeouts short enough for a test.
const (
	testMemoryLimit  = 512 << 20
	testReadTimeout  = 5 * time.Second
	testWriteTimeout = 10 * time.Second
)

// paced yields n bytes of body (head, then copies of item, then tail) at
// most chunk bytes every every, as a client that trickles its request.
type paced struct {
	parts      []io.Reader
	chunk      int
	every      time.Duration
	next       time.Time
	cancelling <-chan struct{}
}

func (p *paced) Read(b []byte) (int, error) {
	if p.every > 0 {
		if wait := time.Until(p.next); wait > 0 {
			select {
			case <-time.After(wait):
			case <-p.cancelling:
				return 0, io.ErrUnexpectedEOF
			}
		}
		p.next = time.Now().Add(p.every)
	}
	if len(b) > p.chunk {
		b = b[:p.chunk]
	}
	for len(p.parts) > 0 {
		n, err := p.parts[0].Read(b)
		if err == io.EOF {
			p.parts = p.parts[1:]
			if n == 0 {
				continue
			}
		}
		return n, nil
	}
	return 0, io.EOF
}

// repeated yields item n times.
type repeated struct {
	item []byte
	n    int
	off  int
}

func (r *repeated) Read(b []byte) (int, error) {
	if r.n == 0 {
		return 0, io.EOF
	}
	c := copy(b, r.item[r.off:])
	r.off += c
	if r.off == len(r.item) {
		r.off, r.n = 0, r.n-1
	}
	return c, nil
}

// TestSlowRequestsDoNotStarveConversions: 20 requests of 300 MiB each sent
// at once to one replica's conversion webhook, as any pod of the cluster
// could send them: ten send their objects before the review's uid and
// desiredAPIVersion as fast as they can (a server that kept such objects
// would hold 3 GiB), ten send the review's head and then one object a few
// KiB at a time (a server without a read deadline would serve each for
// minutes). Meanwhile Drinks are written through v1alpha1, which the API
// server converts through the same webhook. Every first kind is refused
// once it passed one object's worth of bytes, every second kind is cut at
// the read timeout, the process's peak resident memory grows by less than
// the bytes the webhooks may hold (half of a 512 Mi limit), and every
// Drink write succeeds within the webhook's 10 s timeout.
func TestSlowRequestsDoNotStarveConversions(t *testing.T) {
	const (
		attackers = 20
		size      = 300 << 20
	)
	self, before := resetPeak(t)
	ns := namespace(t)
	hc, base := webhookServer()
	hc.Timeout = time.Minute
	stop := make(chan struct{})
	object := []byte(`{"apiVersion":"example.com/v1","kind":"Drink","metadata":{"name":"x"},"spec":{"displayName":"` + strings.Repeat("x", 64<<10) + `"}},`)
	type outcome struct {
		what   string
		answer string
		after  time.Duration
	}
	outcomes := make([]outcome, attackers)
	var wg sync.WaitGroup
	for i := range attackers {
		wg.Go(func() {
			var body *paced
			what := "objects before the uid"
			if i%2 == 0 {
				body = &paced{chunk: 1 << 20, parts: []io.Reader{
					strings.NewReader(`{"kind":"ConversionReview","apiVersion":"apiextensions.k8s.io/v1","request":{"objects":[`),
					&repeated{item: object, n: size / len(object)},
					strings.NewReader(`{}],"uid":"x","desiredAPIVersion":"example.com/v1alpha1"}}`)}}
			} else {
				what = "one object trickled"
				body = &paced{chunk: 16 << 10, every: 100 * time.Millisecond, cancelling: stop, parts: []io.Reader{
					strings.NewReader(`{"kind":"ConversionReview","apiVersion":"apiextensions.k8s.io/v1","request":{"uid":"x","desiredAPIVersion":"example.com/v1alpha1","objects":[{"apiVersion":"example.com/v1","kind":"Drink","metadata":{"name":"`),
					&repeated{item: []byte("x"), n: size}}}
			}
			began := time.Now()
			req, err := http.NewRequest(http.MethodPost, base+"/convert", body)
			if err != nil {
				outcomes[i] = outcome{what, err.Error(), 0}
				return
			}
			req.ContentLength = -1 // chunked
			req.Header.Set("Content-Type", "application/json")
			resp, err := hc.Do(req)
			if err != nil {
				outcomes[i] = outcome{what, "cut: " + err.Error(), time.Since(began)}
				return
			}
			defer func() { _ = resp.Body.Close() }()
			got, _ := io.ReadAll(io.LimitReader(resp.Body, 300))
			outcomes[i] = outcome{what, fmt.Sprintf("%d %s", resp.StatusCode, strings.TrimSpace(string(got))), time.Since(began)}
		})
	}
	// Drinks written through v1alpha1 while the requests go on.
	var latencies []time.Duration
	var failed []string
	deadline := time.Now().Add(testReadTimeout + 3*time.Second)
	for n := 0; time.Now().Before(deadline); n++ {
		began := time.Now()
		err := k8s.Create(context.Background(), &drinksv1alpha1.Drink{ObjectMeta: meta(ns, fmt.Sprintf("during-%d", n)),
			Spec: drinksv1alpha1.DrinkSpec{Name: "x", Drink: "tea"}})
		latencies = append(latencies, time.Since(began))
		if err != nil {
			failed = append(failed, err.Error())
		}
		time.Sleep(100 * time.Millisecond)
	}
	close(stop)
	wg.Wait()
	after, err := self.NewStatus()
	if err != nil {
		t.Fatal(err)
	}
	growth := int64(after.VmHWM) - int64(before.VmRSS)
	slices.Sort(latencies)
	t.Logf("resident memory before %.1f MiB, peak %.1f MiB (+%.1f MiB); %d Drink writes, latency median %s, max %s",
		mib(before.VmRSS), mib(after.VmHWM), float64(growth)/(1<<20), len(latencies),
		latencies[len(latencies)/2].Round(time.Millisecond), latencies[len(latencies)-1].Round(time.Millisecond))
	for i, o := range outcomes {
		t.Logf("request %d (%s): after %s: %.120s", i, o.what, o.after.Round(time.Millisecond), o.answer)
		switch {
		case o.what == "objects before the uid" && !strings.HasPrefix(o.answer, "400 ") && !strings.HasPrefix(o.answer, "cut: "):
			t.Errorf("request %d (%s): %.200s, want 400 naming the objects before request.uid", i, o.what, o.answer)
		case o.what == "one object trickled" && o.after > testReadTimeout+2*time.Second:
			t.Errorf("request %d (%s): answered after %s, want cut at the read timeout %s", i, o.what, o.after.Round(time.Millisecond), testReadTimeout)
		}
	}
	for _, f := range failed {
		t.Errorf("a Drink write during the requests failed: %s", f)
	}
	if max := latencies[len(latencies)-1]; max > 10*time.Second {
		t.Errorf("the slowest Drink write took %s, past the webhook's 10 s timeout", max)
	}
	if limit := int64(testMemoryLimit / 2); growth > limit {
		t.Errorf("peak resident memory grew by %.1f MiB, want less than the %d MiB the webhooks may hold", float64(growth)/(1<<20), limit>>20)
	}
}
