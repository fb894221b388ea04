package main

import (
	"bytes"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestDrillOffByDefault: a server started with no flag and no environment
// refuses a POST to the drill's endpoints, says how to turn it on, logs it,
// and changes nothing.
func TestDrillOffByDefault(t *testing.T) {
	t.Setenv(drillEnv, "")
	o, err := parseFlags(nil)
	if err != nil {
		t.Fatal(err)
	}
	var logs bytes.Buffer
	s := &server{host: "guestbook-sample-0", configDir: t.TempDir(), log: log.New(&logs, "", 0), drill: o.drill}
	for _, path := range []string{"/readyz/fail", "/readyz/ok", "/readyz/fail"} {
		rec := httptest.NewRecorder()
		s.handler().ServeHTTP(rec, httptest.NewRequest(http.MethodPost, path, nil))
		if rec.Code != http.StatusForbidden || !strings.Contains(rec.Body.String(), "--failover-drill") {
			t.Errorf("POST %s: %d %q, want 403 naming --failover-drill", path, rec.Code, rec.Body)
		}
	}
	rec := httptest.NewRecorder()
	s.handler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/readyz", nil))
	if rec.Code != http.StatusOK {
		t.Errorf("GET /readyz after refused drills: %d, want 200", rec.Code)
	}
	if !strings.Contains(logs.String(), "refused POST /readyz/fail") {
		t.Errorf("logged %q, want the refusal", logs.String())
	}
}

// TestDrillFlag: the drill a started server gets from its command line and
// environment; off unless one of them turns it on.
func TestDrillFlag(t *testing.T) {
	for _, c := range []struct {
		name, env string
		args      []string
		want      bool
	}{
		{name: "no flag, no environment", want: false},
		{name: "environment set to true, not enabled", env: "true", want: false},
		{name: "environment enabled", env: "enabled", want: true},
		{name: "flag", args: []string{"--failover-drill"}, want: true},
		{name: "flag false over the environment", env: "enabled", args: []string{"--failover-drill=false"}, want: false},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Setenv(drillEnv, c.env)
			o, err := parseFlags(c.args)
			if err != nil {
				t.Fatal(err)
			}
			if o.drill != c.want {
				t.Errorf("%s=%q, args %q: drill %v, want %v", drillEnv, c.env, c.args, o.drill, c.want)
			}
		})
	}
}

// TestServer walks one server, its drill on, through its endpoints in
// order: the probes, the failover drill (each step sees the state the
// previous ones left) and the methods each path refuses.
func TestServer(t *testing.T) {
	var logs bytes.Buffer
	s := &server{host: "guestbook-sample-0", configDir: t.TempDir(), log: log.New(&logs, "", 0), drill: true}
	ts := httptest.NewServer(s.handler())
	defer ts.Close()

	steps := []struct {
		method, path string
		code         int
		body         string // a part of the body
		log          string // a part of what the step logs, if anything
	}{
		{"GET", "/healthz", http.StatusOK, "ok", ""},
		{"GET", "/readyz", http.StatusOK, "ok", ""},
		{"GET", "/readyz/fail", http.StatusMethodNotAllowed, "", ""},
		{"GET", "/readyz/ok", http.StatusMethodNotAllowed, "", ""},
		{"POST", "/readyz", http.StatusMethodNotAllowed, "", ""},
		{"POST", "/readyz/fail", http.StatusOK, "unready", "readiness: ready -> unready (POST /readyz/fail from 127.0.0.1:"},
		{"GET", "/readyz", http.StatusServiceUnavailable, "not ready", ""},
		{"HEAD", "/readyz", http.StatusServiceUnavailable, "", ""},
		// Liveness does not follow readiness: the kubelet must not restart
		// an unready pod.
		{"GET", "/healthz", http.StatusOK, "ok", ""},
		{"POST", "/readyz/fail", http.StatusOK, "unready", "readiness: already unready"},
		{"GET", "/readyz", http.StatusServiceUnavailable, "not ready", ""},
		{"POST", "/readyz/ok", http.StatusOK, "ready", "readiness: unready -> ready"},
		{"GET", "/readyz", http.StatusOK, "ok", ""},
		{"POST", "/readyz/ok", http.StatusOK, "ready", "readiness: already ready"},
		{"GET", "/", http.StatusOK, "Guestbook pod guestbook-sample-0", ""},
		{"GET", "/nothing-here", http.StatusNotFound, "", ""},
	}
	for _, st := range steps {
		logs.Reset()
		req, err := http.NewRequestWithContext(t.Context(), st.method, ts.URL+st.path, nil)
		if err != nil {
			t.Fatal(err)
		}
		resp, err := ts.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, err := io.ReadAll(resp.Body)
		_ = resp.Body.Close()
		if err != nil {
			t.Fatal(err)
		}
		if resp.StatusCode != st.code || !strings.Contains(string(body), st.body) {
			t.Errorf("%s %s: %d %q, want %d with %q", st.method, st.path, resp.StatusCode, body, st.code, st.body)
		}
		if got := logs.String(); (st.log == "") != (got == "") || !strings.Contains(got, st.log) {
			t.Errorf("%s %s logged %q, want %q", st.method, st.path, got, st.log)
		}
	}
}

