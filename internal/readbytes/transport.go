package readbytes

import (
	"io"
	"net/http"
	"strings"

	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
)

var received = prometheus.NewCounterVec(prometheus.CounterOpts{
	Name: "myoperator_api_read_bytes_total",
	Help: "Bytes of the API server's answers to the manager's gets, lists and watches, by resource, as decoded from the wire (after gzip).",
}, []string{"resource"})

func init() { metrics.Registry.MustRegister(received) }

// Transport counts the body bytes of every GET answer rt returns.
func Transport(rt http.RoundTripper) http.RoundTripper { return roundTripper{next: rt} }

type roundTripper struct{ next http.RoundTripper }

func (t roundTripper) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := t.next.RoundTrip(req)
	if err != nil || req.Method != http.MethodGet || resp.Body == nil {
		return resp, err
	}
	resp.Body = &counting{ReadCloser: resp.Body, c: received.WithLabelValues(Resource(req.URL.Path))}
	return resp, nil
}

type counting struct {
	io.ReadCloser
	c prometheus.Counter
}

func (r *counting) Read(p []byte) (int, error) {
	n, err := r.ReadCloser.Read(p)
	if n > 0 {
		r.c.Add(float64(n))
	}
	return n, err
}

// Resource is the resource a request path names: "drinks" for
// /apis/example.com/v1/namespaces/a/drinks and for .../drinks/latte, ""
// for what is no resource path (discovery, /healthz).
func Resource(path string) string {
	seg := strings.Split(strings.Trim(path, "/"), "/")
	switch {
	case len(seg) >= 3 && seg[0] == "api":
		seg = seg[2:]
	case len(seg) >= 4 && seg[0] == "apis":
		seg = seg[3:]
	default:
		return ""
	}
	if len(seg) >= 3 && seg[0] == "namespaces" {
		return seg[2]
	}
	return seg[0]
}
