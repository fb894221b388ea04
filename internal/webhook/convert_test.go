package webhook

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	crconversion "sigs.k8s.io/controller-runtime/pkg/webhook/conversion"

	"github.com/example/myoperator/apis/drinks"
	"github.com/example/myoperator/apis/drinks/conversion"
	drinksv1 "github.com/example/myoperator/apis/drinks/v1"
	"github.com/example/myoperator/internal/scheme"
)

// newTestConversion is the handler registerConversion serves, with the
// Drink converter the webhook builder registers, and limits.
func newTestConversion(t *testing.T, limits ConversionLimits) (*streamingConversion, http.Handler) {
	t.Helper()
	s := scheme.New()
	conv, err := drinks.NewConverter()(s)
	if err != nil {
		t.Fatal(err)
	}
	registry := crconversion.NewRegistry()
	if err := registry.RegisterConverter(schema.GroupKind{Group: "example.com", Kind: "Drink"}, conv); err != nil {
		t.Fatal(err)
	}
	h := &streamingConversion{scheme: s, decoder: crconversion.NewDecoder(s), registry: registry,
		passThrough: map[schema.GroupKind]PassThroughFunc{{Group: "example.com", Kind: "Drink"}: conversion.PassThrough},
		limits:      limits.WithDefaults()}
	return h, crconversion.NewWebhookHandler(s, registry)
}

func drinkJSON(t *testing.T, name string, mutate func(map[string]any)) string {
	t.Helper()
	d := &drinksv1.Drink{TypeMeta: metav1.TypeMeta{APIVersion: "example.com/v1", Kind: "Drink"},
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name, UID: "u-" + "name"},
		Spec:       drinksv1.DrinkSpec{DisplayName: "Cup " + name, Beverage: "tea", Size: drinksv1.SizeLarge, SugarCubes: 2, Extras: []string{"lemon"}}}
	raw, err := json.Marshal(d)
	if err != nil {
		t.Fatal(err)
	}
	if mutate == nil {
		return string(raw)
	}
	var u map[string]any
	if err := json.Unmarshal(raw, &u); err != nil {
		t.Fatal(err)
	}
	mutate(u)
	raw, _ = json.Marshal(u)
	return string(raw)
}

// countingReader counts what the handler read of a body.
type countingReader struct {
	r    io.Reader
	read atomic.Int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.read.Add(int64(n))
	return n, err
}

// repeat streams s n times without holding them in memory.
func repeat(s string, n int) io.Reader {
	readers := make([]io.Reader, 0, n)
	for range n {
		readers = append(readers, strings.NewReader(s))
	}
	return io.MultiReader(readers...)
}

type convertedReview struct {
	Kind, APIVersion string
	Response         struct {
		UID              string
		Result           metav1.Status
		ConvertedObjects []json.RawMessage
	}
}

