package app_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	auditv1 "k8s.io/apiserver/pkg/apis/audit/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"sigs.k8s.io/controller-runtime/pkg/client"

	drinksv1 "github.com/example/myoperator/apis/drinks/v1"
	"github.com/example/myoperator/internal/names"
	"github.com/example/myoperator/test/framework/manifests"
	"github.com/example/myoperator/test/framework/shardaudit"
	"github.com/example/myoperator/test/framework/testenv"
	"github.com/example/myoperator/test/framework/testutil"
	"github.com/example/myoperator/test/reliability"
)

const (
	podNameExtra = "authentication.kubernetes.io/pod-name"
	fenceNS      = "fence"
	fenceDrinks  = 40
)

// fenceReplica is one manager process, running as a pod of the operator's
// ServiceAccount: POD_NAME set, and a token bound to that Pod.
type fenceReplica struct {
	pod  string
	cmd  *exec.Cmd
	out  *lockedBuffer
	done chan error
}

// fenceTrial is what the audit log shows of one pause.
type fenceTrial struct {
	paused, survivor string
	takeover         time.Duration // SIGSTOP to the survivor's Lease write
	resumedAfter     time.Duration // takeover to SIGCONT
	exitAfter        time.Duration // SIGCONT to the paused replica's exit
	// Writes of the paused pod after the takeover: admitted, refused by
	// the fence, and failed for another reason (409 conflicts with the new
	// leader's writes, timeouts while it exits).
	admitted, fenced, failed []auditv1.Event
	takeoverAt               time.Time
	// holderDenied counts the fence's denials of the Lease holder: its
	// first writes may race the API server's Lease informer by a moment.
	holderDenied int
}

