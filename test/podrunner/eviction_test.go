package podrunner

import (
	"archive/tar"
	"bufio"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"github.com/example/myoperator/test/framework/testenv"
)

// TestEvictionTerminatesAsAKubelet: an evicted pod (the Eviction API, as
// kubectl drain uses it, on a real API server) is stopped as a kubelet
// stops it: its preStop sleep first, SIGTERM after it, SIGKILL when the
// grace period ends, and the pod object removed only once the containers
// have exited, so that until then it stays, terminating, with its
// ServiceAccount token valid. (Its endpoints are the EndpointSlice
// controller's: it marks a terminating pod's endpoint not ready as soon as
// the deletion is written; the e2e suite's disruption features see it.)
// Each row's times are measured from the eviction.
func TestEvictionTerminatesAsAKubelet(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("podman runs the containers as root (make test runs this as root in its network namespace)")
	}
	if _, err := exec.LookPath("podman"); err != nil {
		t.Skip("podman is not installed (hack/ensure-podman.sh installs it)")
	}
	image := stopperImage(t)
	_, cfg, _ := testenv.Start(t, testenv.Options{})
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	const ns = "evict"
	if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	r, err := New(Config{Client: cs, Namespace: ns, Selector: "app=stopper", APIServer: cfg.Host,
		Dir: dir, ContainerPrefix: "evict-test-", Logf: t.Logf})
	if err != nil {
		t.Fatal(err)
	}
	runDone := make(chan struct{})
	go func() {
		defer close(runDone)
		r.Run(ctx)
	}()
	defer func() { cancel(); <-runDone }()

	// Only the order and the lower bounds are asserted: a loaded machine
	// makes podman and the API server late, never early, so an upper bound
	// on these times would test the machine. How each container ended (by
	// itself after SIGTERM, or by the grace period's SIGKILL) says the
	// rest.
	for _, tc := range []struct {
		name           string
		preStop, grace int64
		args           []string
		// SIGTERM comes no sooner than the preStop sleep after the
		// eviction; the container exits no sooner than exitFrom, and
		// podman run's error says how it ended.
		termFrom, exitFrom time.Duration
		wantExit           string
	}{
		{name: "stops-on-sigterm", preStop: 2, grace: 10, args: []string{"-term-takes=1s"},
			termFrom: 2 * time.Second, exitFrom: 3 * time.Second, wantExit: "exit <nil>"},
		{name: "ignores-sigterm", preStop: 1, grace: 4, args: []string{"-ignore-term"},
			termFrom: 1 * time.Second, exitFrom: 4 * time.Second, wantExit: "exit exit status 137"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pod := &corev1.Pod{
				ObjectMeta: metav1.ObjectMeta{Name: tc.name, Namespace: ns, Labels: map[string]string{"app": "stopper"}},
				Spec: corev1.PodSpec{
					// Scheduled, so that the API server deletes it
					// gracefully and leaves the removal to the node.
					NodeName:                      "node-a",
					TerminationGracePeriodSeconds: ptr.To(tc.grace),
					AutomountServiceAccountToken:  ptr.To(false),
					SecurityContext:               &corev1.PodSecurityContext{RunAsUser: ptr.To[int64](65532), RunAsGroup: ptr.To[int64](65532)},
					Containers: []corev1.Container{{
						Name: "stopper", Image: image, Command: []string{"/stopper"}, Args: tc.args,
						Lifecycle: &corev1.Lifecycle{PreStop: &corev1.LifecycleHandler{Sleep: &corev1.SleepAction{Seconds: tc.preStop}}},
					}},
				},
			}
			created, err := cs.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{})
			if err != nil {
				t.Fatal(err)
			}
			log := r.LogFile(pod.Name, "stopper")
			testenv.Eventually(t, time.Minute, func() string {
				if _, ok := logTime(log, "stopper: started "); !ok {
					return "the container has not started (" + log + ")"
				}
				return ""
			})
			w, err := cs.CoreV1().Pods(ns).Watch(ctx, metav1.ListOptions{FieldSelector: "metadata.name=" + pod.Name, ResourceVersion: created.ResourceVersion})
			if err != nil {
				t.Fatal(err)
			}
			defer w.Stop()

			evicted := time.Now()
			if err := cs.CoreV1().Pods(ns).EvictV1(ctx, &policyv1.Eviction{ObjectMeta: metav1.ObjectMeta{Name: pod.Name, Namespace: ns}}); err != nil {
				t.Fatalf("evicting: %v", err)
			}
			var terminating, removed time.Time
			deadline := time.After(time.Duration(tc.grace+10) * time.Second)
			for removed.IsZero() {
				select {
				case ev := <-w.ResultChan():
					p, _ := ev.Object.(*corev1.Pod)
					switch {
					case ev.Type == watch.Deleted:
						removed = time.Now()
					case p != nil && p.DeletionTimestamp != nil && terminating.IsZero():
						terminating = time.Now()
					}
				case <-deadline:
					t.Fatalf("the evicted pod was not removed within %ds", tc.grace+10)
				}
			}
			// The container's exit, which the pod's removal should have
			// waited for.
			var exited time.Time
			testenv.Eventually(t, time.Duration(tc.grace+5)*time.Second, func() string {
				var ok bool
				if exited, ok = logTime(log, "=== pod runner: ", " exit "); !ok {
					return "the container's exit is not in its log:\n" + readFile(log)
				}
				return ""
			})
			term, ok := logTime(log, "stopper: SIGTERM ")
			if !ok {
				t.Fatalf("the container never got SIGTERM:\n%s", readFile(log))
			}
			since := func(at time.Time) time.Duration { return at.Sub(evicted).Round(10 * time.Millisecond) }
			t.Logf("evicted; terminating seen +%s; SIGTERM +%s (preStop %ds); exited +%s (grace %ds); pod removed +%s",
				since(terminating), since(term), tc.preStop, since(exited), tc.grace, since(removed))
			if d := term.Sub(evicted); d < tc.termFrom {
				t.Errorf("SIGTERM %s after the eviction, want no sooner than %s (after the preStop sleep)", d, tc.termFrom)
			}
			if d := exited.Sub(evicted); d < tc.exitFrom {
				t.Errorf("the container exited %s after the eviction, want no sooner than %s", d, tc.exitFrom)
			}
			if _, ok := logTime(log, "=== pod runner: ", " "+tc.wantExit); !ok {
				t.Errorf("the container did not end with %q:\n%s", tc.wantExit, readFile(log))
			}
			if terminating.IsZero() || !terminating.Before(term) {
				t.Errorf("the pod was not seen terminating before SIGTERM (terminating at +%s)", since(terminating))
			}
			if removed.Before(exited) {
				t.Errorf("the pod was removed at +%s, before its container exited at +%s", since(removed), since(exited))
			}
		})
	}
}

