package reconcile_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/cli-utils/pkg/kstatus/status"
	"sigs.k8s.io/controller-runtime/pkg/client"

	operatorv1alpha1 "github.com/example/myoperator/apis/operator/v1alpha1"
	webappv1 "github.com/example/myoperator/apis/webapp/v1"
	"github.com/example/myoperator/reconcile"
	"github.com/example/myoperator/test/framework/testenv"
)

const operandNS = "guestbook" // OperatorConfig's default guestbook.namespace

// runPods does what the StatefulSet controller and the kubelet would (envtest
// runs neither): it creates the StatefulSet's pods from its template, and
// marks them Running and Ready.
func runPods(t *testing.T, g *webappv1.Guestbook) []string {
	t.Helper()
	return runPodsIn(t, g, operandNS)
}

// runPodsIn is runPods in the operand namespace ns.
func runPodsIn(t *testing.T, g *webappv1.Guestbook, ns string) []string {
	t.Helper()
	return testenv.RunStatefulSetPods(testCtx, t, k8s, ns, g.Name)
}

func setPodReady(t *testing.T, name string, ready bool) {
	t.Helper()
	setPodReadyIn(t, operandNS, name, ready)
}

func setPodReadyIn(t *testing.T, ns, name string, ready bool) {
	t.Helper()
	testenv.SetPodReady(testCtx, t, k8s, ns, name, ready)
}

// activeWatch records, from a watch on the operand pods, the highest number
// of pods that carried the active label at the same observed instant.
type activeWatch struct {
	mu      sync.Mutex
	roles   map[string]string
	maxSeen int
	changes int
}

func watchActive(t *testing.T, ctx context.Context, instance string) *activeWatch {
	t.Helper()
	cs := kubernetes.NewForConfigOrDie(cfg)
	w, err := cs.CoreV1().Pods(operandNS).Watch(ctx, metav1.ListOptions{LabelSelector: reconcile.InstanceLabel + "=" + instance})
	if err != nil {
		t.Fatal(err)
	}
	aw := &activeWatch{roles: map[string]string{}}
	go func() {
		defer w.Stop()
		for ev := range w.ResultChan() {
			p, ok := ev.Object.(*corev1.Pod)
			if !ok {
				continue
			}
			aw.mu.Lock()
			role := p.Labels[webappv1.RoleLabel]
			if ev.Type == watch.Deleted {
				role = ""
			}
			if aw.roles[p.Name] != role {
				aw.changes++
			}
			aw.roles[p.Name] = role
			n := 0
			for _, r := range aw.roles {
				if r == webappv1.RoleActive {
					n++
				}
			}
			aw.maxSeen = max(aw.maxSeen, n)
			aw.mu.Unlock()
		}
	}()
	return aw
}

