package app_test

import (
	"context"
	"fmt"
	"net/url"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	auditv1 "k8s.io/apiserver/pkg/apis/audit/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	crwebhook "sigs.k8s.io/controller-runtime/pkg/webhook"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	drinksv1 "github.com/example/myoperator/apis/drinks/v1"
	"github.com/example/myoperator/internal/names"
	"github.com/example/myoperator/internal/opconfig"
	"github.com/example/myoperator/internal/scheme"
	"github.com/example/myoperator/internal/shard"
	"github.com/example/myoperator/test/framework/manifests"
	"github.com/example/myoperator/test/framework/shardaudit"
	"github.com/example/myoperator/test/framework/testenv"
)

const (
	shardNS         = "shared"
	shardUnservedNS = "not-served"
	shardDrinks     = 240
)

// TestShardedReplicas: three manager processes with --shard-drinks, each a
// pod of the operator's ServiceAccount, share 240 Drinks on an API server
// with the ShardedListAndWatch feature, behind config/sharding's fence.
// The bucket Leases cover the 64 buckets exactly once, each replica holds
// 21 or 22, every Drink is Ready with its ConfigMap labelled with its
// bucket, and each replica's log names the selector it watches with. Then,
// while a writer keeps changing Drinks, one replica is SIGKILLed (its
// Leases left behind, as a crash leaves them) and a fourth is added: the
// others take its buckets once its member Lease is stale, the newcomer
// gets its share, and every Drink converges at its last generation. The
// replicas serve one namespace (--watch-namespaces): a Drink in another is
// left alone.
//
// The API server's audit log is the write audit: the holder of every
// bucket over time follows from the writes to its Lease (the new holder
// writes an acquire, the old one a release), and no write to a Drink's
// status or ConfigMap may be admitted from a pod that did not hold the
// Drink's bucket when the request arrived. Finally the killed replica's
// token, still a member's (its member Lease is stale, not gone), is
// refused a write to a Drink it served, with the bucket named.
func TestShardedReplicas(t *testing.T) {
	const gates = "ShardedListAndWatch=true"
	testenv.SkipUnlessGates(t, gates)
	began := time.Now()
	bin := buildManager(t)
	auditLog := t.TempDir() + "/audit.log"
	env, err := testenv.New(testenv.Options{AuditLog: auditLog, FeatureGates: gates})
	if err != nil {
		t.Fatal(err)
	}
	fence := shardFenceConfig(t)
	env.WebhookInstallOptions.LocalServingHost = "127.0.0.1"
	env.WebhookInstallOptions.ValidatingWebhooks = append(env.WebhookInstallOptions.ValidatingWebhooks, fence)
	cfg, err := env.Start()
	if err != nil {
		t.Fatalf("starting the API server: %v", err)
	}
	t.Cleanup(func() { _ = env.Stop() })
	admin, err := client.New(cfg, client.Options{Scheme: env.Scheme})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	// The fence is served here, from the project's handler, on envtest's
	// local webhook port: the replicas' own webhook servers each have a
	// port of their own, and a webhook configuration names one address.
	wo := env.WebhookInstallOptions
	srv := crwebhook.NewServer(crwebhook.Options{Host: wo.LocalServingHost, Port: wo.LocalServingPort, CertDir: wo.LocalServingCertDir})
	srv.Register(shard.FencePath, &admission.Webhook{Handler: &shard.Fence{Reader: admin, Namespace: operatorNS}})
	go func() { _ = srv.Start(ctx) }()

	for _, ns := range []string{operatorNS, shardNS, "guestbook", shardUnservedNS} {
		if err := admin.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
			t.Fatal(err)
		}
	}
	installRBAC(ctx, t, admin)
	cs := kubernetes.NewForConfigOrDie(cfg)
	pods := []string{"myoperator-controller-manager-a", "myoperator-controller-manager-b", "myoperator-controller-manager-c", "myoperator-controller-manager-d"}
	kubeconfigs := map[string]string{}
	for _, pod := range pods {
		kubeconfigs[pod] = podKubeconfig(ctx, t, cs, cfg, pod)
	}
	for i := range shardDrinks {
		// No mutating webhook runs here: the authored version is
		// written as it would.
		if err := admin.Create(ctx, &drinksv1.Drink{ObjectMeta: metav1.ObjectMeta{Namespace: shardNS, Name: fmt.Sprintf("d%03d", i),
			Annotations: map[string]string{drinksv1.AuthoredVersionAnnotation: "v1"}},
			Spec: drinksv1.DrinkSpec{DisplayName: "x", Beverage: "tea"}}); err != nil {
			t.Fatal(err)
		}
	}
	// A Drink in a namespace the replicas do not serve
	// (--watch-namespaces): no replica may touch it.
	unserved := &drinksv1.Drink{ObjectMeta: metav1.ObjectMeta{Namespace: shardUnservedNS, Name: "not-ours",
		Annotations: map[string]string{drinksv1.AuthoredVersionAnnotation: "v1"}},
		Spec: drinksv1.DrinkSpec{DisplayName: "x", Beverage: "tea"}}
	if err := admin.Create(ctx, unserved); err != nil {
		t.Fatal(err)
	}
	replicas := map[string]*fenceReplica{}
	for _, pod := range pods[:3] {
		replicas[pod] = startShardReplica(t, bin, kubeconfigs[pod], pod)
	}
	holders := waitBucketsHeld(ctx, t, admin, pods[:3])
	t.Logf("3 replicas: buckets held %v", shareSizes(holders))
	waitSharedDrinksReady(ctx, t, admin)
	checkConfigMapBuckets(ctx, t, admin)
	for pod, r := range replicas {
		if !strings.Contains(r.out.String(), "shardRange(object.metadata.uid") {
			t.Errorf("%s does not log the shard selector it watches with:\n%s", pod, tail(r.out.String(), 3000))
		}
		if strings.Contains(r.out.String(), "ignores the shard selector") {
			t.Errorf("%s filtered on the client, though the API server has the feature gate", pod)
		}
	}

	// Under load: a replica killed, another added.
	var edits atomic.Int64
	stopWriter := make(chan struct{})
	writerDone := make(chan struct{})
	go func() {
		defer close(writerDone)
		for i := 0; ; i++ {
			select {
			case <-stopWriter:
				return
			default:
			}
			d := &drinksv1.Drink{}
			if err := admin.Get(ctx, client.ObjectKey{Namespace: shardNS, Name: fmt.Sprintf("d%03d", i%shardDrinks)}, d); err != nil {
				continue
			}
			d.Spec.DisplayName = fmt.Sprintf("edit %d", i)
			if admin.Update(ctx, d) == nil {
				edits.Add(1)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}()
	time.Sleep(2 * time.Second)
	// a, paused, is not the leader: a leader paused past its Lease exits
	// when it resumes (controller-runtime ends a manager that lost its
	// leadership), and a must come back as a member. b and c are the
	// others, in either order; d joins.
	a, b, c := followerFirst(ctx, t, admin, pods[:3])
	d := pods[3]

	// a paused past its member Lease's duration, d added: b, c and d
	// take a's buckets, though a still holds their Leases.
	pausedAt := time.Now()
	if err := replicas[a].cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	replicas[d] = startShardReplica(t, bin, kubeconfigs[d], d)
	holders = waitBucketsHeld(ctx, t, admin, []string{b, c, d})
	t.Logf("%s paused, %s added: buckets held %v after %.1f s", a, d, shareSizes(holders), time.Since(pausedAt).Seconds())

	// a resumed: its reconciles in flight are refused until it sees its
	// buckets gone; then it rejoins and the four share the buckets.
	resumedAt := time.Now()
	if err := replicas[a].cmd.Process.Signal(syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	holders = waitBucketsHeld(ctx, t, admin, []string{a, b, c, d})
	lastHolders := holders
	t.Logf("%s resumed: buckets held %v after %.1f s", a, shareSizes(holders), time.Since(resumedAt).Seconds())

	// b killed: its Leases stay behind, as a crash leaves them, until the
	// others see its member Lease stale.
	killedAt := time.Now()
	if err := replicas[b].cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	if err := <-replicas[b].done; err == nil {
		t.Fatalf("%s exited with no error after SIGKILL", b)
	}
	holders = waitBucketsHeld(ctx, t, admin, []string{a, c, d})
	rebalanced := time.Since(killedAt)
	close(stopWriter)
	<-writerDone
	waitSharedDrinksReady(ctx, t, admin)
	converged := time.Since(killedAt)
	t.Logf("%s killed: buckets held %v after %.1f s, every Drink Ready at its generation after %.1f s (%d edits since the pause)",
		b, shareSizes(holders), rebalanced.Seconds(), converged.Seconds(), edits.Load())
	checkConfigMapBuckets(ctx, t, admin)
	if err := admin.Get(ctx, client.ObjectKeyFromObject(unserved), unserved); err != nil {
		t.Fatal(err)
	}
	cms := &corev1.ConfigMapList{}
	if err := admin.List(ctx, cms, client.InNamespace(shardUnservedNS), client.HasLabels{"example.com/drink"}); err != nil {
		t.Fatal(err)
	}
	if len(unserved.Status.Conditions) > 0 || len(cms.Items) > 0 {
		t.Errorf("a Drink outside --watch-namespaces was reconciled: status %+v, %d Drink ConfigMaps in its namespace", unserved.Status, len(cms.Items))
	}

	// The write audit.
	uids := drinkUIDs(ctx, t, admin)
	events := readAudit(t, auditLog, began, time.Now())
	checkConfigMapReads(t, events)
	res := shardaudit.Replay(events, operatorNS, shardNS, uids)
	t.Logf("audit: %d writes of the replicas to Drinks' status and ConfigMaps admitted or possibly applied (%d answered with a server error or none), %d objects written by more than one replica, %d by a replica without the bucket; refused writes by pod %v (%s resumed %.1f s into the run)",
		res.Written, res.Uncertain, res.ByTwo, len(res.Stale), res.Refused, a, resumedAt.Sub(began).Seconds())
	for _, s := range res.Stale {
		t.Errorf("written without holding the bucket: %s", s)
	}
	// Answered 504 or 500, perhaps refused by the fence after the API
	// server gave up answering: said, not failed (shardaudit.Result).
	for _, s := range res.MaybeStale {
		t.Logf("written without holding the bucket, if the API server applied it: %s", s)
	}
	if res.Written == 0 {
		t.Error("the audit shows no write of the replicas")
	}

	// The killed replica's token is still a member's: the fence refuses
	// it a Drink of a bucket it no longer holds, and names the bucket.
	killed := b
	stalePod := podClient(t, kubeconfigs[killed])
	// A Drink of a bucket b held when it was killed.
	var probe *drinksv1.Drink
	list := &drinksv1.DrinkList{}
	if err := admin.List(ctx, list, client.InNamespace(shardNS)); err != nil {
		t.Fatal(err)
	}
	for i := range list.Items {
		if held := lastHolders[shard.BucketOf(list.Items[i].UID)]; held == killed {
			probe = &list.Items[i]
			break
		}
	}
	if probe == nil {
		t.Fatalf("no Drink in the buckets of %s", killed)
	}
	patch := client.MergeFrom(probe.DeepCopy())
	probe.Status.ConfigMapName = "stale"
	err = stalePod.Status().Patch(ctx, probe, patch, client.DryRunAll)
	want := fmt.Sprintf("does not hold bucket %d of the Drinks", shard.BucketOf(probe.UID))
	if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), want) {
		t.Errorf("a status write of the killed replica: %v, want forbidden: %s", err, want)
	} else {
		t.Logf("the killed replica's write is refused: %v", err)
	}
	holder := holders[shard.BucketOf(probe.UID)]
	holderClient := podClient(t, kubeconfigs[holder])
	if err := holderClient.Status().Patch(ctx, probe, patch, client.DryRunAll); err != nil {
		t.Errorf("the bucket's holder %s is refused: %v", holder, err)
	}
}

