package webhookguard

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

const (
	wholePath  = "/validate"
	streamPath = "/convert"
)

// serve starts a real HTTP server (deadlines are the connection's) with
// both kinds of path behind a guard of limits; handler serves both.
func serve(t *testing.T, limits Limits, streamHold int64, handler http.HandlerFunc) string {
	t.Helper()
	g := New(limits, map[string]int64{streamPath: streamHold})
	mux := http.NewServeMux()
	mux.Handle(wholePath, g.Wrap(wholePath, handler))
	mux.Handle(streamPath, g.Wrap(streamPath, handler))
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv.URL
}

// drain reads the body whole and answers its length.
func drain(w http.ResponseWriter, r *http.Request) {
	n, err := io.Copy(io.Discard, r.Body)
	if err != nil {
		if errors.Is(err, ErrBusy) {
			RefuseBusy(w, r.URL.Path)
			return
		}
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	fmt.Fprint(w, n)
}

func post(t *testing.T, url string, body io.Reader) (int, string, http.Header) {
	t.Helper()
	resp, err := http.Post(url, "application/json", body)
	if err != nil {
		return 0, err.Error(), nil
	}
	defer func() { _ = resp.Body.Close() }()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, strings.TrimSpace(string(b)), resp.Header
}

// TestBounds: what each bound answers, for a whole-body and a streaming
// path.
func TestBounds(t *testing.T) {
	tests := []struct {
		name       string
		limits     Limits
		streamHold int64
		path       string
		body       int
		want       int
		wantBody   string
	}{
		{"a body within every bound", Limits{BufferBytes: 1 << 20}, 1 << 20, wholePath, 512 << 10, 200, "524288"},
		{"a whole body past the bytes the server may hold", Limits{BufferBytes: 1 << 20}, 1 << 20, wholePath, 2 << 20, 429, ErrBusy.Error()},
		{"a whole body past 7 MiB", Limits{BufferBytes: 64 << 20}, 1 << 20, wholePath, 8 << 20, 413, "longer than the 7340032 bytes"},
		{"a stream past the bytes the server may hold", Limits{BufferBytes: 1 << 20}, 4 << 20, streamPath, 2 << 20, 429, ErrBusy.Error()},
		// The streaming handler holds at most streamHold of its body, so
		// only that much is charged, however long the body.
		{"a long stream charged up to what its handler holds", Limits{BufferBytes: 1 << 20}, 512 << 10, streamPath, 16 << 20, 200, "16777216"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			url := serve(t, tc.limits, tc.streamHold, drain)
			code, body, h := post(t, url+tc.path, bytes.NewReader(make([]byte, tc.body)))
			if code != tc.want || !strings.Contains(body, tc.wantBody) {
				t.Errorf("got %d %q, want %d with %q", code, body, tc.want, tc.wantBody)
			}
			if code == 429 && h.Get("Retry-After") != "1" {
				t.Errorf("429 with Retry-After %q, want 1", h.Get("Retry-After"))
			}
		})
	}
}

// TestInFlightBound: with two requests to a path in its handler, a third
// is answered 429 at once; another path is not held up; once one leaves,
// the path takes requests again.
func TestInFlightBound(t *testing.T) {
	release := make(chan struct{})
	entered := make(chan struct{}, 8)
	url := serve(t, Limits{MaxInFlight: 2}, 1<<20, func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Query().Get("hold") != "" {
			entered <- struct{}{}
			<-release
		}
		drain(w, r)
	})
	var wg sync.WaitGroup
	for range 2 {
		wg.Go(func() { post(t, url+wholePath+"?hold=1", strings.NewReader("{}")) })
	}
	<-entered
	<-entered
	if code, body, h := post(t, url+wholePath, strings.NewReader("{}")); code != 429 || h.Get("Retry-After") != "1" {
		t.Errorf("a third request: %d %q, want 429 with Retry-After 1", code, body)
	}
	if code, body, _ := post(t, url+streamPath, strings.NewReader("{}")); code != 200 {
		t.Errorf("another path: %d %q, want 200", code, body)
	}
	close(release)
	wg.Wait()
	if code, body, _ := post(t, url+wholePath, strings.NewReader("{}")); code != 200 {
		t.Errorf("after the two left: %d %q, want 200", code, body)
	}
}

// trickle opens a connection, sends a request's headers and then its
// chunked body a few bytes at a time until the server closes the
// connection or stop passes; it returns what the server answered and when.
func trickle(t *testing.T, url, path string, stop time.Duration) (string, time.Duration) {
	t.Helper()
	conn, err := net.Dial("tcp", strings.TrimPrefix(url, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = conn.Close() }()
	began := time.Now()
	if _, err := fmt.Fprintf(conn, "POST %s HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n", path); err != nil {
		t.Fatal(err)
	}
	answer := make(chan string, 1)
	go func() {
		line, _ := bufio.NewReader(conn).ReadString('\n')
		answer <- strings.TrimSpace(line)
	}()
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for time.Since(began) < stop {
		select {
		case a := <-answer:
			return a, time.Since(began)
		case <-tick.C:
			_, _ = io.WriteString(conn, "2\r\n{}\r\n")
		}
	}
	return "still reading after " + stop.String(), time.Since(began)
}

// TestSlowBodyCut: a body that trickles in is cut at ReadTimeout, on both
// kinds of path: its slot and bytes do not stay taken.
func TestSlowBodyCut(t *testing.T) {
	const readTimeout = 500 * time.Millisecond
	url := serve(t, Limits{ReadTimeout: readTimeout, WriteTimeout: time.Second}, 1<<20, drain)
	for _, path := range []string{wholePath, streamPath} {
		t.Run(path, func(t *testing.T) {
			got, after := trickle(t, url, path, 5*time.Second)
			if !strings.HasPrefix(got, "HTTP/1.1 4") || after > readTimeout+time.Second {
				t.Errorf("a trickled body: %q after %s, want a 4xx answer about %s in", got, after.Round(time.Millisecond), readTimeout)
			}
		})
	}
}

// TestKeepAliveOutlivesDeadlines: the deadlines a request sets stay on its
// connection, which net/http does not reset when it has no timeouts of its
// own; the next request on the connection sets its own, so a connection
// the API server keeps alive serves requests long after the first one's
// deadlines passed.
func TestKeepAliveOutlivesDeadlines(t *testing.T) {
	url := serve(t, Limits{ReadTimeout: 200 * time.Millisecond, WriteTimeout: 300 * time.Millisecond}, 1<<20, drain)
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 1}}
	conns := map[string]bool{}
	for i := range 3 {
		if i > 0 {
			time.Sleep(500 * time.Millisecond)
		}
		req, _ := http.NewRequest(http.MethodPost, url+wholePath, strings.NewReader("{}"))
		var local string
		req = req.WithContext(withConnTrace(req.Context(), &local))
		resp, err := client.Do(req)
		if err != nil {
			t.Fatalf("request %d on a kept-alive connection: %v", i, err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		_ = resp.Body.Close()
		if resp.StatusCode != 200 {
			t.Fatalf("request %d: %d", i, resp.StatusCode)
		}
		conns[local] = true
	}
	if len(conns) != 1 {
		t.Errorf("the three requests used %d connections, want 1 kept alive", len(conns))
	}
}