// TestGuestbookFailover: size 3 gives one active and two standby pods and a
// Service that selects the active one; when the active pod stops being
// Ready, a Ready standby is promoted, status and an event say so, and no
// watch event ever shows two active pods.
func TestGuestbookFailover(t *testing.T) {
	ctx, cancel := context.WithCancel(testCtx)
	defer cancel()
	g := &webappv1.Guestbook{ObjectMeta: metav1.ObjectMeta{Name: "failover"},
		Spec: webappv1.GuestbookSpec{Size: 3, ConfigMapName: "failover-cm", Alias: webappv1.AliasPhone}}
	if err := k8s.Create(testCtx, g); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = k8s.Delete(testCtx, g) })
	aw := watchActive(t, ctx, g.Name)
	pods := runPods(t, g)

	var first string
	testenv.Eventually(t, 10*time.Second, func() string {
		if err := k8s.Get(testCtx, client.ObjectKeyFromObject(g), g); err != nil {
			return err.Error()
		}
		if g.Status.Active == "" || len(g.Status.Standby) != 2 || !slices.IsSorted(g.Status.Standby) ||
			!meta.IsStatusConditionTrue(g.Status.Conditions, webappv1.ConditionReady) {
			return fmt.Sprintf("status %+v", g.Status)
		}
		if s := kstatusOf(t, g); s != status.CurrentStatus {
			return "kstatus " + string(s)
		}
		first = g.Status.Active
		return ""
	})
	cm := &corev1.ConfigMap{}
	if err := k8s.Get(testCtx, client.ObjectKey{Namespace: operandNS, Name: "failover-cm"}, cm); err != nil || cm.Data["alias"] != "Phone" {
		t.Errorf("ConfigMap with the Phone defaults: %v %v", cm.Data, err)
	}
	svc := &corev1.Service{}
	if err := k8s.Get(testCtx, client.ObjectKey{Namespace: operandNS, Name: g.Name}, svc); err != nil {
		t.Fatal(err)
	}
	if svc.Spec.Selector[webappv1.RoleLabel] != webappv1.RoleActive || svc.Spec.Selector[reconcile.InstanceLabel] != g.Name {
		t.Errorf("Service selector %v does not select only the active pod", svc.Spec.Selector)
	}
	assertRoles(t, pods, first)

	// The active pod stops being Ready.
	start := time.Now()
	setPodReady(t, first, false)
	var second string
	testenv.Eventually(t, 10*time.Second, func() string {
		if err := k8s.Get(testCtx, client.ObjectKeyFromObject(g), g); err != nil {
			return err.Error()
		}
		if g.Status.Active == first || g.Status.Active == "" {
			return fmt.Sprintf("not failed over: status %+v", g.Status)
		}
		second = g.Status.Active
		return ""
	})
	t.Logf("failover from %s to %s observed in status after %s", first, second, time.Since(start).Round(time.Millisecond))
	assertRoles(t, pods, second)
	if !slices.Contains(g.Status.Standby, first) {
		t.Errorf("the old active pod %s is not standby: %v", first, g.Status.Standby)
	}
	if meta.IsStatusConditionTrue(g.Status.Conditions, webappv1.ConditionReady) || kstatusOf(t, g) != status.InProgressStatus {
		t.Errorf("with a pod not Ready, want Ready=False and kstatus InProgress: %+v", g.Status.Conditions)
	}
	testenv.Eventually(t, 10*time.Second, func() string {
		evs := &eventsv1.EventList{}
		if err := k8s.List(testCtx, evs); err != nil {
			return err.Error()
		}
		for _, e := range evs.Items {
			if e.Regarding.Name == g.Name && e.Reason == reconcile.ReasonFailover {
				return ""
			}
		}
		return "no Failover event"
	})
	aw.mu.Lock()
	defer aw.mu.Unlock()
	t.Logf("watch saw %d role changes; at most %d active at once", aw.changes, aw.maxSeen)
	if aw.maxSeen != 1 {
		t.Errorf("the watch saw %d pods active at the same time", aw.maxSeen)
	}
}

func assertRoles(t *testing.T, pods []string, active string) {
	t.Helper()
	for _, name := range pods {
		p := &corev1.Pod{}
		if err := k8s.Get(testCtx, client.ObjectKey{Namespace: operandNS, Name: name}, p); err != nil {
			t.Fatal(err)
		}
		want := webappv1.RoleStandby
		if name == active {
			want = webappv1.RoleActive
		}
		if got := p.Labels[webappv1.RoleLabel]; got != want {
			t.Errorf("pod %s role %q, want %q", name, got, want)
		}
	}
}

