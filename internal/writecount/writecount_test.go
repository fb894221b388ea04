package writecount_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/example/myoperator/internal/writecount"
)

// TestTransport: only writes sent with a counting context count, each
// once, whatever their outcome.
func TestTransport(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPut {
			w.WriteHeader(http.StatusConflict) // a failed write still went out
		}
	}))
	defer srv.Close()
	hc := &http.Client{Transport: writecount.Transport(http.DefaultTransport)}
	counted, writes := writecount.Start(context.Background())
	other, otherWrites := writecount.Start(context.Background())
	for _, c := range []struct {
		ctx    context.Context
		method string
	}{
		{counted, http.MethodGet},
		{counted, http.MethodPost},
		{counted, http.MethodPut},
		{counted, http.MethodPatch},
		{counted, http.MethodDelete},
		{counted, http.MethodHead},
		{context.Background(), http.MethodPost}, // no counter: not counted anywhere
		{other, http.MethodPatch},
	} {
		req, err := http.NewRequestWithContext(c.ctx, c.method, srv.URL, nil)
		if err != nil {
			t.Fatal(err)
		}
		resp, err := hc.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		_ = resp.Body.Close()
	}
	if got := writes(); got != 4 {
		t.Errorf("counted %d writes, want 4 (POST, PUT, PATCH, DELETE)", got)
	}
	if got := otherWrites(); got != 1 {
		t.Errorf("the other context counted %d writes, want 1", got)
	}
}
