package webhook_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"sync"
	"testing"

	"github.com/prometheus/procfs"

	drinksv1alpha1 "github.com/example/myoperator/apis/drinks/v1alpha1"
)

// xs is n bytes of 'x', made as they are read.
type xs struct{ n int64 }

func (x *xs) Read(p []byte) (int, error) {
	if x.n <= 0 {
		return 0, io.EOF
	}
	p = p[:min(int64(len(p)), x.n)]
	for i := range p {
		p[i] = 'x'
	}
	x.n -= int64(len(p))
	return len(p), nil
}

// TestConversionBoundsMemory: ten requests at once, each a ConversionReview
// whose one object is 64 MiB long, sent to the manager's conversion
// webhook as any pod of the cluster could send them. Each is refused with
// 413 once the object passes --conversion-max-object-bytes (3 MiB), and the
// process's peak resident memory (the manager runs in this test's process)
// grows by far less than what was sent; the webhook still converts after.
func TestConversionBoundsMemory(t *testing.T) {
	const (
		requests = 10
		object   = 64 << 20
		// maxGrowth bounds the peak's growth: 10 requests, each holding at
		// most about two values of 3 MiB in its decoder's buffer.
		maxGrowth = 96 << 20
	)
	self, before := resetPeak(t)
	hc, base := webhookServer()
	hc.Timeout = 0
	var wg sync.WaitGroup
	answers := make([]string, requests)
	for i := range requests {
		wg.Go(func() {
			body := io.MultiReader(
				strings.NewReader(`{"kind":"ConversionReview","apiVersion":"apiextensions.k8s.io/v1","request":{"uid":"x","desiredAPIVersion":"example.com/v1alpha1","objects":[{"apiVersion":"example.com/v1","kind":"Drink","metadata":{"name":"`),
				&xs{n: object}, strings.NewReader(`"}}]}}`))
			req, err := http.NewRequest(http.MethodPost, base+"/convert", body)
			if err != nil {
				answers[i] = err.Error()
				return
			}
			req.Header.Set("Content-Type", "application/json")
			resp, err := hc.Do(req)
			if err != nil {
				answers[i] = err.Error()
				return
			}
			defer func() { _ = resp.Body.Close() }()
			got, _ := io.ReadAll(io.LimitReader(resp.Body, 200))
			answers[i] = fmt.Sprintf("%d %s", resp.StatusCode, strings.TrimSpace(string(got)))
		})
	}
	wg.Wait()
	after, err := self.NewStatus()
	if err != nil {
		t.Fatal(err)
	}
	growth := int64(after.VmHWM) - int64(before.VmRSS)
	t.Logf("resident memory before %.1f MiB, peak during %d requests of %d MiB each %.1f MiB (+%.1f MiB)",
		mib(before.VmRSS), requests, object>>20, mib(after.VmHWM), float64(growth)/(1<<20))
	for i, a := range answers {
		if !strings.HasPrefix(a, "413 ") || !strings.Contains(a, "--conversion-max-object-bytes") {
			t.Errorf("request %d: %s, want 413 naming --conversion-max-object-bytes", i, a)
		}
	}
	if growth > maxGrowth {
		t.Errorf("peak resident memory grew by %.1f MiB, want at most %d MiB", float64(growth)/(1<<20), maxGrowth>>20)
	}
	// Still converting: a write through v1alpha1 is converted to v1 for
	// admission and storage.
	if err := k8s.Create(context.Background(), &drinksv1alpha1.Drink{ObjectMeta: meta(namespace(t), "after-oversized"),
		Spec: drinksv1alpha1.DrinkSpec{Name: "x", Drink: "tea"}}); err != nil {
		t.Fatalf("the conversion webhook stopped converting after oversized reviews: %v", err)
	}
}

func mib(b uint64) float64 { return float64(b) / (1 << 20) }

// resetPeak resets the process's peak resident set (VmHWM) and returns the
// process and its status right after: the manager runs in this test's
// process, so its peak is what a request made it hold.
func resetPeak(t *testing.T) (procfs.Proc, procfs.ProcStatus) {
	t.Helper()
	self, err := procfs.Self()
	if err != nil {
		t.Fatal(err)
	}
	// Writing 5 to clear_refs resets the peak resident set (VmHWM).
	if err := os.WriteFile("/proc/self/clear_refs", []byte("5"), 0); err != nil {
		t.Fatal(err)
	}
	before, err := self.NewStatus()
	if err != nil {
		t.Fatal(err)
	}
	return self, before
}