// TestGuestbookNamespaceMove: an edit of guestbook.namespace in the
// accepted OperatorConfig moves the operands; the old ones stay until the
// new ones are Ready, so the application never stops, and then nothing is
// left in the old namespace.
func TestGuestbookNamespaceMove(t *testing.T) {
	const newNS = "guestbook-two"
	oc := &operatorv1alpha1.OperatorConfig{ObjectMeta: metav1.ObjectMeta{Name: operatorv1alpha1.SingletonName}}
	oc.Spec.Guestbook.Namespace = operandNS
	if err := k8s.Create(testCtx, oc); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = k8s.Delete(testCtx, oc) })
	waitConfigAccepted(t, oc)

	g := &webappv1.Guestbook{ObjectMeta: metav1.ObjectMeta{Name: "mover"},
		Spec: webappv1.GuestbookSpec{Size: 1, ConfigMapName: "mover-cm"}}
	if err := k8s.Create(testCtx, g); err != nil {
		t.Fatal(err)
	}
	// Deleted before the config moves back, so that nothing moves then.
	// The OperatorConfig is deleted only once the operator accepted the
	// move back: a deleted OperatorConfig leaves the last accepted
	// configuration in force, and the next tests' operands would go to
	// newNS (seen on a loaded machine: every later Guestbook test failed).
	t.Cleanup(func() {
		_ = k8s.Delete(testCtx, g)
		setGuestbookNamespace(t, oc, operandNS)
		waitConfigAccepted(t, oc)
	})
	runPods(t, g)
	testenv.Eventually(t, 10*time.Second, guestbookReady(g))

	// The new namespace does not exist yet: the operator does not create
	// namespaces, says what an admin must do, and moves nothing.
	setGuestbookNamespace(t, oc, newNS)
	testenv.Eventually(t, 10*time.Second, func() string {
		if err := k8s.Get(testCtx, client.ObjectKeyFromObject(g), g); err != nil {
			return err.Error()
		}
		c := meta.FindStatusCondition(g.Status.Conditions, webappv1.ConditionReady)
		if c == nil || c.Reason != reconcile.ReasonOperandNamespaceForbidden || !strings.Contains(c.Message, "kubectl create namespace "+newNS) {
			return fmt.Sprintf("Ready %+v, want %s naming the namespace to create", c, reconcile.ReasonOperandNamespaceForbidden)
		}
		if g.Status.OperandNamespace != operandNS {
			return fmt.Sprintf("status.operandNamespace %q, want %q while the operands stay", g.Status.OperandNamespace, operandNS)
		}
		return ""
	})
	in := func(ns string, obj client.Object, name string) bool {
		return k8s.Get(testCtx, client.ObjectKey{Namespace: ns, Name: name}, obj) == nil
	}
	if !in(operandNS, &appsv1.StatefulSet{}, g.Name) || !in(operandNS, &corev1.Service{}, g.Name) ||
		!in(operandNS, &networkingv1.NetworkPolicy{}, g.Name) {
		t.Fatal("operands removed while the new namespace does not exist")
	}
	if err := k8s.Create(testCtx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: newNS}}); err != nil {
		t.Fatal(err)
	}
	// The operator looks again within its recheck period.
	testenv.Eventually(t, 20*time.Second, func() string {
		if !in(newNS, &appsv1.StatefulSet{}, g.Name) {
			return "no StatefulSet in the new namespace"
		}
		return ""
	})
	// The pods in the new namespace are fenced as they were in the old.
	checkNetworkPolicy(t, g, newNS)
	// The new pods are not Ready yet: the old operands keep serving.
	time.Sleep(2 * time.Second)
	if !in(operandNS, &appsv1.StatefulSet{}, g.Name) || !in(operandNS, &corev1.Service{}, g.Name) {
		t.Fatal("the old StatefulSet or Service was deleted before the new operands were Ready")
	}
	runPodsIn(t, g, newNS)
	testenv.Eventually(t, 10*time.Second, func() string {
		for kind, obj := range map[string]client.Object{"StatefulSet": &appsv1.StatefulSet{}, "Service": &corev1.Service{},
			"NetworkPolicy": &networkingv1.NetworkPolicy{}} {
			if in(operandNS, obj, g.Name) {
				return kind + " still in the old namespace"
			}
		}
		if in(operandNS, &corev1.ConfigMap{}, "mover-cm") {
			return "ConfigMap still in the old namespace"
		}
		if err := k8s.Get(testCtx, client.ObjectKeyFromObject(g), g); err != nil || g.Status.OperandNamespace != newNS {
			return fmt.Sprintf("status.operandNamespace %q, want %q once moved (%v)", g.Status.OperandNamespace, newNS, err)
		}
		return ""
	})
	testenv.Eventually(t, 10*time.Second, guestbookReady(g))
}

// waitConfigAccepted waits until the operator accepted oc's generation.
func waitConfigAccepted(t *testing.T, oc *operatorv1alpha1.OperatorConfig) {
	t.Helper()
	testenv.Eventually(t, 30*time.Second, func() string {
		if err := k8s.Get(testCtx, client.ObjectKeyFromObject(oc), oc); err != nil {
			return err.Error()
		}
		if oc.Status.ObservedGeneration != oc.Generation || !meta.IsStatusConditionTrue(oc.Status.Conditions, operatorv1alpha1.ConditionAvailable) {
			return fmt.Sprintf("OperatorConfig not accepted: %+v", oc.Status)
		}
		return ""
	})
}

