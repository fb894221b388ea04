package writecount

import (
	"context"
	"net/http"
	"sync/atomic"
)

type key struct{}

// Start returns a context whose writes are counted and a function that
// returns how many were sent so far.
func Start(ctx context.Context) (context.Context, func() int) {
	n := &atomic.Int64{}
	return context.WithValue(ctx, key{}, n), func() int { return int(n.Load()) }
}

// Transport wraps rt so that each write whose request context came from
// Start is counted there. client-go passes a call's context on to its
// HTTP request, which is what carries the count from the caller here.
func Transport(rt http.RoundTripper) http.RoundTripper {
	return roundTripper{next: rt}
}

type roundTripper struct{ next http.RoundTripper }

func (t roundTripper) RoundTrip(req *http.Request) (*http.Response, error) {
	if isWrite(req.Method) {
		if n, ok := req.Context().Value(key{}).(*atomic.Int64); ok {
			n.Add(1)
		}
	}
	return t.next.RoundTrip(req)
}

// isWrite: the methods by which the Kubernetes API changes state. A GET is
// a get, list or watch.
func isWrite(method string) bool {
	switch method {
	case http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete:
		return true
	}
	return false
}
