//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/e2e-framework/pkg/envconf"
	"sigs.k8s.io/e2e-framework/pkg/features"

	drinksv1 "github.com/example/myoperator/apis/drinks/v1"
	"github.com/example/myoperator/internal/shard"
	"github.com/example/myoperator/test/framework/shardaudit"
)

const (
	// shardConfig is config/default with config/sharding: three replicas
	// with --shard-drinks, and the fence.
	shardConfig = "config/sharding-default"
	shareNS     = "e2e-share"
	shareDrinks = 150
)

// sharing: the operator rolled out with config/sharding shares the Drinks
// among its three replicas: the bucket Leases cover the 64 buckets once,
// each replica holding its 21 or 22 (read from the Leases, which are what
// each replica serves). While Drinks are created and edited, one replica's
// manager is killed (its pod restarts it) and a fourth replica is added
// (the Deployment scaled to 4): the four end with 16 buckets each and
// every Drink Ready at its generation with its ConfigMap labelled with its
// bucket. On the cluster the suite created, the API server's audit log is
// replayed (test/framework/shardaudit): no write to a Drink's status or
// ConfigMap came from a replica that did not hold the Drink's bucket when
// the request arrived. Afterwards config/default goes back on and the
// fence and the shard Leases are deleted.
func sharing() features.Feature {
	var began time.Time
	return features.New("replicas share the Drinks").WithLabel("area", "sharding").
		Setup(func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			began = time.Now()
			if out, err := kubectl(cfg, "create", "namespace", shareNS); err != nil {
				t.Fatalf("%v: %s", err, out)
			}
			rollOut(ctx, t, cfg, shardConfig)
			return ctx
		}).
		Assess("the three replicas hold every bucket once", func(ctx context.Context, t *testing.T, _ *envconf.Config) context.Context {
			holders := waitSharedBuckets(ctx, t, 3)
			for pod, buckets := range byHolder(holders) {
				t.Logf("%s serves %d buckets: %s", pod, len(buckets), shard.Selector(buckets))
			}
			return ctx
		}).
		Assess("a replica killed and another added while Drinks are written; all converge", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			var written atomic.Int64
			var failures writeFailures
			stop := make(chan struct{})
			done := make(chan struct{})
			go func() {
				defer close(done)
				// A write fails while the killed replica still serves the
				// webhook behind the Service; the writer goes round until
				// it is told to stop and every Drink exists, so that the
				// count below is the operator's doing, not the writer's.
				exists := map[string]bool{}
				var stopped time.Time
				for i := 0; ; i++ {
					select {
					case <-stop:
						if stopped.IsZero() {
							stopped = time.Now()
						}
						// Two minutes more at most: a webhook that stays
						// down fails the count below instead of hanging.
						if len(exists) == shareDrinks || time.Since(stopped) > 2*time.Minute {
							return
						}
					default:
					}
					if ctx.Err() != nil {
						return
					}
					name := "share-" + strconv.Itoa(i%shareDrinks)
					d := &drinksv1.Drink{}
					err := kc.Get(ctx, client.ObjectKey{Namespace: shareNS, Name: name}, d)
					switch {
					case apierrors.IsNotFound(err):
						d = &drinksv1.Drink{ObjectMeta: metav1.ObjectMeta{Namespace: shareNS, Name: name},
							Spec: drinksv1.DrinkSpec{DisplayName: "Share", Beverage: "tea", Size: "Small"}}
						err = kc.Create(ctx, d)
					case err == nil:
						d.Spec.DisplayName = "Share " + strconv.Itoa(i)
						err = kc.Update(ctx, d)
					}
					if err == nil {
						exists[name] = true
						written.Add(1)
					} else {
						failures.add(err)
					}
					time.Sleep(25 * time.Millisecond)
				}
			}()
			time.Sleep(5 * time.Second)
			holders := waitSharedBuckets(ctx, t, 3)
			victim := holders[0]
			killedAt := time.Now()
			if err := killLeader(cfg, victim); err != nil {
				t.Fatalf("kill %s: %v", victim, err)
			}
			if out, err := kubectl(cfg, "scale", "-n", operatorNS, "deployment/"+operatorDeployment, "--replicas=4"); err != nil {
				t.Fatalf("kubectl scale: %v: %s", err, out)
			}
			holders = waitSharedBuckets(ctx, t, 4)
			t.Logf("%s: %s's manager killed and a fourth replica added; the four hold 16 buckets each (%v) after %.1f s",
				killMethod(), victim, shareCounts(holders), time.Since(killedAt).Seconds())
			close(stop)
			<-done
			waitShareReady(ctx, t)
			t.Logf("%d Drink writes during the run; every Drink Ready at its generation %.1f s after the kill",
				written.Load(), time.Since(killedAt).Seconds())
			failures.judge(t, killedAt)
			uids := shareUIDs(ctx, t)
			cms := &corev1.ConfigMapList{}
			if err := kc.List(ctx, cms, client.InNamespace(shareNS), client.HasLabels{"example.com/drink"}); err != nil {
				t.Fatal(err)
			}
			for _, cm := range cms.Items {
				if want := shard.BucketValue(shard.BucketOf(uids[cm.Name])); cm.Labels[shard.BucketLabel] != want {
					t.Errorf("ConfigMap %s: bucket label %q, want %q", cm.Name, cm.Labels[shard.BucketLabel], want)
				}
			}
			return ctx
		}).
		Assess("no Drink written by a replica without its bucket (the audit log)", func(ctx context.Context, t *testing.T, _ *envconf.Config) context.Context {
			if !mode.created() {
				t.Skip("the audit log is the suite's own cluster's (an existing cluster's is its admin's)")
			}
			path := filepath.Join(kwokDir(), "clusters", clusterName, "logs", "audit.log")
			events, err := shardaudit.Read(path, began, time.Now())
			if err != nil {
				t.Fatal(err)
			}
			res := shardaudit.Replay(events, operatorNS, shareNS, shareUIDs(ctx, t))
			t.Logf("audit: %d writes of the replicas to the Drinks' status and ConfigMaps admitted or possibly applied (%d answered with a server error or none), %d objects written by more than one replica, %d by one without the bucket; refused by pod %v",
				res.Written, res.Uncertain, res.ByTwo, len(res.Stale), res.Refused)
			for _, s := range res.Stale {
				t.Errorf("written without holding the bucket: %s", s)
			}
			// Answered 504 or 500, perhaps refused by the fence after the API
			// server gave up answering: said, not failed (shardaudit.Result).
			for _, s := range res.MaybeStale {
				t.Logf("written without holding the bucket, if the API server applied it: %s", s)
			}
			if res.Written == 0 {
				t.Error("the audit log shows no write of the replicas")
			}
			return ctx
		}).
		Teardown(func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			if out, err := kubectl(cfg, "delete", "drinks.example.com", "--all", "-n", shareNS, "--timeout=2m"); err != nil {
				t.Errorf("kubectl delete drinks: %v: %s", err, out)
			}
			// The fence first: the leader of config/default is no shard
			// member, so it would be admitted anyway, but nothing of the
			// component should outlive it.
			for _, args := range [][]string{
				{"delete", "validatingwebhookconfiguration", "myoperator-shard-fence", "--ignore-not-found"},
			} {
				if out, err := kubectl(cfg, args...); err != nil {
					t.Errorf("kubectl %s: %v: %s", strings.Join(args, " "), err, out)
				}
			}
			// The install takes the replicas back from kubectl scale.
			rollOut(ctx, t, cfg, installedConfig(), "--force-conflicts")
			for _, args := range [][]string{
				{"delete", "lease", "-n", operatorNS, "-l", shard.BucketLabel, "--ignore-not-found"},
				{"delete", "lease", "-n", operatorNS, "-l", shard.MemberLabel, "--ignore-not-found"},
				{"delete", "namespace", shareNS, "--wait=false", "--ignore-not-found"},
			} {
				if out, err := kubectl(cfg, args...); err != nil {
					t.Errorf("kubectl %s: %v: %s", strings.Join(args, " "), err, out)
				}
			}
			return ctx
		}).
		Feature()
}