// TestPausedLeaderIsFenced: two manager processes, each with a token bound
// to its own Pod object and POD_NAME set, lead in turn while a writer keeps
// editing Drinks. The leader is paused with SIGSTOP until the other takes
// the Lease, then resumed: it has reconciles in flight and writes until it
// sees the Lease lost and exits (client-go's leader election does not
// fence). The API server's audit log gives the time of the takeover and
// every write of the paused pod after it. Without config/leader-fence's fencing
// policy some are admitted; with it every one is denied, and the new
// leader still converges every Drink (the fence does not stop the holder).
//
// FENCE_TRIALS sets the fenced trials (default 3; the reported run used 20).
func TestPausedLeaderIsFenced(t *testing.T) {
	trials := 3
	if v := os.Getenv("FENCE_TRIALS"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			t.Fatalf("FENCE_TRIALS=%q: want a positive number", v)
		}
		trials = n
	}
	began := time.Now()
	bin := buildManager(t)
	auditLog := filepath.Join(t.TempDir(), "audit.log")
	_, cfg, admin := testenv.Start(t, testenv.Options{AuditLog: auditLog})
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	for _, ns := range []string{operatorNS, fenceNS, "guestbook"} {
		if err := admin.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
			t.Fatal(err)
		}
	}
	installRBAC(ctx, t, admin)
	cs := kubernetes.NewForConfigOrDie(cfg)
	pods := []string{"myoperator-controller-manager-a", "myoperator-controller-manager-b"}
	kubeconfigs := map[string]string{}
	for _, pod := range pods {
		kubeconfigs[pod] = podKubeconfig(ctx, t, cs, cfg, pod)
	}
	for i := range fenceDrinks {
		if err := admin.Create(ctx, &drinksv1.Drink{ObjectMeta: metav1.ObjectMeta{Namespace: fenceNS, Name: fmt.Sprintf("d%02d", i)},
			Spec: drinksv1.DrinkSpec{DisplayName: "x", Beverage: "tea"}}); err != nil {
			t.Fatal(err)
		}
	}
	run := func(t *testing.T, trial int) fenceTrial {
		return pauseLeader(ctx, t, bin, kubeconfigs, pods, admin, cs, auditLog, trial)
	}

	// Without the fence: the resumed leader's writes are admitted. A
	// trial where it sends none proves nothing, so up to 5 are run.
	var unfencedPerTrial []int
	var unfenced fenceTrial
	t.Run("unfenced", func(t *testing.T) {
		for i := 1; i <= 5; i++ {
			tr := run(t, i)
			logTrial(t, i, tr)
			unfencedPerTrial = append(unfencedPerTrial, len(tr.admitted))
			if len(tr.admitted) > 0 {
				unfenced = tr
				t.Logf("unfenced: %d stale writes admitted (%s) in trial %d, the first trial with any", len(tr.admitted), byResource(tr.admitted), i)
				return
			}
		}
		t.Errorf("unfenced: the resumed leader wrote nothing after the takeover in 5 trials; the test cannot show the fence works")
	})
	if t.Failed() {
		return
	}

	installFence(ctx, t, admin, cs, kubeconfigs[pods[0]])
	var admitted, fenced, failed, conflicts, withAttempts, holderDenied int
	var takeovers, exits []time.Duration
	var fencedPerTrial []int
	t.Run("fenced", func(t *testing.T) {
		for i := 1; i <= trials; i++ {
			tr := run(t, i)
			logTrial(t, i, tr)
			if len(tr.admitted) > 0 {
				t.Errorf("trial %d: %d stale writes admitted despite the fence (%s)", i, len(tr.admitted), byResource(tr.admitted))
			}
			admitted += len(tr.admitted)
			fenced += len(tr.fenced)
			failed += len(tr.failed)
			for _, e := range tr.failed {
				if e.ResponseStatus != nil && e.ResponseStatus.Code == 409 {
					conflicts++
				}
			}
			holderDenied += tr.holderDenied
			if len(tr.fenced) > 0 {
				withAttempts++
			}
			takeovers = append(takeovers, tr.takeover)
			exits = append(exits, tr.exitAfter)
			fencedPerTrial = append(fencedPerTrial, len(tr.fenced))
		}
		slices.Sort(takeovers)
		t.Logf("fenced: %d trials, %d with stale writes denied; stale writes: %d admitted, %d denied by the fence, %d failed otherwise; the holder's writes denied: %d; takeover after SIGSTOP %s to %s",
			trials, withAttempts, admitted, fenced, failed, holderDenied, takeovers[0].Round(time.Millisecond), takeovers[len(takeovers)-1].Round(time.Millisecond))
		if fenced == 0 {
			t.Errorf("the paused leader never wrote after the takeover in %d trials: the fence was not exercised", trials)
		}
	})
	took := time.Since(began)
	t.Logf("TestPausedLeaderIsFenced took %s", took.Round(time.Second))
	if t.Failed() {
		return
	}
	// The unfenced trial that showed stale writes: when after the takeover
	// they were admitted.
	var firstAdmitted, lastAdmitted time.Duration
	for i, e := range unfenced.admitted {
		after := e.StageTimestamp.Sub(unfenced.takeoverAt)
		if i == 0 || after < firstAdmitted {
			firstAdmitted = after
		}
		if i == 0 || after > lastAdmitted {
			lastAdmitted = after
		}
	}
	reliability.Save(t, map[string]any{
		"trials":                     trials,
		"trialsWithFenced":           withAttempts,
		"takeoverMinSeconds":         reliability.Seconds(slices.Min(takeovers)),
		"takeoverMaxSeconds":         reliability.Seconds(slices.Max(takeovers)),
		"exitAfterSigcontMinSeconds": reliability.Seconds(slices.Min(exits)),
		"exitAfterSigcontMaxSeconds": reliability.Seconds(slices.Max(exits)),
		"staleAdmitted":              admitted,
		"staleFenced":                fenced,
		"staleFencedMinPerTrial":     slices.Min(fencedPerTrial),
		"staleFencedMaxPerTrial":     slices.Max(fencedPerTrial),
		"staleFailed":                failed,
		"staleConflicts":             conflicts,
		"holderRefused":              holderDenied,
		"unfencedTrials":             len(unfencedPerTrial),
		"unfencedAdmittedPerTrial":   unfencedPerTrial,
		"unfencedAdmitted":           len(unfenced.admitted),
		"unfencedAdmittedByWrite":    writeCounts(unfenced.admitted),
		"unfencedAdmittedMinSeconds": reliability.Seconds(firstAdmitted),
		"unfencedAdmittedMaxSeconds": reliability.Seconds(lastAdmitted),
		"seconds":                    reliability.Seconds(took),
	}, "FENCE_TRIALS")
}

// buildManager builds the manager binary (main.go) into a temporary folder.
func buildManager(t *testing.T) string {
	t.Helper()
	return testenv.ManagerBinary(t, "")
}