// setGuestbookNamespace edits guestbook.namespace of the OperatorConfig.
func setGuestbookNamespace(t *testing.T, oc *operatorv1alpha1.OperatorConfig, ns string) {
	t.Helper()
	if err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		if err := k8s.Get(testCtx, client.ObjectKeyFromObject(oc), oc); err != nil {
			return err
		}
		oc.Spec.Guestbook.Namespace = ns
		return k8s.Update(testCtx, oc)
	}); err != nil {
		t.Fatal(err)
	}
}

// TestGuestbookNetworkPolicy: every Guestbook's pods are fenced by a
// NetworkPolicy beside them, which the Guestbook controls: it selects the
// pods of that Guestbook's StatefulSet and no other's, admits TCP to the
// HTTP port from any peer and nothing else, and lets the pods send nothing.
func TestGuestbookNetworkPolicy(t *testing.T) {
	g := &webappv1.Guestbook{ObjectMeta: metav1.ObjectMeta{Name: "fenced"},
		Spec: webappv1.GuestbookSpec{Size: 1, ConfigMapName: "fenced-cm"}}
	if err := k8s.Create(testCtx, g); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = k8s.Delete(testCtx, g) })
	checkNetworkPolicy(t, g, operandNS)
}

// checkNetworkPolicy waits for the Guestbook's NetworkPolicy in ns and
// checks it against the pod template of the Guestbook's StatefulSet there.
func checkNetworkPolicy(t *testing.T, g *webappv1.Guestbook, ns string) {
	t.Helper()
	key := client.ObjectKey{Namespace: ns, Name: g.Name}
	np, sts := &networkingv1.NetworkPolicy{}, &appsv1.StatefulSet{}
	testenv.Eventually(t, 20*time.Second, func() string {
		if err := k8s.Get(testCtx, key, np); err != nil {
			return "NetworkPolicy: " + err.Error()
		}
		if err := k8s.Get(testCtx, key, sts); err != nil {
			return "StatefulSet: " + err.Error()
		}
		return ""
	})
	if err := k8s.Get(testCtx, client.ObjectKeyFromObject(g), g); err != nil {
		t.Fatal(err)
	}
	if ref := metav1.GetControllerOf(np); ref == nil || ref.UID != g.UID {
		t.Errorf("NetworkPolicy %s controlled by %+v, want the Guestbook %s", key, ref, g.Name)
	}
	sel, err := metav1.LabelSelectorAsSelector(&np.Spec.PodSelector)
	if err != nil {
		t.Fatal(err)
	}
	pods := labels.Set(sts.Spec.Template.Labels)
	if sel.Empty() || !sel.Matches(pods) {
		t.Errorf("NetworkPolicy selector %q does not select the StatefulSet's pods %v", sel, pods)
	}
	other := labels.Set{reconcile.NameLabel: reconcile.GuestbookAppName, reconcile.InstanceLabel: "another"}
	if sel.Matches(other) {
		t.Errorf("NetworkPolicy selector %q selects another Guestbook's pods %v", sel, other)
	}
	if !slices.Equal(np.Spec.PolicyTypes, []networkingv1.PolicyType{networkingv1.PolicyTypeIngress, networkingv1.PolicyTypeEgress}) {
		t.Errorf("policy types %v, want Ingress and Egress", np.Spec.PolicyTypes)
	}
	if len(np.Spec.Egress) != 0 {
		t.Errorf("egress rules %+v, want none (the pods send nothing)", np.Spec.Egress)
	}
	tcp := corev1.ProtocolTCP
	port := intstr.FromInt32(8080)
	want := []networkingv1.NetworkPolicyIngressRule{{Ports: []networkingv1.NetworkPolicyPort{{Protocol: &tcp, Port: &port}}}}
	if diff := cmp.Diff(want, np.Spec.Ingress); diff != "" {
		t.Errorf("ingress (-want +got): only TCP 8080 from anywhere\n%s", diff)
	}
	if c := sts.Spec.Template.Spec.Containers[0]; len(c.Ports) != 1 || c.Ports[0].ContainerPort != 8080 {
		t.Errorf("container ports %+v: the policy admits 8080, the server's only port", c.Ports)
	}
}

