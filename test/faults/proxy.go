package faults

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"

	"github.com/example/myoperator/test/framework/testutil"
)

// decoder reads the protobuf bodies of built-in types.
var decoder = scheme.Codecs.UniversalDeserializer()

// Write is one write the manager sent, as the proxy forwarded it.
type Write struct {
	Index int
	// Verb is the HTTP method; Path the resource, namespace, name and
	// subresource it wrote (the group and version left out).
	Verb, Path string
	// Code is the API server's answer.
	Code int
}

func (w Write) String() string { return fmt.Sprintf("%s %s -> %d", w.Verb, w.Path, w.Code) }

// Perturbation changes what the manager's watches deliver.
type Perturbation struct {
	// Delay holds every watch event this long before passing it on (the
	// events keep their order).
	Delay time.Duration
	// Coalesce collects events for this long after the first of a burst
	// and then delivers only the last event of each object, as a watch
	// that fell behind and an informer that missed the intermediate states
	// would see them.
	Coalesce time.Duration
}

// Proxy forwards the manager's requests to the API server. It counts and
// records the manager's writes, can SIGKILL the manager (through a
// callback) right after a given write landed, perturbs watch streams, and
// can answer a restarted manager's first list of each kind from a
// snapshot recorded earlier.
type Proxy struct {
	// URL is where the manager's kubeconfig points (plain HTTP on loopback).
	URL string

	upstream *url.URL
	rt       http.RoundTripper
	srv      *http.Server
	logf     func(string, ...any)

	mu sync.Mutex
	// resets counts Reset's calls: a write still in flight from before
	// the last one (a killed manager's) belongs to no trial now.
	resets int
	writes []Write
	// killMatch chooses the write after which the manager dies.
	killMatch func(Write) bool
	onKill    func()
	killing   chan struct{}
	perturb   Perturbation
	// recording keeps the first list of each key (path, selectors, Accept)
	// in snapshot; stale holds the recorded lists still to be served once
	// each instead of the API server's answer.
	recording bool
	snapshot  map[string]recorded
	stale     map[string]recorded
	// StaleServed counts lists answered from the snapshot; staleRVs their
	// resourceVersions.
	staleServed int
	staleRVs    []string
	staleHold   time.Duration
	// stats counts watch events received from the API server and passed
	// on, and the watch ERROR events (410 Gone after a too old
	// resourceVersion).
	stats WatchStats
}

// WatchStats counts what the manager's watches carried.
type WatchStats struct {
	Watches, WatchLists, Lists  int
	Received, Delivered, Errors int
	// MinHeld is the shortest time a delivered event spent in the proxy:
	// at least the Delay of a perturbation that delays, the test's proof
	// that it did.
	MinHeld time.Duration
}

// recorded is a list as the API server answered it: a LIST response body,
// or the initial events of a watch list up to its initial-events-end
// bookmark.
type recorded struct {
	contentType string
	body        []byte
	events      []json.RawMessage
	rv          string
}

// NewProxy starts a proxy on 127.0.0.1 to the API server of cfg, whose
// credentials it uses for every request it forwards.
func NewProxy(cfg *rest.Config, logf func(string, ...any)) (*Proxy, error) {
	rt, err := rest.TransportFor(cfg)
	if err != nil {
		return nil, err
	}
	up, err := url.Parse(cfg.Host)
	if err != nil {
		return nil, err
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	p := &Proxy{URL: "http://" + l.Addr().String(), upstream: up, rt: rt, logf: logf, snapshot: map[string]recorded{}}
	p.srv = &http.Server{Handler: p, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = p.srv.Serve(l) }()
	return p, nil
}

// Close stops the proxy.
func (p *Proxy) Close() { _ = p.srv.Close() }

// Kubeconfig is a kubeconfig that points at the proxy.
func (p *Proxy) Kubeconfig() []byte {
	return fmt.Appendf(nil, `apiVersion: v1
kind: Config
clusters: [{name: proxy, cluster: {server: %q}}]
users: [{name: proxy, user: {}}]
contexts: [{name: proxy, context: {cluster: proxy, user: proxy}}]
current-context: proxy
`, p.URL)
}

// Reset forgets the writes counted so far and every fault.
func (p *Proxy) Reset() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.resets++
	p.writes, p.killMatch, p.onKill = nil, nil, nil
	p.perturb = Perturbation{}
	p.recording, p.stale, p.staleServed, p.staleRVs = false, nil, 0, nil
	p.stats = WatchStats{}
	p.snapshot = map[string]recorded{}
}