// podKubeconfig creates the Pod object of a replica (no kubelet runs it)
// and writes a kubeconfig with a token of the operator's ServiceAccount
// bound to it: the API server then adds the pod's name to the user's extra.
func podKubeconfig(ctx context.Context, t *testing.T, cs kubernetes.Interface, cfg *rest.Config, name string) string {
	t.Helper()
	token := podToken(ctx, t, cs, name)
	kc := clientcmdapi.NewConfig()
	kc.Clusters["envtest"] = &clientcmdapi.Cluster{Server: cfg.Host, CertificateAuthorityData: cfg.CAData}
	kc.AuthInfos[name] = &clientcmdapi.AuthInfo{Token: token}
	kc.Contexts[name] = &clientcmdapi.Context{Cluster: "envtest", AuthInfo: name}
	kc.CurrentContext = name
	path := filepath.Join(t.TempDir(), name+".kubeconfig")
	if err := clientcmd.WriteToFile(*kc, path); err != nil {
		t.Fatal(err)
	}
	return path
}

// installFence installs config/leader-fence's policy and binding and waits until
// the API server enforces it: a write of a pod that holds no Lease (none
// exists yet) is denied, an administrator's is not.
func installFence(ctx context.Context, t *testing.T, admin client.Client, cs kubernetes.Interface, kubeconfig string) {
	t.Helper()
	objs, err := manifests.RenderWithComponents("config/default", "config/leader-fence")
	if err != nil {
		t.Fatal(err)
	}
	var policies int
	for _, o := range objs {
		// config/default has admission policies of its own
		// (config/admission-policy); the fence's are the component's.
		if !strings.HasPrefix(o.GetKind(), "ValidatingAdmissionPolicy") || o.GetName() != "myoperator-leader-fence" {
			continue
		}
		policies++
		if err := admin.Create(ctx, o); err != nil {
			t.Fatal(err)
		}
	}
	if policies != 2 {
		t.Fatalf("config/leader-fence renders %d ValidatingAdmissionPolicy objects, want the policy and its binding", policies)
	}
	podCfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	podClient := kubernetes.NewForConfigOrDie(podCfg)
	probe := func(c kubernetes.Interface) error {
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "fence-probe", Namespace: fenceNS, Labels: map[string]string{"probe": "fence"}}}
		_, err := c.CoreV1().ConfigMaps(fenceNS).Create(ctx, cm, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		return err
	}
	testenv.Eventually(t, 30*time.Second, func() string {
		if err := probe(podClient); !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), "myoperator-leader-fence") {
			return fmt.Sprintf("a write of a pod without the Lease is not denied by the fence yet: %v", err)
		}
		return ""
	})
	if err := probe(cs); err != nil {
		t.Fatalf("the fence denies an administrator's write: %v", err)
	}
	// Without the Lease (a fresh install) nobody's writes may be denied:
	// the API server looks the parameter up before the matchConditions,
	// so parameterNotFoundAction Deny would refuse the ReplicaSet
	// controller the manager's pods, which then never create the Lease.
	if err := cs.CoordinationV1().Leases(operatorNS).Delete(ctx, names.LeaderElectionID, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, 30*time.Second, func() string {
		// Until the API server's Lease informer saw the delete, the pod is
		// denied for not holding it.
		if err := probe(podClient); err != nil && strings.Contains(err.Error(), "does not hold the Lease") {
			return "the API server still sees the deleted Lease"
		}
		return ""
	})
	if err := probe(cs); err != nil {
		t.Fatalf("without the Lease the fence denies an administrator's write: %v", err)
	}
	policy := &admissionregistrationv1.ValidatingAdmissionPolicy{}
	if err := admin.Get(ctx, client.ObjectKey{Name: "myoperator-leader-fence"}, policy); err != nil {
		t.Fatal(err)
	}
	if tc := policy.Status.TypeChecking; tc != nil && len(tc.ExpressionWarnings) > 0 {
		t.Errorf("the fence's CEL has type-checking warnings: %+v", tc.ExpressionWarnings)
	}
	err = probe(podClient)
	t.Logf("fence installed; with no Lease (parameterNotFoundAction Allow) a pod's write: %v", err)
}

// leaderStarts bounds the starts of one trial: a leader that loses its
// Lease on its own before the pause (its 2 s renew deadline missed on a
// loaded machine: in a fresh machine's make ci every renewal failed for
// 2 s while images and binaries compiled beside it) has exited, and a
// trial that pauses no leader shows nothing, so it starts again.
const leaderStarts = 3