// TestGuestbookSaysStuckPod: a pod that cannot pull its image, as a
// kubelet reports it, turns the Guestbook Ready=False and Stalled within
// seconds, naming the pod, the waiting reason and the image, while the
// active pod keeps serving; once the pod runs, it is Ready again and
// Stalled goes.
func TestGuestbookSaysStuckPod(t *testing.T) {
	g := &webappv1.Guestbook{ObjectMeta: metav1.ObjectMeta{Name: "stuck"},
		Spec: webappv1.GuestbookSpec{Size: 2, ConfigMapName: "stuck-cm"}}
	if err := k8s.Create(testCtx, g); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = k8s.Delete(testCtx, g) })
	pods := runPods(t, g)
	testenv.Eventually(t, 10*time.Second, guestbookReady(g))
	active := g.Status.Active
	stuck := pods[0]
	if stuck == active {
		stuck = pods[1]
	}
	// The image the pod's spec names, which the kubelet failed to pull.
	p := &corev1.Pod{}
	if err := k8s.Get(testCtx, client.ObjectKey{Namespace: operandNS, Name: stuck}, p); err != nil {
		t.Fatal(err)
	}
	image := p.Spec.Containers[0].Image
	setContainerState(t, stuck, corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{
		Reason: "ImagePullBackOff", Message: `Back-off pulling image "` + image + `": not found`}}, image)
	start := time.Now()
	testenv.Eventually(t, 10*time.Second, func() string {
		if err := k8s.Get(testCtx, client.ObjectKeyFromObject(g), g); err != nil {
			return err.Error()
		}
		ready := meta.FindStatusCondition(g.Status.Conditions, webappv1.ConditionReady)
		stalled := meta.FindStatusCondition(g.Status.Conditions, reconcile.ConditionStalled)
		if ready == nil || ready.Status != metav1.ConditionFalse || ready.Reason != reconcile.ReasonPodCannotRun || stalled == nil || stalled.Status != metav1.ConditionTrue {
			return fmt.Sprintf("Ready %+v, Stalled %+v; want Ready=False and Stalled=True, %s", ready, stalled, reconcile.ReasonPodCannotRun)
		}
		for _, want := range []string{"pod " + stuck, "ImagePullBackOff", "image " + image, "pod " + active + " is active and serves"} {
			if !strings.Contains(ready.Message, want) {
				return fmt.Sprintf("Ready's message %q does not say %q", ready.Message, want)
			}
		}
		return ""
	})
	t.Logf("said after %s", time.Since(start).Round(time.Millisecond))
	if g.Status.Active != active {
		t.Errorf("active pod %q, want %q still serving", g.Status.Active, active)
	}
	// The image restored: the pod runs and turns Ready.
	setContainerState(t, stuck, corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: metav1.Now()}}, image)
	setPodReady(t, stuck, true)
	testenv.Eventually(t, 10*time.Second, func() string {
		if msg := guestbookReady(g)(); msg != "" {
			return msg
		}
		if c := meta.FindStatusCondition(g.Status.Conditions, reconcile.ConditionStalled); c != nil {
			return fmt.Sprintf("Stalled %+v after the pod runs", c)
		}
		return ""
	})
}

// setContainerState writes the state of the pod's guestbook container, not
// Ready, as a kubelet reports it.
func setContainerState(t *testing.T, pod string, state corev1.ContainerState, image string) {
	t.Helper()
	if err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		p := &corev1.Pod{}
		if err := k8s.Get(testCtx, client.ObjectKey{Namespace: operandNS, Name: pod}, p); err != nil {
			return err
		}
		p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "guestbook", Image: image, State: state}}
		if state.Running == nil {
			p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionFalse, LastTransitionTime: metav1.Now()}}
		}
		return k8s.Status().Update(testCtx, p)
	}); err != nil {
		t.Fatal(err)
	}
}