// TestStreamingConversion: what each kind of request gets, with a bound of
// 64 KiB per value and 1 MiB per request.
func TestStreamingConversion(t *testing.T) {
	limits := ConversionLimits{MaxRequestBytes: 1 << 20, MaxObjectBytes: 64 << 10}
	three := drinkJSON(t, "a", nil) + "," + drinkJSON(t, "b", nil) + "," + drinkJSON(t, "c", nil)
	wrongType := drinkJSON(t, "typo", func(u map[string]any) { u["spec"].(map[string]any)["sugarCubes"] = "two" })
	// 200 Drinks: the answer passes the server's 4 KiB write buffer long
	// before the review is read whole, so it goes out while the handler
	// still reads (go1.27's HTTP/1.1 server closed the body then, unless
	// the handler asks for full duplex).
	var many, manyNames []string
	for i := range 200 {
		name := fmt.Sprintf("d%03d", i)
		many, manyNames = append(many, drinkJSON(t, name, nil)), append(manyNames, name)
	}
	tests := []struct {
		name string
		body func() io.Reader
		// length is the Content-Length sent; -1 sends the body chunked.
		length int64
		// wantCode is the HTTP status; 0 wants the connection cut.
		wantCode int
		// wantResult is the review's result status, wantNames the converted
		// objects' names in order.
		wantResult string
		wantNames  []string
		wantInBody string
		// maxRead bounds what the handler may read of the body.
		maxRead int64
	}{
		{
			name: "three Drinks to v1alpha1, each as controller-runtime converts it",
			body: func() io.Reader {
				return strings.NewReader(`{"kind":"ConversionReview","apiVersion":"apiextensions.k8s.io/v1","request":{"uid":"r1","desiredAPIVersion":"example.com/v1alpha1","objects":[` + three + `]}}`)
			},
			wantCode: http.StatusOK, wantResult: metav1.StatusSuccess, wantNames: []string{"a", "b", "c"},
		},
		{
			name: "200 Drinks: answered while still read",
			body: func() io.Reader {
				return strings.NewReader(`{"kind":"ConversionReview","apiVersion":"apiextensions.k8s.io/v1","request":{"uid":"r1","desiredAPIVersion":"example.com/v1alpha1","objects":[` + strings.Join(many, ",") + `]}}`)
			},
			wantCode: http.StatusOK, wantResult: metav1.StatusSuccess, wantNames: manyNames,
		},
		{
			name: "objects before the uid and desiredAPIVersion",
			body: func() io.Reader {
				return strings.NewReader(`{"request":{"objects":[` + three + `],"desiredAPIVersion":"example.com/v1beta1","uid":"r1"},"kind":"ConversionReview","apiVersion":"apiextensions.k8s.io/v1"}`)
			},
			length: -1, wantCode: http.StatusOK, wantResult: metav1.StatusSuccess, wantNames: []string{"a", "b", "c"},
		},
		{
			name: "no objects",
			body: func() io.Reader {
				return strings.NewReader(`{"kind":"ConversionReview","apiVersion":"apiextensions.k8s.io/v1","request":{"uid":"r1","desiredAPIVersion":"example.com/v1alpha1","objects":[]}}`)
			},
			wantCode: http.StatusOK, wantResult: metav1.StatusSuccess, wantNames: []string{},
		},
		{
			name: "a value of the wrong type is passed through for the schema to name",
			body: func() io.Reader {
				return strings.NewReader(`{"kind":"ConversionReview","apiVersion":"apiextensions.k8s.io/v1","request":{"uid":"r1","desiredAPIVersion":"example.com/v1beta1","objects":[` + wrongType + `]}}`)
			},
			wantCode: http.StatusOK, wantResult: metav1.StatusSuccess, wantNames: []string{"typo"}, wantInBody: `"sugar":"two"`,
		},
		{
			name: "a version nobody serves fails the review, with its uid",
			body: func() io.Reader {
				return strings.NewReader(`{"kind":"ConversionReview","apiVersion":"apiextensions.k8s.io/v1","request":{"uid":"r1","desiredAPIVersion":"example.com/v9","objects":[` + three + `]}}`)
			},
			wantCode: http.StatusOK, wantResult: metav1.StatusFailure, wantInBody: `"uid":"r1"`,
		},
		{
			name:     "not JSON: 400",
			body:     func() io.Reader { return strings.NewReader(`{"request":`) },
			wantCode: http.StatusBadRequest, wantInBody: "malformed ConversionReview",
		},
		{
			name: "a declared length over the request bound: 413 before the body is read",
			body: func() io.Reader {
				return io.MultiReader(strings.NewReader(`{"request":{"objects":["`), repeat(strings.Repeat("x", 1024), 2048), strings.NewReader(`"]}}`))
			},
			length: 2<<20 + 28, wantCode: http.StatusRequestEntityTooLarge, wantInBody: "--conversion-max-request-bytes", maxRead: 64 << 10,
		},
		{
			name: "a chunked body over the request bound, nothing answered yet: 413 at the bound",
			body: func() io.Reader {
				return io.MultiReader(strings.NewReader(`{`), repeat(`"a":0,`, 1<<18), strings.NewReader(`"a":0}`))
			},
			length: -1, wantCode: http.StatusRequestEntityTooLarge, wantInBody: "--conversion-max-request-bytes", maxRead: 1<<20 + 64<<10,
		},
		{
			name: "one object over the value bound: 413 once that much is read",
			body: func() io.Reader {
				return io.MultiReader(strings.NewReader(`{"request":{"uid":"r1","desiredAPIVersion":"example.com/v1alpha1","objects":[{"metadata":{"name":"`),
					repeat(strings.Repeat("x", 1024), 900), strings.NewReader(`"}}]}}`))
			},
			length: -1, wantCode: http.StatusRequestEntityTooLarge, wantInBody: "--conversion-max-object-bytes", maxRead: 3 * 64 << 10,
		},
		{
			// 5,000 Drinks are 1.1 MB. With 4,000 (892 KB, under the bound)
			// this row passed before the handler asked for full duplex,
			// because the server had closed the body under it.
			name: "over the request bound after the answer began: the connection is cut",
			body: func() io.Reader {
				return io.MultiReader(strings.NewReader(`{"request":{"uid":"r1","desiredAPIVersion":"example.com/v1alpha1","objects":[`+drinkJSON(t, "first", nil)),
					repeat(","+drinkJSON(t, "more", nil), 5000), strings.NewReader(`]}}`))
			},
			length: -1, wantCode: 0, maxRead: 1<<20 + 64<<10,
		},
	}
	h, _ := newTestConversion(t, limits)
	// read counts what the handler read of the last body.
	var read atomic.Pointer[countingReader]
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		counted := &countingReader{r: r.Body}
		read.Store(counted)
		r.Body = io.NopCloser(counted)
		h.ServeHTTP(w, r)
	}))
	defer srv.Close()
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			length := tc.length
			if length == 0 {
				all, _ := io.ReadAll(tc.body())
				length = int64(len(all))
			}
			code, got, err := post(t, srv.Listener.Addr().String(), tc.body(), length)
			if n := read.Load().read.Load(); tc.maxRead > 0 && n > tc.maxRead {
				t.Errorf("the handler read %d bytes of the body, want at most %d", n, tc.maxRead)
			}
			if tc.wantCode == 0 {
				if err == nil {
					t.Fatalf("got a whole answer (HTTP %d, %d bytes), want the connection cut", code, len(got))
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if code != tc.wantCode {
				t.Fatalf("HTTP %d, want %d: %s", code, tc.wantCode, got)
			}
			if !bytes.Contains(got, []byte(tc.wantInBody)) {
				t.Errorf("the answer does not say %q: %s", tc.wantInBody, got)
			}
			if tc.wantResult == "" {
				return
			}
			var rv convertedReview
			if err := json.Unmarshal(got, &rv); err != nil {
				t.Fatalf("the answer is not a ConversionReview: %v: %s", err, got)
			}
			if rv.Response.UID != "r1" || rv.Response.Result.Status != tc.wantResult {
				t.Fatalf("uid %q result %+v, want r1 %s", rv.Response.UID, rv.Response.Result, tc.wantResult)
			}
			if tc.wantNames == nil {
				return
			}
			names := []string{}
			for _, o := range rv.Response.ConvertedObjects {
				var m metav1.PartialObjectMetadata
				if err := json.Unmarshal(o, &m); err != nil {
					t.Fatal(err)
				}
				names = append(names, m.Name)
			}
			if diff := cmp.Diff(tc.wantNames, names); diff != "" {
				t.Errorf("converted objects (-want +got):\n%s", diff)
			}
		})
	}
}