// pauseLeader runs one trial: two replicas, a writer editing Drinks, the
// leader stopped until the other takes the Lease, a moment of writes, the
// leader resumed until it exits; then the survivor converges every Drink
// and is stopped (releasing the Lease for the next trial). The trial
// starts again, up to leaderStarts times, when the leader lost its Lease
// before it was paused.
func pauseLeader(ctx context.Context, t *testing.T, bin string, kubeconfigs map[string]string, pods []string,
	admin client.Client, cs kubernetes.Interface, auditLog string, trial int) fenceTrial {
	t.Helper()
	for start := 1; ; start++ {
		tr, lostEarly := pauseLeaderOnce(ctx, t, bin, kubeconfigs, pods, admin, cs, auditLog, trial)
		if lostEarly == "" {
			return tr
		}
		if start == leaderStarts {
			t.Fatalf("trial %d: in %d starts the leader lost its Lease before it was paused; the last: %s", trial, start, lostEarly)
		}
		t.Logf("trial %d, start %d: the leader lost its Lease before it was paused (%s); starting again", trial, start, lostEarly)
	}
}

// pauseLeaderOnce is one start of a trial. It returns why the trial must
// start again (the leader exited before the pause, its replicas then
// stopped) or the trial.
func pauseLeaderOnce(ctx context.Context, t *testing.T, bin string, kubeconfigs map[string]string, pods []string,
	admin client.Client, cs kubernetes.Interface, auditLog string, trial int) (fenceTrial, string) {
	t.Helper()
	replicas := map[string]*fenceReplica{}
	for _, pod := range pods {
		replicas[pod] = startFenceReplica(t, bin, kubeconfigs[pod], pod)
	}
	var leader, survivor *fenceReplica
	holder := func() string {
		l, err := cs.CoordinationV1().Leases(operatorNS).Get(ctx, names.LeaderElectionID, metav1.GetOptions{})
		if err != nil || l.Spec.HolderIdentity == nil {
			return ""
		}
		return *l.Spec.HolderIdentity
	}
	podOf := func(id string) string { p, _, _ := strings.Cut(id, "_"); return p }
	testenv.Eventually(t, 30*time.Second, func() string {
		if r := replicas[podOf(holder())]; r != nil && strings.Contains(r.out.String(), acquired) {
			leader = r
			return ""
		}
		return "no replica holds the Lease: " + holder()
	})
	for _, r := range replicas {
		if r != leader {
			survivor = r
		}
	}

	// The writer edits Drinks all along, so that the leader always has
	// reconciles queued and in flight.
	wctx, stopWriter := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for n := 0; wctx.Err() == nil; n++ {
			patch := fmt.Sprintf(`{"spec":{"displayName":"t%d-%d"}}`, trial, n)
			d := &drinksv1.Drink{ObjectMeta: metav1.ObjectMeta{Namespace: fenceNS, Name: fmt.Sprintf("d%02d", n%fenceDrinks)}}
			_ = admin.Patch(wctx, d, client.RawPatch(types.MergePatchType, []byte(patch)))
			time.Sleep(5 * time.Millisecond)
		}
	}()
	defer func() { stopWriter(); wg.Wait() }()
	time.Sleep(2 * time.Second) // the leader at work

	stopped := time.Now()
	if err := leader.cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		if !errors.Is(err, os.ErrProcessDone) {
			t.Fatal(err)
		}
		return fenceTrial{}, stopReplicas(t, leader, survivor, waitExit(t, leader))
	}
	select {
	case err := <-leader.done:
		// It exited before the signal reached it.
		return fenceTrial{}, stopReplicas(t, leader, survivor, err)
	default:
	}
	testenv.Eventually(t, 30*time.Second, func() string {
		if podOf(holder()) != survivor.pod {
			return "the survivor has not taken the Lease: " + holder()
		}
		return ""
	})
	tookOver := time.Now()
	time.Sleep(time.Second) // the new leader at work while the old one sleeps
	resumed := time.Now()
	if err := leader.cmd.Process.Signal(syscall.SIGCONT); err != nil {
		if !errors.Is(err, os.ErrProcessDone) {
			t.Fatal(err)
		}
		// A stopped process does not exit: it had exited before the
		// SIGSTOP, which then reached a process not yet reaped.
		return fenceTrial{}, stopReplicas(t, leader, survivor, waitExit(t, leader))
	}
	var exitAfter time.Duration
	select {
	case err := <-leader.done:
		// controller-runtime exits (status 1) once it sees the Lease lost.
		exitAfter = time.Since(resumed)
		if err == nil {
			t.Logf("the resumed leader exited with status 0")
		}
	case <-time.After(60 * time.Second):
		t.Fatalf("the resumed leader did not exit within 60s of SIGCONT:\n%s", tail(leader.out.String(), 30))
	}
	stopWriter()
	wg.Wait()
	waitDrinksConverged(ctx, t, admin)
	if err := survivor.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-survivor.done:
		if err != nil {
			t.Errorf("the survivor did not stop cleanly on SIGTERM: %v\n%s", err, tail(survivor.out.String(), 30))
		}
	case <-time.After(45 * time.Second):
		t.Fatalf("the survivor did not stop within 45s of SIGTERM")
	}
	ended := time.Now()

	tr := fenceTrial{paused: leader.pod, survivor: survivor.pod}
	events := readAudit(t, auditLog, stopped, ended)
	for _, e := range events {
		if e.ObjectRef != nil && e.ObjectRef.Resource == "leases" && e.Verb == "update" && auditPod(e) == survivor.pod &&
			e.ResponseStatus != nil && e.ResponseStatus.Code < 300 {
			tr.takeoverAt = e.StageTimestamp.Time
			break
		}
	}
	if tr.takeoverAt.IsZero() {
		t.Fatalf("trial %d: no Lease update by %s in the audit log (seen at %s)", trial, survivor.pod, tookOver.Sub(stopped))
	}
	tr.takeover = tr.takeoverAt.Sub(stopped)
	tr.resumedAfter = resumed.Sub(tr.takeoverAt)
	tr.exitAfter = exitAfter
	for _, e := range events {
		if auditPod(e) == survivor.pod && byFence(e) {
			tr.holderDenied++
		}
		if auditPod(e) != leader.pod || !testutil.IsWriteVerb(e.Verb) || !e.StageTimestamp.After(tr.takeoverAt) ||
			(e.ObjectRef != nil && e.ObjectRef.Resource == "leases") {
			continue
		}
		switch {
		case e.ResponseStatus != nil && e.ResponseStatus.Code < 400:
			tr.admitted = append(tr.admitted, e)
		case byFence(e):
			tr.fenced = append(tr.fenced, e)
		default:
			tr.failed = append(tr.failed, e)
		}
	}
	return tr, ""
}