// KillAfter arms the crash: once the first write that match accepts has
// landed, the proxy calls kill, which must end the manager, and never
// answers that write. Requests that arrive meanwhile are dropped too.
// match sees the writes in the order they arrive; nil disarms.
func (p *Proxy) KillAfter(match func(Write) bool, kill func()) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.killMatch, p.onKill = match, kill
}

// AwaitKill returns once no kill is in flight: when a write that the armed
// match accepted has been sent on, it waits until the proxy has called the
// kill after it. The write lands before the kill, so a trial whose last
// step converged on that write could otherwise settle and disarm first:
// its crash point then never fired (make test saw it under load, for the
// scenario's last write).
func (p *Proxy) AwaitKill() {
	p.mu.Lock()
	done := p.killing
	p.mu.Unlock()
	if done != nil {
		<-done
	}
}

// Perturb sets how watch streams opened from now on are perturbed.
func (p *Proxy) Perturb(pt Perturbation) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.perturb = pt
}

// Record starts keeping the first list of each kind the manager makes.
func (p *Proxy) Record() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.recording, p.snapshot = true, map[string]recorded{}
}

// ServeStale stops recording and answers the next list of each recorded
// kind from the snapshot, once; a watch list then gets the API server's
// events from the snapshot's resourceVersion on only after hold, so that
// the informers sit on the old state that long (as behind a slow watch).
func (p *Proxy) ServeStale(hold time.Duration) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.recording, p.stale, p.staleHold = false, p.snapshot, hold
	p.snapshot = map[string]recorded{}
	return len(p.stale)
}

// StaleServed returns the resourceVersions of the lists answered from the
// snapshot so far.
func (p *Proxy) StaleServed() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.staleRVs...)
}

// Stats returns the watch counts since Reset.
func (p *Proxy) Stats() WatchStats {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.stats
}

func (p *Proxy) count(f func(*WatchStats)) {
	p.mu.Lock()
	defer p.mu.Unlock()
	f(&p.stats)
}

// Writes returns the writes counted since Reset.
func (p *Proxy) Writes() []Write {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]Write(nil), p.writes...)
}