// post sends a POST of body to the conversion path at addr on a
// connection of its own, with a Content-Length of length (-1: chunked),
// and reads the answer while the body is still being written, as the API
// server would: a server that answers a refused body early, and closes,
// must be heard even though the rest of the body cannot be sent.
func post(t *testing.T, addr string, body io.Reader, length int64) (int, []byte, error) {
	t.Helper()
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = conn.Close() }()
	head := "POST " + ConvertPath + " HTTP/1.1\r\nHost: " + addr + "\r\nContent-Type: application/json\r\n"
	if length >= 0 {
		head += fmt.Sprintf("Content-Length: %d\r\n", length)
	} else {
		head += "Transfer-Encoding: chunked\r\n"
	}
	go func() {
		// Write errors are the point of some rows: the server stopped
		// reading. What it answered is read below.
		if _, err := io.WriteString(conn, head+"\r\n"); err != nil {
			return
		}
		if length >= 0 {
			_, _ = io.Copy(conn, body)
			return
		}
		cw := httputil.NewChunkedWriter(conn)
		if _, err := io.Copy(cw, body); err == nil {
			_ = cw.Close()
			_, _ = io.WriteString(conn, "\r\n")
		}
	}()
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		return 0, nil, err
	}
	defer func() { _ = resp.Body.Close() }()
	got, err := io.ReadAll(resp.Body)
	return resp.StatusCode, got, err
}