// stopReplicas ends a start of a trial whose leader exited (with
// leaderExit) before the pause: it kills the survivor and returns the end
// of the leader's log. Only a leader that says it lost its Lease starts
// the trial again: any other exit (a crash) fails the test.
func stopReplicas(t *testing.T, leader, survivor *fenceReplica, leaderExit error) string {
	t.Helper()
	_ = survivor.cmd.Process.Kill()
	if err := waitExit(t, survivor); err == nil {
		t.Logf("%s exited with status 0 when killed", survivor.pod)
	}
	if !strings.Contains(leader.out.String(), leaderElectionLost) {
		t.Fatalf("%s exited (%v) before the pause without losing its Lease:\n%s", leader.pod, leaderExit, tail(leader.out.String(), 30))
	}
	return fmt.Sprintf("exit %v: %s", leaderExit, tail(leader.out.String(), 3))
}

// waitExit returns how a replica's process ended, waiting up to 30 s.
func waitExit(t *testing.T, r *fenceReplica) error {
	t.Helper()
	select {
	case err := <-r.done:
		return err
	case <-time.After(30 * time.Second):
		t.Fatalf("%s did not stop within 30s", r.pod)
		return nil
	}
}

func startFenceReplica(t *testing.T, bin, kubeconfig, pod string) *fenceReplica {
	t.Helper()
	return startReplica(t, bin, kubeconfig, pod)
}

// waitDrinksConverged: the new leader reconciled every Drink's last edit,
// so the fence let the Lease holder write.
func waitDrinksConverged(ctx context.Context, t *testing.T, admin client.Client) {
	t.Helper()
	testenv.Eventually(t, 60*time.Second, func() string {
		list := &drinksv1.DrinkList{}
		if err := admin.List(ctx, list, client.InNamespace(fenceNS)); err != nil {
			return err.Error()
		}
		for _, d := range list.Items {
			if d.Status.ObservedGeneration != d.Generation {
				return fmt.Sprintf("Drink %s: observedGeneration %d, generation %d", d.Name, d.Status.ObservedGeneration, d.Generation)
			}
		}
		return ""
	})
}