// logTime finds the first line of a container log holding every part and
// parses the RFC 3339 time that follows the first part.
func logTime(path string, parts ...string) (time.Time, bool) {
	f, err := os.Open(path)
	if err != nil {
		return time.Time{}, false
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		found := true
		for _, p := range parts {
			found = found && strings.Contains(line, p)
		}
		if !found {
			continue
		}
		rest := line[strings.Index(line, parts[0])+len(parts[0]):]
		field, _, _ := strings.Cut(rest, " ")
		if at, err := time.Parse(time.RFC3339Nano, field); err == nil {
			return at, true
		}
	}
	return time.Time{}, false
}

func readFile(path string) string {
	data, _ := os.ReadFile(path)
	return string(data)
}

// stopperImage builds testdata/stopper into an image of one static binary
// (podman import of a tar archive; no base image, no registry).
func stopperImage(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	bin := filepath.Join(dir, "stopper")
	build := exec.Command("go", "build", "-o", bin, "./testdata/stopper")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("building testdata/stopper: %v: %s", err, out)
	}
	data, err := os.ReadFile(bin)
	if err != nil {
		t.Fatal(err)
	}
	archive := filepath.Join(dir, "stopper.tar")
	f, err := os.Create(archive)
	if err != nil {
		t.Fatal(err)
	}
	tw := tar.NewWriter(f)
	if err := tw.WriteHeader(&tar.Header{Name: "stopper", Mode: 0o755, Size: int64(len(data)), ModTime: time.Unix(0, 0)}); err != nil {
		t.Fatal(err)
	}
	if _, err := tw.Write(data); err != nil {
		t.Fatal(err)
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	const image = "localhost/myoperator-test/stopper:1"
	args := Podman("import", "--quiet", archive, image)
	if out, err := exec.Command(args[0], args[1:]...).CombinedOutput(); err != nil {
		t.Fatalf("podman import: %v: %s", err, out)
	}
	t.Cleanup(func() {
		rm := Podman("rmi", "--ignore", image)
		_ = exec.Command(rm[0], rm[1:]...).Run()
	})
	return image
}