// TestStreamingConversionAsControllerRuntime: for reviews controller-runtime's
// handler converts, the streaming handler answers the same objects.
func TestStreamingConversionAsControllerRuntime(t *testing.T) {
	h, cr := newTestConversion(t, ConversionLimits{})
	var objects []string
	for i := range 20 {
		objects = append(objects, drinkJSON(t, fmt.Sprintf("d%d", i), nil))
	}
	for _, desired := range []string{"example.com/v1alpha1", "example.com/v1beta1"} {
		review := `{"kind":"ConversionReview","apiVersion":"apiextensions.k8s.io/v1","request":{"uid":"r1","desiredAPIVersion":"` + desired + `","objects":[` + strings.Join(objects, ",") + `]}}`
		answers := make([]convertedReview, 2)
		for i, handler := range []http.Handler{h, cr} {
			rec := httptest.NewRecorder()
			handler.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, ConvertPath, strings.NewReader(review)))
			if rec.Code != http.StatusOK {
				t.Fatalf("HTTP %d: %s", rec.Code, rec.Body)
			}
			if err := json.Unmarshal(rec.Body.Bytes(), &answers[i]); err != nil {
				t.Fatal(err)
			}
		}
		if len(answers[1].Response.ConvertedObjects) != len(objects) {
			t.Fatalf("controller-runtime converted %d objects, want %d", len(answers[1].Response.ConvertedObjects), len(objects))
		}
		toMaps := func(raws []json.RawMessage) []map[string]any {
			var out []map[string]any
			for _, r := range raws {
				var m map[string]any
				if err := json.Unmarshal(r, &m); err != nil {
					t.Fatal(err)
				}
				out = append(out, m)
			}
			return out
		}
		if diff := cmp.Diff(toMaps(answers[1].Response.ConvertedObjects), toMaps(answers[0].Response.ConvertedObjects)); diff != "" {
			t.Errorf("to %s (-controller-runtime +streaming):\n%s", desired, diff)
		}
		if answers[0].Response.UID != answers[1].Response.UID || answers[0].Response.Result.Status != answers[1].Response.Result.Status {
			t.Errorf("to %s: uid/result %q/%q, controller-runtime %q/%q", desired, answers[0].Response.UID, answers[0].Response.Result.Status,
				answers[1].Response.UID, answers[1].Response.Result.Status)
		}
	}
}

func TestConversionLimitsValidate(t *testing.T) {
	tests := []struct {
		limits  ConversionLimits
		wantErr string
	}{
		{ConversionLimits{MaxRequestBytes: DefaultMaxConversionRequestBytes, MaxObjectBytes: DefaultMaxConversionObjectBytes}, ""},
		{ConversionLimits{MaxRequestBytes: 0, MaxObjectBytes: 1}, "--conversion-max-request-bytes: 0: must be positive"},
		{ConversionLimits{MaxRequestBytes: 10, MaxObjectBytes: -1}, "--conversion-max-object-bytes: -1: must be positive"},
		{ConversionLimits{MaxRequestBytes: 10, MaxObjectBytes: 11}, "must not exceed --conversion-max-request-bytes (10)"},
	}
	for _, tc := range tests {
		err := tc.limits.Validate()
		if (err == nil) != (tc.wantErr == "") || (err != nil && !strings.Contains(err.Error(), tc.wantErr)) {
			t.Errorf("%+v: got %v, want %q", tc.limits, err, tc.wantErr)
		}
	}
}