// readAudit returns the completed requests of the audit log between from
// and to.
func readAudit(t *testing.T, path string, from, to time.Time) []auditv1.Event {
	t.Helper()
	events, err := shardaudit.Read(path, from, to)
	if err != nil {
		t.Fatal(err)
	}
	return events
}

// byFence: the fence refused the request (its binding's Audit action
// annotates the event with the failed policy).
func byFence(e auditv1.Event) bool {
	return e.ResponseStatus != nil && e.ResponseStatus.Code == 403 &&
		strings.Contains(e.Annotations["validation.policy.admission.k8s.io/validation_failure"], "myoperator-leader-fence")
}

func auditPod(e auditv1.Event) string {
	if v := e.User.Extra[podNameExtra]; len(v) > 0 {
		return v[0]
	}
	return ""
}

// byResource counts events by verb and resource.
func byResource(events []auditv1.Event) string {
	return fmt.Sprint(writeCounts(events))
}

// writeCounts counts events by verb and resource ("patch drinks/status").
func writeCounts(events []auditv1.Event) map[string]int {
	n := map[string]int{}
	for _, e := range events {
		what := e.Verb
		if r := e.ObjectRef; r != nil {
			what += " " + r.Resource
			if r.Subresource != "" {
				what += "/" + r.Subresource
			}
		}
		n[what]++
	}
	return n
}

func describe(e auditv1.Event, takeover time.Time) string {
	what := e.RequestURI
	if r := e.ObjectRef; r != nil {
		what = r.Resource
		if r.Subresource != "" {
			what += "/" + r.Subresource
		}
		what += " " + r.Namespace + "/" + r.Name
	}
	code := int32(0)
	if e.ResponseStatus != nil {
		code = e.ResponseStatus.Code
	}
	return fmt.Sprintf("%s %s -> %d, %s after the takeover", e.Verb, what, code, e.StageTimestamp.Sub(takeover).Round(time.Millisecond))
}

func logTrial(t *testing.T, i int, tr fenceTrial) {
	t.Helper()
	codes := map[int32]int{}
	for _, e := range tr.failed {
		if e.ResponseStatus != nil {
			codes[e.ResponseStatus.Code]++
		}
	}
	t.Logf("trial %2d: %s paused, %s took the Lease %s after SIGSTOP; SIGCONT %s later, exit %s after it; "+
		"stale writes: %d admitted, %d denied by the fence, %d failed otherwise (by code %v); the holder's writes denied: %d",
		i, tr.paused, tr.survivor, tr.takeover.Round(time.Millisecond), tr.resumedAfter.Round(time.Millisecond),
		tr.exitAfter.Round(time.Millisecond), len(tr.admitted), len(tr.fenced), len(tr.failed), codes, tr.holderDenied)
	if len(tr.fenced) > 0 {
		e := tr.fenced[0]
		t.Logf("  first denied: %s: %s", describe(e, tr.takeoverAt), e.ResponseStatus.Message)
	}
	for j, e := range tr.admitted {
		if j == 5 {
			t.Logf("  ... and %d more admitted, the last %s", len(tr.admitted)-5, describe(tr.admitted[len(tr.admitted)-1], tr.takeoverAt))
			break
		}
		t.Logf("  admitted: %s", describe(e, tr.takeoverAt))
	}
}

func tail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// podToken creates the Pod object name, run as the operator's
// ServiceAccount (no kubelet runs it), and returns a token of that
// ServiceAccount bound to it, as a kubelet mounts into the operator's
// containers: the API server adds the pod's name to the user's extra.
func podToken(ctx context.Context, t *testing.T, cs kubernetes.Interface, name string) string {
	t.Helper()
	pod, err := cs.CoreV1().Pods(operatorNS).Create(ctx, &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: corev1.PodSpec{ServiceAccountName: names.ServiceAccount,
			Containers: []corev1.Container{{Name: "manager", Image: "controller:latest"}}},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	hour := int64(3600)
	tr, err := cs.CoreV1().ServiceAccounts(operatorNS).CreateToken(ctx, names.ServiceAccount, &authenticationv1.TokenRequest{
		Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: &hour,
			BoundObjectRef: &authenticationv1.BoundObjectReference{Kind: "Pod", APIVersion: "v1", Name: pod.Name, UID: pod.UID}},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return tr.Status.Token
}