// followerFirst orders pods so that the first does not hold the leader's
// Lease (its holder is <pod>_<uuid>).
func followerFirst(ctx context.Context, t *testing.T, admin client.Client, pods []string) (string, string, string) {
	t.Helper()
	lease := &coordinationv1.Lease{}
	if err := admin.Get(ctx, client.ObjectKey{Namespace: operatorNS, Name: names.LeaderElectionID}, lease); err != nil {
		t.Fatal(err)
	}
	leader := strings.SplitN(ptr.Deref(lease.Spec.HolderIdentity, ""), "_", 2)[0]
	order := slices.Clone(pods)
	slices.SortStableFunc(order, func(x, y string) int {
		switch {
		case x == leader:
			return 1
		case y == leader:
			return -1
		}
		return 0
	})
	return order[0], order[1], order[2]
}

// podClient is a client with a pod's kubeconfig (podKubeconfig).
func podClient(t *testing.T, kubeconfig string) client.Client {
	t.Helper()
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	c, err := client.New(cfg, client.Options{Scheme: scheme.New()})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// shardFenceConfig is config/sharding's fence as config/default with the
// component renders it.
func shardFenceConfig(t *testing.T) *admissionregistrationv1.ValidatingWebhookConfiguration {
	t.Helper()
	objs, err := manifests.RenderWithComponents("config/default", "config/sharding")
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range objs {
		if o.GetKind() != "ValidatingWebhookConfiguration" || o.GetName() != "myoperator-shard-fence" {
			continue
		}
		c := &admissionregistrationv1.ValidatingWebhookConfiguration{}
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(o.UnstructuredContent(), c); err != nil {
			t.Fatal(err)
		}
		return c
	}
	t.Fatal("config/sharding renders no ValidatingWebhookConfiguration myoperator-shard-fence")
	return nil
}

// startShardReplica starts a replica that shares the Drinks. Its leader
// election gets longer durations than startReplica's (the later flags
// win): who leads is not what the sharing tests are about, and with a 2 s
// renew deadline a leader whose Lease reads timed out twice on a loaded
// machine (a fresh-machine make ci) lost the Lease and exited, ending the
// test. The shares' own Leases keep their short durations.
func startShardReplica(t *testing.T, bin, kubeconfig, pod string) *fenceReplica {
	t.Helper()
	return startReplica(t, bin, kubeconfig, pod, "--shard-drinks", "--shard-member-lease-duration=4s", "--shard-renew-period=1s",
		"--webhook-drain-period=0s", "--watch-namespaces="+shardNS,
		"--leader-elect-lease-duration=8s", "--leader-elect-renew-deadline=6s", "--leader-elect-retry-period=1s")
}

// waitBucketsHeld waits until the bucket Leases cover the 64 buckets, each
// held by one of pods, each of pods holding 21 or 22 (64/3) or 16 (64/4),
// and returns the holder of each bucket.
func waitBucketsHeld(ctx context.Context, t *testing.T, admin client.Client, pods []string) []string {
	t.Helper()
	var holders []string
	testenv.Eventually(t, 90*time.Second, func() string {
		list := &coordinationv1.LeaseList{}
		if err := admin.List(ctx, list, client.InNamespace(operatorNS), client.HasLabels{shard.BucketLabel}); err != nil {
			return err.Error()
		}
		holders = make([]string, shard.Buckets)
		for _, l := range list.Items {
			b, ok := shard.ParseBucket(l.Labels[shard.BucketLabel])
			if !ok || l.Name != shard.BucketLeaseName(b) {
				return fmt.Sprintf("Lease %s is not a bucket's", l.Name)
			}
			holders[b] = ptr.Deref(l.Spec.HolderIdentity, "")
		}
		for b, h := range holders {
			if !slices.Contains(pods, h) {
				return fmt.Sprintf("bucket %d is held by %q, want one of %v", b, h, pods)
			}
		}
		sizes := shareSizes(holders)
		lo, hi := shard.Buckets/len(pods), (shard.Buckets+len(pods)-1)/len(pods)
		for _, pod := range pods {
			if n := sizes[pod]; n < lo || n > hi {
				return fmt.Sprintf("shares %v, want %d to %d each", sizes, lo, hi)
			}
		}
		return ""
	})
	return holders
}

func shareSizes(holders []string) map[string]int {
	n := map[string]int{}
	for _, h := range holders {
		n[h]++
	}
	return n
}

// waitSharedDrinksReady: every Drink Ready at its generation.
func waitSharedDrinksReady(ctx context.Context, t *testing.T, admin client.Client) {
	t.Helper()
	testenv.Eventually(t, 90*time.Second, func() string {
		list := &drinksv1.DrinkList{}
		if err := admin.List(ctx, list, client.InNamespace(shardNS)); err != nil {
			return err.Error()
		}
		var behind []string
		var first *drinksv1.Drink
		for i, d := range list.Items {
			c := meta.FindStatusCondition(d.Status.Conditions, drinksv1.ConditionReady)
			if c == nil || c.Status != metav1.ConditionTrue || c.ObservedGeneration != d.Generation {
				behind = append(behind, d.Name)
				if first == nil {
					first = &list.Items[i]
				}
			}
		}
		if len(behind) > 0 {
			return fmt.Sprintf("%d Drinks not Ready at their generation, e.g. %v; %s generation %d status %+v", len(behind), behind[:min(5, len(behind))],
				first.Name, first.Generation, first.Status)
		}
		return ""
	})
}

// checkConfigMapBuckets: every Drink's ConfigMap carries its bucket.
func checkConfigMapBuckets(ctx context.Context, t *testing.T, admin client.Client) {
	t.Helper()
	uids := drinkUIDs(ctx, t, admin)
	list := &corev1.ConfigMapList{}
	if err := admin.List(ctx, list, client.InNamespace(shardNS), client.HasLabels{names.DrinkLabel}); err != nil {
		t.Fatal(err)
	}
	if len(list.Items) != shardDrinks {
		t.Errorf("%d Drink ConfigMaps, want %d", len(list.Items), shardDrinks)
	}
	for _, cm := range list.Items {
		if want := shard.BucketValue(shard.BucketOf(uids[cm.Name])); cm.Labels[shard.BucketLabel] != want {
			t.Errorf("ConfigMap %s: bucket label %q, want %q", cm.Name, cm.Labels[shard.BucketLabel], want)
		}
	}
}

func drinkUIDs(ctx context.Context, t *testing.T, admin client.Client) map[string]types.UID {
	t.Helper()
	list := &drinksv1.DrinkList{}
	if err := admin.List(ctx, list, client.InNamespace(shardNS)); err != nil {
		t.Fatal(err)
	}
	uids := map[string]types.UID{}
	for _, d := range list.Items {
		uids[d.Name] = d.UID
	}
	return uids
}

// startReplica starts a manager process as pod, with leader election on
// short timings, its own webhook server, and args.
func startReplica(t *testing.T, bin, kubeconfig, pod string, args ...string) *fenceReplica {
	t.Helper()
	r := &fenceReplica{pod: pod, out: &lockedBuffer{}, done: make(chan error, 1)}
	all := append([]string{"--kubeconfig", kubeconfig, "--namespace", operatorNS, "--leader-elect",
		"--leader-elect-lease-duration=3s", "--leader-elect-renew-deadline=2s", "--leader-elect-retry-period=500ms",
		"--metrics-bind-address=0", "--health-probe-bind-address=0", "--zap-devel"}, ownWebhookArgs(t)...)
	r.cmd = exec.Command(bin, append(all, args...)...)
	r.cmd.Env = append(r.cmd.Environ(), "POD_NAME="+pod)
	r.cmd.Stdout, r.cmd.Stderr = r.out, r.out
	if err := r.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { r.done <- r.cmd.Wait() }()
	var once sync.Once
	t.Cleanup(func() {
		once.Do(func() {
			_ = r.cmd.Process.Signal(syscall.SIGCONT)
			_ = r.cmd.Process.Kill()
			if t.Failed() {
				t.Logf("%s log:\n%s", pod, tail(r.out.String(), 4000))
			}
		})
	})
	return r
}

// checkConfigMapReads: every list and watch of ConfigMaps a replica made in
// the served namespace or the operator's (or across the cluster) selects
// its buckets by the label the reconciler writes, or is the accepted-config
// record by its name: a replica holds the ConfigMaps of its share, not
// every Drink's. The OperatorConfig controller, which runs on every
// replica, once watched the record through the manager's cache, which
// holds every ConfigMap with the operator's label: each replica then held
// all the Drinks' ConfigMaps, and its heap doubled (docs/sharding.md).
func checkConfigMapReads(t *testing.T, events []auditv1.Event) {
	t.Helper()
	reads := 0
	for _, e := range events {
		if e.ObjectRef == nil || e.ObjectRef.Resource != "configmaps" || (e.Verb != "list" && e.Verb != "watch") {
			continue
		}
		if _, ok := e.User.Extra["authentication.kubernetes.io/pod-name"]; !ok {
			continue // not a replica
		}
		if ns := e.ObjectRef.Namespace; ns != "" && ns != shardNS && ns != operatorNS {
			continue // the operand namespace, the leader's Guestbook work
		}
		reads++
		u, err := url.Parse(e.RequestURI)
		if err != nil {
			t.Fatal(err)
		}
		q := u.Query()
		if q.Get("fieldSelector") == "metadata.name="+opconfig.RecordName && e.ObjectRef.Namespace == operatorNS {
			continue
		}
		if !strings.Contains(q.Get("labelSelector"), shard.BucketLabel) {
			t.Errorf("%s %s ConfigMaps without its buckets' selector: %s", e.User.Extra["authentication.kubernetes.io/pod-name"], e.Verb, e.RequestURI)
		}
	}
	if reads == 0 {
		t.Error("the audit shows no list or watch of ConfigMaps by the replicas")
	}
}