// waitSharedBuckets waits until n running manager pods hold the 64 bucket
// Leases between them, each 64/n rounded down or up, and no one else; it
// returns the holder of each bucket.
func waitSharedBuckets(ctx context.Context, t *testing.T, n int) []string {
	t.Helper()
	var holders []string
	lo, hi := shard.Buckets/n, (shard.Buckets+n-1)/n
	err := poll(ctx, 3*time.Minute, func() string {
		pods, err := operatorPodList(ctx)
		if err != nil {
			return err.Error()
		}
		var names []string
		for _, p := range pods {
			names = append(names, p.name)
		}
		if len(names) != n {
			return fmt.Sprintf("%d manager pods %v, want %d", len(names), names, n)
		}
		list := &coordinationv1.LeaseList{}
		if err := kc.List(ctx, list, client.InNamespace(operatorNS), client.HasLabels{shard.BucketLabel}); err != nil {
			return err.Error()
		}
		holders = make([]string, shard.Buckets)
		for _, l := range list.Items {
			if b, ok := shard.ParseBucket(l.Labels[shard.BucketLabel]); ok && l.Name == shard.BucketLeaseName(b) {
				holders[b] = ptr.Deref(l.Spec.HolderIdentity, "")
			}
		}
		for b, h := range holders {
			if !slices.Contains(names, h) {
				return fmt.Sprintf("bucket %d held by %q, not one of the pods %v", b, h, names)
			}
		}
		for pod, buckets := range byHolder(holders) {
			if len(buckets) < lo || len(buckets) > hi {
				return fmt.Sprintf("%s holds %d buckets, want %d to %d", pod, len(buckets), lo, hi)
			}
		}
		return ""
	})
	if err != nil {
		t.Fatal(err)
	}
	return holders
}

