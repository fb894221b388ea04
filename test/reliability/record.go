package reliability

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"
)

// Env names the folder Save appends to; unset, Save does nothing.
const Env = "RELIABILITY_RESULTS"

// Record is one run of one test.
type Record struct {
	Test    string         `json:"test"`
	Date    string         `json:"date"`
	Commit  string         `json:"commit"`
	Machine Machine        `json:"machine"`
	Command string         `json:"command"`
	Figures map[string]any `json:"figures"`
}

// Machine is what a figure depends on besides the code.
type Machine struct {
	CPU        string `json:"cpu"`
	Cores      int    `json:"cores"`
	MemoryGiB  int    `json:"memoryGiB"`
	Kubernetes string `json:"kubernetes"`
}

// Save appends a record of the running test (t.Name(), its top-level part)
// with figures to $RELIABILITY_RESULTS/<test>.jsonl. env lists the
// environment variables that shaped the run (CRASH_POINTS, say); their
// values join the command that reproduces it. A test that failed saves
// nothing: its figures back no claim.
func Save(t testing.TB, figures map[string]any, env ...string) {
	t.Helper()
	dir := os.Getenv(Env)
	if dir == "" || t.Failed() {
		return
	}
	test, _, _ := strings.Cut(t.Name(), "/")
	r := Record{Test: test, Date: time.Now().UTC().Format(time.RFC3339), Commit: commit(t), Machine: machine(),
		Command: command(t, test, env), Figures: figures}
	line, err := json.Marshal(r)
	if err != nil {
		t.Fatalf("reliability: %v", err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatalf("reliability: %v", err)
	}
	f, err := os.OpenFile(filepath.Join(dir, test+".jsonl"), os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		t.Fatalf("reliability: %v", err)
	}
	defer func() { _ = f.Close() }()
	if _, err := f.Write(append(line, '\n')); err != nil {
		t.Fatalf("reliability: %v", err)
	}
	t.Logf("reliability: saved %s to %s", line, f.Name())
}

// commit is the HEAD the test runs at; a tree with changes outside the
// results is refused, since its figures would be dated with a commit that
// does not hold the code measured.
func commit(t testing.TB) string {
	t.Helper()
	head, err := exec.Command("git", "rev-parse", "HEAD").Output()
	if err != nil {
		t.Fatalf("reliability: git rev-parse HEAD: %v", err)
	}
	// The exclusions are from the repository's top: a test runs in its
	// package's folder, where a bare pathspec would name a path under it,
	// and a run of several suites then refused every record after the
	// first, seeing that record's file changed.
	status, err := exec.Command("git", "status", "--porcelain", "--untracked-files=no", "--",
		":(top,exclude)test/reliability/results", ":(top,exclude)docs/RELIABILITY.md").Output()
	if err != nil {
		t.Fatalf("reliability: git status: %v", err)
	}
	if len(bytes.TrimSpace(status)) > 0 {
		t.Fatalf("reliability: the tree has uncommitted changes; commit them before measuring:\n%s", status)
	}
	return strings.TrimSpace(string(head))
}

// command is the go test command that reproduces the run, from the
// repository root.
func command(t testing.TB, test string, env []string) string {
	t.Helper()
	wd, _ := os.Getwd()
	top, err := exec.Command("git", "rev-parse", "--show-toplevel").Output()
	pkg := "."
	if err == nil {
		if rel, err := filepath.Rel(strings.TrimSpace(string(top)), wd); err == nil {
			pkg = "./" + filepath.ToSlash(rel) + "/"
		}
	}
	var b strings.Builder
	for _, name := range slices.Sorted(slices.Values(env)) {
		if v := os.Getenv(name); v != "" {
			fmt.Fprintf(&b, "%s=%s ", name, v)
		}
	}
	fmt.Fprintf(&b, "go test -count=1 %s -run '^%s$'", pkg, test)
	return b.String()
}

// machine describes this machine from /proc and the API server's version
// from the folder of its binaries (bin/k8s/<version>).
func machine() Machine {
	m := Machine{Cores: runtime.NumCPU(), Kubernetes: filepath.Base(os.Getenv("KUBEBUILDER_ASSETS"))}
	if f, err := os.Open("/proc/cpuinfo"); err == nil {
		s := bufio.NewScanner(f)
		for s.Scan() {
			if k, v, ok := strings.Cut(s.Text(), ":"); ok && strings.TrimSpace(k) == "model name" {
				m.CPU = strings.TrimSpace(v)
				break
			}
		}
		_ = f.Close()
	}
	if data, err := os.ReadFile("/proc/meminfo"); err == nil {
		var kb int
		for line := range strings.Lines(string(data)) {
			if _, err := fmt.Sscanf(line, "MemTotal: %d kB", &kb); err == nil {
				m.MemoryGiB = (kb + 1<<19) >> 20
				break
			}
		}
	}
	return m
}

// Load reads every results file of dir: test name -> its records, oldest
// first.
func Load(dir string) (map[string][]Record, error) {
	files, err := filepath.Glob(filepath.Join(dir, "*.jsonl"))
	if err != nil {
		return nil, err
	}
	out := map[string][]Record{}
	for _, name := range files {
		data, err := os.ReadFile(name)
		if err != nil {
			return nil, err
		}
		for i, line := range bytes.Split(bytes.TrimSpace(data), []byte("\n")) {
			var r Record
			if err := json.Unmarshal(line, &r); err != nil {
				return nil, fmt.Errorf("%s:%d: %w", name, i+1, err)
			}
			out[r.Test] = append(out[r.Test], r)
		}
	}
	return out, nil
}

// Seconds is a duration as a figure: float seconds rounded to a tenth.
func Seconds(d time.Duration) float64 { return math.Round(d.Seconds()*10) / 10 }
