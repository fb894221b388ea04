package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"time"
)

func main() {
	if err := run(os.Args[1:]); err != nil {
		log.Fatal(err)
	}
}

// options are the server's command-line settings.
type options struct {
	addr, configDir string
	drill           bool
}

// parseFlags reads the command line (and the drill's environment
// variable, which the flag's default follows). Apart from run, so that a
// test sees the defaults a started server gets.
func parseFlags(args []string) (options, error) {
	var o options
	fs := flag.NewFlagSet("guestbook-server", flag.ContinueOnError)
	fs.StringVar(&o.addr, "addr", ":8080", "address to listen on")
	fs.StringVar(&o.configDir, "config-dir", "/etc/guestbook", "folder of the mounted Guestbook ConfigMap: one file per entry")
	fs.BoolVar(&o.drill, "failover-drill", drillFromEnv(),
		"serve POST /readyz/fail and /readyz/ok, which make this pod unready and ready again (also "+drillEnv+"=enabled); off by default, since anyone who reaches the pod could call them")
	return o, fs.Parse(args)
}

func run(args []string) error {
	o, err := parseFlags(args)
	if err != nil {
		return err
	}
	host, _ := os.Hostname()
	s := &server{host: host, configDir: o.configDir, log: log.Default(), drill: o.drill}
	srv := &http.Server{
		Addr:              o.addr,
		ReadHeaderTimeout: 5 * time.Second,
		Handler:           s.handler(),
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	go func() {
		<-ctx.Done()
		shutdown, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(shutdown)
	}()
	log.Printf("guestbook-server: %s listening on %s, entries from %s, failover drill %s", host, o.addr, o.configDir, map[bool]string{true: "on", false: "off"}[o.drill])
	if err := srv.ListenAndServe(); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	log.Printf("guestbook-server: stopped")
	return nil
}

// server serves the page and the probes. Its readiness starts true and
// changes only through the failover drill.
type server struct {
	host      string
	configDir string
	log       *log.Logger
	// drill serves the failover drill's endpoints.
	drill bool
	// unready is set by POST /readyz/fail and cleared by POST /readyz/ok.
	unready atomic.Bool
}

// drillEnv turns the failover drill on when set to "enabled", for an
// image or a pod that needs it (the e2e suite's image sets it).
const drillEnv = "GUESTBOOK_FAILOVER_DRILL"

func drillFromEnv() bool { return os.Getenv(drillEnv) == "enabled" }

func (s *server) handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /{$}", s.page)
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) { text(w, http.StatusOK, "ok") })
	mux.HandleFunc("GET /readyz", s.readyz)
	// The failover drill, for demos and e2e tests: the only way to see the
	// operator fail over on a real probe, without deleting a pod, is to make
	// the active pod's readiness probe fail. POST /readyz/fail does that
	// (the kubelet then marks the pod not Ready after one failed probe),
	// POST /readyz/ok undoes it. POST only, so that a crawler or a browser
	// following a link cannot trigger it (GET answers 405). Off unless
	// --failover-drill: it needs no credentials, and any pod that reaches
	// the Guestbook's Service could otherwise make every pod unready in
	// turn. Off, both answer 403 and say how to turn it on.
	mux.HandleFunc("POST /readyz/fail", func(w http.ResponseWriter, r *http.Request) { s.setReady(w, r, false) })
	mux.HandleFunc("POST /readyz/ok", func(w http.ResponseWriter, r *http.Request) { s.setReady(w, r, true) })
	return mux
}

// page shows the pod's name and the Guestbook's entries.
func (s *server) page(w http.ResponseWriter, _ *http.Request) {
	entries, err := readEntries(s.configDir)
	if err != nil {
		text(w, http.StatusInternalServerError, fmt.Sprintf("reading the entries from %s: %v", s.configDir, err))
		return
	}
	var b strings.Builder
	fmt.Fprintf(&b, "Guestbook pod %s\n", s.host)
	if len(entries) == 0 {
		fmt.Fprintf(&b, "no entries in %s", s.configDir)
	} else {
		fmt.Fprintf(&b, "entries from %s:", s.configDir)
	}
	for _, e := range entries {
		fmt.Fprintf(&b, "\n  %s: %s", e.key, e.value)
	}
	text(w, http.StatusOK, b.String())
}

func (s *server) readyz(w http.ResponseWriter, _ *http.Request) {
	if s.unready.Load() {
		text(w, http.StatusServiceUnavailable, "not ready: made unready by POST /readyz/fail (POST /readyz/ok undoes it)")
		return
	}
	text(w, http.StatusOK, "ok")
}

// setReady is the failover drill's switch; it logs every call, and whether
// it changed anything.
func (s *server) setReady(w http.ResponseWriter, r *http.Request, ready bool) {
	if !s.drill {
		s.log.Printf("readiness: refused %s %s from %s: the failover drill is off", r.Method, r.URL.Path, r.RemoteAddr)
		text(w, http.StatusForbidden, "the failover drill is off: start the server with --failover-drill or "+drillEnv+"=enabled")
		return
	}
	state := map[bool]string{true: "ready", false: "unready"}
	if s.unready.Swap(!ready) == !ready {
		s.log.Printf("readiness: already %s (%s %s from %s)", state[ready], r.Method, r.URL.Path, r.RemoteAddr)
	} else {
		s.log.Printf("readiness: %s -> %s (%s %s from %s)", state[!ready], state[ready], r.Method, r.URL.Path, r.RemoteAddr)
	}
	text(w, http.StatusOK, state[ready])
}

// entry is one key of the Guestbook's ConfigMap.
type entry struct{ key, value string }

// readEntries reads the files of dir, in name order. A ConfigMap volume
// holds one file per key (a symbolic link into a hidden, timestamped
// folder, which ..data points to): names starting with a dot are the
// volume's own and are skipped. A missing dir holds no entries.
func readEntries(dir string) ([]entry, error) {
	files, err := os.ReadDir(dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var out []entry
	for _, f := range files {
		if strings.HasPrefix(f.Name(), ".") {
			continue
		}
		path := filepath.Join(dir, f.Name())
		if info, err := os.Stat(path); err != nil || info.IsDir() {
			continue // a dangling link or a folder: no entry
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return nil, err
		}
		out = append(out, entry{key: f.Name(), value: strings.TrimRight(string(data), "\n")})
	}
	return out, nil
}

func text(w http.ResponseWriter, code int, body string) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(code)
	_, _ = fmt.Fprintln(w, body)
}