// TestPage: the page lists the ConfigMap's entries as a ConfigMap volume
// lays them out, and a missing or empty folder is no entry, not an error.
func TestPage(t *testing.T) {
	tests := []struct {
		name string
		// setup fills the folder dir (which does not exist yet).
		setup func(t *testing.T, dir string)
		want  []string // lines of the page after the pod's
	}{{
		name:  "missing folder",
		setup: func(*testing.T, string) {},
		want:  []string{"no entries in {dir}"},
	}, {
		name:  "empty folder",
		setup: func(t *testing.T, dir string) { mkdir(t, dir) },
		want:  []string{"no entries in {dir}"},
	}, {
		name: "plain files",
		setup: func(t *testing.T, dir string) {
			mkdir(t, dir)
			write(t, filepath.Join(dir, "entry"), "+1 555 0100\n")
			write(t, filepath.Join(dir, "alias"), "Phone")
		},
		want: []string{"entries from {dir}:", "  alias: Phone", "  entry: +1 555 0100"},
	}, {
		// What the kubelet writes for a ConfigMap volume: the data in a
		// timestamped folder, ..data pointing to it, a link per key.
		name: "ConfigMap volume",
		setup: func(t *testing.T, dir string) {
			data := filepath.Join(dir, "..2026_01_02_03_04_05.000000001")
			mkdir(t, data)
			write(t, filepath.Join(data, "alias"), "Name")
			write(t, filepath.Join(data, "entry"), "Guest")
			symlink(t, filepath.Base(data), filepath.Join(dir, "..data"))
			symlink(t, "..data/alias", filepath.Join(dir, "alias"))
			symlink(t, "..data/entry", filepath.Join(dir, "entry"))
			symlink(t, "..data/gone", filepath.Join(dir, "dangling"))
		},
		want: []string{"entries from {dir}:", "  alias: Name", "  entry: Guest"},
	}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "guestbook")
			tc.setup(t, dir)
			s := &server{host: "pod-1", configDir: dir, log: log.New(io.Discard, "", 0)}
			rec := httptest.NewRecorder()
			s.handler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/", nil))
			want := "Guestbook pod pod-1\n" + strings.ReplaceAll(strings.Join(tc.want, "\n"), "{dir}", dir) + "\n"
			if rec.Code != http.StatusOK || rec.Body.String() != want {
				t.Errorf("GET /: %d\n%s\nwant 200\n%s", rec.Code, rec.Body, want)
			}
		})
	}
}

func mkdir(t *testing.T, dir string) {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
}

func write(t *testing.T, path, data string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
}

func symlink(t *testing.T, target, link string) {
	t.Helper()
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
}
