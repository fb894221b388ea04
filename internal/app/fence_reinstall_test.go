package app_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/example/myoperator/internal/names"
	"github.com/example/myoperator/test/framework/manifests"
	"github.com/example/myoperator/test/framework/testenv"
)

// TestFenceFrozenByReinstall shows why config/leader-fence is not in
// config/default. The fence takes the Lease as its parameter; the API
// server watches Leases for it through an informer that, up to at least
// Kubernetes v1.37.2, stops for good once no binding names that kind and
// keeps what it held (kubernetes/kubernetes#130887). Here the binding is
// deleted and created again, as an uninstall and install do, and the
// Lease then moves from pod fence-a to pod fence-b, as a leader change
// does: the API server keeps seeing fence-a as the holder, refuses the
// new leader's writes and admits the old one's. On by default, that would
// stop the operator after its first reinstall until kube-apiserver
// restarts. If the new holder is seen, the bug is fixed in the API server
// under test: the test fails to say that the fence can now be on by
// default (the README says what leaving it off costs).
func TestFenceFrozenByReinstall(t *testing.T) {
	_, cfg, admin := testenv.Start(t, testenv.Options{})
	ctx := context.Background()
	cs := kubernetes.NewForConfigOrDie(cfg)
	for _, ns := range []string{operatorNS, fenceNS, "guestbook"} {
		if err := admin.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
			t.Fatal(err)
		}
	}
	installRBAC(ctx, t, admin)
	pods := map[string]kubernetes.Interface{}
	for _, name := range []string{"fence-a", "fence-b"} {
		podCfg, err := clientcmd.BuildConfigFromFlags("", podKubeconfig(ctx, t, cs, cfg, name))
		if err != nil {
			t.Fatal(err)
		}
		pods[name] = kubernetes.NewForConfigOrDie(podCfg)
	}
	lease := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Namespace: operatorNS, Name: names.LeaderElectionID},
		Spec: coordinationv1.LeaseSpec{HolderIdentity: ptr.To("fence-a_1")}}
	if err := admin.Create(ctx, lease); err != nil {
		t.Fatal(err)
	}
	objs, err := manifests.RenderWithComponents("config/default", "config/leader-fence")
	if err != nil {
		t.Fatal(err)
	}
	var binding client.Object
	for _, o := range objs {
		if strings.HasPrefix(o.GetKind(), "ValidatingAdmissionPolicy") && strings.Contains(o.GetName(), "leader-fence") {
			if err := admin.Create(ctx, o.DeepCopy()); err != nil {
				t.Fatal(err)
			}
			if o.GetKind() == "ValidatingAdmissionPolicyBinding" {
				binding = o
			}
		}
	}
	// write is a leader-only write (a ConfigMap in a Drink's namespace,
	// dry run) by pod's token: nil when admitted.
	write := func(pod string) error {
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "fence-probe", Namespace: fenceNS}}
		_, err := pods[pod].CoreV1().ConfigMaps(fenceNS).Create(ctx, cm, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		return err
	}
	seesHolder := func(holder, other string) string {
		if err := write(holder); err != nil {
			return fmt.Sprintf("the holder %s is refused: %v", holder, err)
		}
		if err := write(other); !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), "does not hold the Lease") {
			return fmt.Sprintf("%s, which does not hold the Lease, is not refused by the fence: %v", other, err)
		}
		return ""
	}
	testenv.Eventually(t, 30*time.Second, func() string { return seesHolder("fence-a", "fence-b") })
	t.Log("installed: the fence admits fence-a, the holder, and refuses fence-b")
	// Without a reinstall, the API server follows the Lease both ways.
	moveLease := func(holder string) {
		t.Helper()
		if err := admin.Get(ctx, client.ObjectKeyFromObject(lease), lease); err != nil {
			t.Fatal(err)
		}
		lease.Spec.HolderIdentity = ptr.To(holder)
		if err := admin.Update(ctx, lease); err != nil {
			t.Fatal(err)
		}
	}
	moveLease("fence-b_2")
	testenv.Eventually(t, 30*time.Second, func() string { return seesHolder("fence-b", "fence-a") })
	moveLease("fence-a_3")
	testenv.Eventually(t, 30*time.Second, func() string { return seesHolder("fence-a", "fence-b") })
	t.Log("without a reinstall the fence follows the Lease to fence-b and back to fence-a")

	// An uninstall and install: the binding goes, and comes back.
	if err := admin.Delete(ctx, binding.DeepCopyObject().(client.Object)); err != nil {
		t.Fatal(err)
	}
	time.Sleep(2 * time.Second)
	if err := admin.Create(ctx, binding.DeepCopyObject().(client.Object)); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, 30*time.Second, func() string { return seesHolder("fence-a", "fence-b") })

	// A leader change.
	moveLease("fence-b_4")
	// Without a reinstall the API server saw each move within a second.
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		if seesHolder("fence-b", "fence-a") == "" {
			t.Fatalf("after the binding was recreated, the API server saw the Lease move to fence-b: kubernetes/kubernetes#130887 " +
				"is fixed in this kube-apiserver; the fence can be on by default (config/default), and this test can go")
		}
		time.Sleep(time.Second)
	}
	t.Logf("10 s after the Lease moved to fence-b, the fence still refuses it (%v) and admits fence-a (%v): "+
		"the API server froze the Lease it saw when the binding was recreated", write("fence-b"), write("fence-a"))
}
