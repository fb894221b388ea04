package readbytes

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"
)

func TestResource(t *testing.T) {
	for path, want := range map[string]string{
		"/apis/example.com/v1/namespaces/a/drinks":                    "drinks",
		"/apis/example.com/v1/namespaces/a/drinks/latte":              "drinks",
		"/apis/example.com/v1/drinks":                                 "drinks",
		"/api/v1/namespaces/a/configmaps":                             "configmaps",
		"/api/v1/namespaces/a":                                        "namespaces",
		"/apis/operator.example.com/v1alpha1/operatorconfigs/cluster": "operatorconfigs",
		"/apis/example.com/v1":                                        "",
		"/healthz":                                                    "",
		"/api":                                                        "",
	} {
		if got := Resource(path); got != want {
			t.Errorf("Resource(%q) = %q, want %q", path, got, want)
		}
	}
}

// TestTransport: a GET answer's bytes are counted under its resource as
// they are read; a write's answer is not.
func TestTransport(t *testing.T) {
	body := strings.Repeat("x", 1000)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, body) }))
	defer srv.Close()
	hc := &http.Client{Transport: Transport(http.DefaultTransport)}
	before := testutil.ToFloat64(received.WithLabelValues("widgets"))
	for _, method := range []string{http.MethodGet, http.MethodGet, http.MethodPost} {
		req, err := http.NewRequest(method, srv.URL+"/apis/example.com/v1/namespaces/a/widgets", strings.NewReader(""))
		if err != nil {
			t.Fatal(err)
		}
		resp, err := hc.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := io.Copy(io.Discard, resp.Body); err != nil {
			t.Fatal(err)
		}
		_ = resp.Body.Close()
	}
	if got := testutil.ToFloat64(received.WithLabelValues("widgets")) - before; got != 2000 {
		t.Errorf("counted %v bytes, want 2000 (two GETs of 1000, the POST not)", got)
	}
}