// ServeHTTP forwards one request.
func (p *Proxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	p.mu.Lock()
	if ch := p.killing; ch != nil {
		// The manager is being killed: whatever it still sends is lost.
		p.mu.Unlock()
		<-ch
		panic(http.ErrAbortHandler)
	}
	p.mu.Unlock()
	var body []byte
	if r.Body != nil {
		var err error
		if body, err = io.ReadAll(r.Body); err != nil {
			panic(http.ErrAbortHandler)
		}
	}
	if testutil.IsWriteMethod(r.Method) {
		p.serveWrite(w, r, body)
		return
	}
	key := listKey(r)
	q := r.URL.Query()
	watching := q.Get("watch") == "true" || q.Get("watch") == "1"
	p.mu.Lock()
	st, stale := p.stale[key]
	if stale {
		delete(p.stale, key)
		p.staleServed++
		p.staleRVs = append(p.staleRVs, st.rv)
	}
	p.mu.Unlock()
	switch {
	case stale && watching && st.events != nil:
		p.logf("proxy: stale start of %s: %d initial events at resourceVersion %s, then the watch from there", key, len(st.events), st.rv)
		p.serveWatch(w, r, st)
		return
	case stale && !watching && st.body != nil:
		p.logf("proxy: stale list of %s at resourceVersion %s", key, st.rv)
		w.Header().Set("Content-Type", st.contentType)
		_, _ = w.Write(st.body)
		return
	case stale:
		// Recorded as the other kind of list: let it through.
		p.logf("proxy: snapshot of %s does not fit the request %s", key, r.URL.RawQuery)
	}
	if watching {
		p.serveWatch(w, r, recorded{})
		return
	}
	if isCollection(r.URL.Path) {
		p.count(func(s *WatchStats) { s.Lists++ })
	}
	resp, err := p.forward(r, r.URL.RawQuery, body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	defer func() { _ = resp.Body.Close() }()
	out, err := io.ReadAll(resp.Body)
	if err != nil {
		panic(http.ErrAbortHandler)
	}
	p.mu.Lock()
	if _, seen := p.snapshot[key]; p.recording && !seen && resp.StatusCode == http.StatusOK && isCollection(r.URL.Path) && isList(out) {
		p.snapshot[key] = recorded{contentType: resp.Header.Get("Content-Type"), body: out, rv: listRV(out)}
	}
	p.mu.Unlock()
	copyHeader(w.Header(), resp.Header)
	w.WriteHeader(resp.StatusCode)
	_, _ = w.Write(out)
}

// serveWrite forwards a write, counts it, and kills the manager after it
// when it is the armed one.
func (p *Proxy) serveWrite(w http.ResponseWriter, r *http.Request, body []byte) {
	p.mu.Lock()
	resets := p.resets
	idx := len(p.writes) + 1
	wr := Write{Index: idx, Verb: r.Method, Path: writePath(r, body)}
	p.writes = append(p.writes, wr)
	kill := p.killMatch != nil && p.killMatch(wr)
	var done chan struct{}
	var onKill func()
	if kill {
		// The kill is decided here, with the write: a trial that disarms
		// while the write is in flight waits for it (AwaitKill) rather
		// than leave the landed write without its crash.
		done = make(chan struct{})
		p.killing, onKill = done, p.onKill
	}
	p.mu.Unlock()
	resp, err := p.forward(r, r.URL.RawQuery, body)
	code := http.StatusBadGateway
	var out []byte
	if err == nil {
		out, _ = io.ReadAll(resp.Body)
		_ = resp.Body.Close()
		code = resp.StatusCode
	}
	p.mu.Lock()
	if p.resets != resets {
		// A trial ended and the next began (Reset) while this write was
		// in flight: it is not the new trial's, and not its to kill for.
		// (Recording it once indexed a list Reset had emptied, and the
		// panic left the mutex locked: the next trial hung for 20 min.)
		if kill && p.killing == done {
			p.killing = nil
		}
		p.mu.Unlock()
		if kill {
			close(done)
		}
		panic(http.ErrAbortHandler)
	}
	p.writes[idx-1].Code = code
	p.mu.Unlock()
	if kill {
		// The write landed; the manager dies before it hears so.
		onKill()
		p.mu.Lock()
		p.killing, p.killMatch = nil, nil
		p.mu.Unlock()
		close(done)
		panic(http.ErrAbortHandler)
	}
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	copyHeader(w.Header(), resp.Header)
	w.WriteHeader(code)
	_, _ = w.Write(out)
}

// forward sends r upstream with query and body. Responses come back as
// JSON, which client-go decodes by their Content-Type, so that the proxy
// can read watch events.
func (p *Proxy) forward(r *http.Request, query string, body []byte) (*http.Response, error) {
	u := *p.upstream
	u.Path, u.RawQuery = r.URL.Path, query
	out, err := http.NewRequestWithContext(r.Context(), r.Method, u.String(), bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	out.Header = r.Header.Clone()
	out.Header.Del("Connection")
	out.Header.Del("Accept-Encoding")
	if a := out.Header.Get("Accept"); strings.Contains(a, "protobuf") || strings.Contains(a, "cbor") {
		out.Header.Set("Accept", "application/json")
	}
	return p.rt.RoundTrip(out)
}

// event is one watch event as the proxy passes it on.
type event struct {
	raw json.RawMessage
	key string
	at  time.Time
}

type watchEvent struct {
	Type   string `json:"type"`
	Object struct {
		Metadata struct {
			Namespace       string            `json:"namespace"`
			Name            string            `json:"name"`
			ResourceVersion string            `json:"resourceVersion"`
			Annotations     map[string]string `json:"annotations"`
		} `json:"metadata"`
	} `json:"object"`
}

// initialEventsEnd marks the bookmark that ends a watch list's initial
// events.
const initialEventsEnd = "k8s.io/initial-events-end"

// serveWatch streams a watch: from the API server, or, for a stale start,
// the recorded initial events and then the API server's watch from their
// resourceVersion. Each event is flushed as it is passed on, after the
// perturbation.
func (p *Proxy) serveWatch(w http.ResponseWriter, r *http.Request, st recorded) {
	query := r.URL.RawQuery
	if st.events != nil {
		q := r.URL.Query()
		q.Del("sendInitialEvents")
		q.Del("resourceVersionMatch")
		q.Set("resourceVersion", st.rv)
		query = q.Encode()
	}
	resp, err := p.forward(r, query, nil)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	defer func() { _ = resp.Body.Close() }()
	copyHeader(w.Header(), resp.Header)
	w.WriteHeader(resp.StatusCode)
	flusher, _ := w.(http.Flusher)
	if resp.StatusCode != http.StatusOK || !strings.HasPrefix(resp.Header.Get("Content-Type"), "application/json") {
		_, _ = io.Copy(flushWriter{w, flusher}, resp.Body)
		return
	}
	p.mu.Lock()
	pt := p.perturb
	p.stats.Watches++
	if r.URL.Query().Get("sendInitialEvents") == "true" {
		p.stats.WatchLists++
	}
	key := listKey(r)
	_, seen := p.snapshot[key]
	record := p.recording && !seen && r.URL.Query().Get("sendInitialEvents") == "true"
	p.mu.Unlock()

	events := make(chan event, 1024)
	go func() {
		defer close(events)
		for _, raw := range st.events {
			events <- parse(raw)
		}
		if st.events != nil {
			p.mu.Lock()
			hold := p.staleHold
			p.mu.Unlock()
			time.Sleep(hold)
		}
		dec := json.NewDecoder(resp.Body)
		var initial []json.RawMessage
		for {
			var raw json.RawMessage
			if err := dec.Decode(&raw); err != nil {
				return
			}
			if record {
				initial = append(initial, raw)
				var we watchEvent
				if json.Unmarshal(raw, &we) == nil && we.Type == "BOOKMARK" && we.Object.Metadata.Annotations[initialEventsEnd] == "true" {
					p.mu.Lock()
					if _, seen := p.snapshot[key]; !seen && p.recording {
						p.snapshot[key] = recorded{events: initial, rv: we.Object.Metadata.ResourceVersion}
					}
					p.mu.Unlock()
					record = false
				}
			}
			e := parse(raw)
			p.count(func(s *WatchStats) {
				s.Received++
				if e.key == "error" {
					s.Errors++
				}
			})
			if e.key == "error" {
				p.logf("proxy: watch %s: %s", r.URL.Path, raw)
			}
			select {
			case events <- e:
			case <-r.Context().Done():
				return
			}
		}
	}()
	send := func(e event) error {
		if _, err := w.Write(append(e.raw, '\n')); err != nil {
			return err
		}
		held := time.Since(e.at)
		p.count(func(s *WatchStats) {
			s.Delivered++
			if s.Delivered == 1 || held < s.MinHeld {
				s.MinHeld = held
			}
		})
		if flusher != nil {
			flusher.Flush()
		}
		return nil
	}
	if pt.Coalesce > 0 {
		coalesce(events, pt.Coalesce, send)
		return
	}
	for e := range events {
		if d := time.Until(e.at.Add(pt.Delay)); d > 0 {
			time.Sleep(d)
		}
		if send(e) != nil {
			return
		}
	}
}

// coalesce passes on, for each burst (the events that arrive within window
// of its first), only the last event of each object, in the order of those
// last events.
func coalesce(events <-chan event, window time.Duration, send func(event) error) {
	for first := range events {
		pending := []event{first}
		timer := time.NewTimer(window)
	burst:
		for {
			select {
			case e, ok := <-events:
				if !ok {
					break burst
				}
				for i, q := range pending {
					if q.key == e.key {
						pending = append(pending[:i], pending[i+1:]...)
						break
					}
				}
				pending = append(pending, e)
			case <-timer.C:
				break burst
			}
		}
		timer.Stop()
		for _, e := range pending {
			if send(e) != nil {
				return
			}
		}
	}
}

// parse keys an event by its object: bookmarks share one key (only the
// latest matters), except the one that ends the initial events.
func parse(raw json.RawMessage) event {
	var we watchEvent
	_ = json.Unmarshal(raw, &we)
	m := we.Object.Metadata
	key := m.Namespace + "/" + m.Name
	switch {
	case we.Type == "BOOKMARK" && m.Annotations[initialEventsEnd] == "true":
		key = "initial-events-end"
	case we.Type == "BOOKMARK":
		key = "bookmark"
	case we.Type == "ERROR":
		key = "error"
	}
	return event{raw: raw, key: key, at: time.Now()}
}

type flushWriter struct {
	w io.Writer
	f http.Flusher
}

func (f flushWriter) Write(b []byte) (int, error) {
	n, err := f.w.Write(b)
	if f.f != nil {
		f.f.Flush()
	}
	return n, err
}

// listKey names what a list or watch lists: its path, selectors and the
// form of its answer (full objects or metadata only).
func listKey(r *http.Request) string {
	q := r.URL.Query()
	return r.URL.Path + "?" + q.Get("labelSelector") + "&" + q.Get("fieldSelector") + " " + r.Header.Get("Accept")
}

// writePath is the resource, namespace, name and subresource a write
// addresses, from the URL, or for a create from the body.
func writePath(r *http.Request, body []byte) string {
	parts := strings.Split(strings.Trim(r.URL.Path, "/"), "/")
	// /api/v1/... or /apis/group/version/...
	switch {
	case len(parts) >= 2 && parts[0] == "api":
		parts = parts[2:]
	case len(parts) >= 3 && parts[0] == "apis":
		group := parts[1]
		parts = parts[3:]
		i := 0
		if len(parts) >= 2 && parts[0] == "namespaces" {
			i = 2
		}
		if i < len(parts) {
			parts[i] += "." + strings.SplitN(group, ".", 2)[0]
		}
	}
	if len(parts) >= 3 && parts[0] == "namespaces" {
		parts = append([]string{parts[2], parts[1]}, parts[3:]...)
	}
	if r.Method == http.MethodPost && len(parts) <= 2 {
		var obj struct {
			Metadata struct{ Name, GenerateName string } `json:"metadata"`
		}
		name, generate := obj.Metadata.Name, obj.Metadata.GenerateName
		if json.Unmarshal(body, &obj) == nil {
			name, generate = obj.Metadata.Name, obj.Metadata.GenerateName
		} else if o, _, err := decoder.Decode(body, nil, nil); err == nil {
			// Built-in types come as protobuf.
			if m, err := meta.Accessor(o); err == nil {
				name, generate = m.GetName(), m.GetGenerateName()
			}
		}
		if name == "" {
			name = generate + "*"
		}
		parts = append(parts, name)
	}
	return strings.Join(parts, "/")
}

// isCollection: the path names a resource, not one object (an even
// number of segments after the group and version, namespaces counted).
func isCollection(path string) bool {
	parts := strings.Split(strings.Trim(path, "/"), "/")
	switch {
	case len(parts) >= 2 && parts[0] == "api":
		parts = parts[2:]
	case len(parts) >= 3 && parts[0] == "apis":
		parts = parts[3:]
	}
	if len(parts) >= 2 && parts[0] == "namespaces" {
		parts = parts[2:]
	}
	// /api and /apis themselves are discovery, not lists.
	return len(parts) == 1 && parts[0] != "api" && parts[0] != "apis"
}

func isList(body []byte) bool {
	var head struct{ Kind string }
	return json.Unmarshal(body, &head) == nil && strings.HasSuffix(head.Kind, "List")
}

func listRV(body []byte) string {
	var head struct {
		Metadata struct{ ResourceVersion string } `json:"metadata"`
	}
	_ = json.Unmarshal(body, &head)
	return head.Metadata.ResourceVersion
}

func copyHeader(dst, src http.Header) {
	for k, vs := range src {
		if k == "Content-Length" || k == "Connection" || k == "Transfer-Encoding" {
			continue
		}
		dst[k] = vs
	}
}