func shareCounts(holders []string) map[string]int {
	n := map[string]int{}
	for pod, buckets := range byHolder(holders) {
		n[pod] = len(buckets)
	}
	return n
}

func byHolder(holders []string) map[string][]int {
	m := map[string][]int{}
	for b, h := range holders {
		m[h] = append(m[h], b)
	}
	return m
}

// waitShareReady waits until every Drink of shareNS is Ready at its
// generation.
func waitShareReady(ctx context.Context, t *testing.T) {
	t.Helper()
	err := poll(ctx, 3*time.Minute, func() string {
		list := &drinksv1.DrinkList{}
		if err := kc.List(ctx, list, client.InNamespace(shareNS)); err != nil {
			return err.Error()
		}
		if len(list.Items) != shareDrinks {
			return fmt.Sprintf("%d Drinks, want %d", len(list.Items), shareDrinks)
		}
		for _, d := range list.Items {
			c := meta.FindStatusCondition(d.Status.Conditions, drinksv1.ConditionReady)
			if c == nil || c.Status != metav1.ConditionTrue || c.ObservedGeneration != d.Generation {
				return fmt.Sprintf("Drink %s not Ready at generation %d: %+v", d.Name, d.Generation, c)
			}
		}
		return ""
	})
	if err != nil {
		t.Fatal(err)
	}
}

func shareUIDs(ctx context.Context, t *testing.T) map[string]types.UID {
	t.Helper()
	list := &drinksv1.DrinkList{}
	if err := kc.List(ctx, list, client.InNamespace(shareNS)); err != nil {
		t.Fatal(err)
	}
	uids := map[string]types.UID{}
	for _, d := range list.Items {
		uids[d.Name] = d.UID
	}
	return uids
}

// poll calls cond every half second until it returns "" or timeout
// passes; the error is cond's last explanation.
func poll(ctx context.Context, timeout time.Duration, cond func() string) error {
	deadline := time.Now().Add(timeout)
	for {
		why := cond()
		if why == "" {
			return nil
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return fmt.Errorf("after %s: %s", timeout, why)
		}
		time.Sleep(500 * time.Millisecond)
	}
}

// killedWebhookWindow is how long after a replica's SIGKILL a user's write
// may fail calling its webhook: the API server keeps sending webhook calls
// to the dead pod's IP until its readiness probe has failed (3 probes 5 s
// apart, config/manager/manager.yaml) and the Service's endpoints and the
// NAT rule have followed, under make ci's load.
const killedWebhookWindow = 30 * time.Second

// writeFailures are a user's Drink writes that failed, with when.
type writeFailures struct {
	mu   sync.Mutex
	list []writeFailure
}

type writeFailure struct {
	at  time.Time
	err error
}

func (w *writeFailures) add(err error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.list = append(w.list, writeFailure{at: time.Now(), err: err})
}

// judge fails the test on a user's write that failed for anything but a
// conflict (an update of a Drink whose status the operator wrote since the
// read) or a call to the killed replica's webhook in the window after the
// kill: the fence and the sharing must never refuse or break a user's
// write, and the replicas left must take the webhook's calls at once.
func (w *writeFailures) judge(t *testing.T, killedAt time.Time) {
	t.Helper()
	w.mu.Lock()
	defer w.mu.Unlock()
	var conflicts, webhook int
	var lastWebhook time.Duration
	for _, f := range w.list {
		after := f.at.Sub(killedAt)
		switch {
		case apierrors.IsConflict(f.err):
			conflicts++
		case strings.Contains(f.err.Error(), "failed calling webhook") && after >= 0 && after <= killedWebhookWindow:
			webhook++
			lastWebhook = max(lastWebhook, after)
		default:
			t.Errorf("a user's Drink write failed %.1f s after the kill: %v", after.Seconds(), f.err)
		}
	}
	t.Logf("user writes failed: %d conflicts, %d calls to the killed replica's webhook within %s of the kill (the last %.1f s after it), %d otherwise",
		conflicts, webhook, killedWebhookWindow, lastWebhook.Seconds(), len(w.list)-conflicts-webhook)
}
