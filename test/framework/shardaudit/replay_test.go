package shardaudit

import (
	"strconv"
	"strings"
	"testing"
	"time"

	authnv1 "k8s.io/api/authentication/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	auditv1 "k8s.io/apiserver/pkg/apis/audit/v1"

	"github.com/example/myoperator/internal/shard"
)

const (
	opNS    = "myoperator-system"
	drinkNS = "cafe"
)

var (
	t0   = time.Date(2026, 12, 5, 12, 0, 0, 0, time.UTC)
	uids = map[string]types.UID{"mocha": "6a1f0c3e-0000-4000-8000-000000000001"}
)

// at is t0 plus n seconds.
func at(n float64) time.Time { return t0.Add(time.Duration(n * float64(time.Second))) }

// event is one completed request of pod, received at recv and completed
// at done, answered code (0: no status).
func event(pod, verb string, ref auditv1.ObjectReference, recv, done time.Time, code int32) auditv1.Event {
	e := auditv1.Event{
		Stage: auditv1.StageResponseComplete, Verb: verb, ObjectRef: &ref,
		User:                     authnv1.UserInfo{Username: "system:serviceaccount:" + opNS + ":myoperator-controller-manager", Extra: map[string]authnv1.ExtraValue{podNameExtra: {pod}}},
		RequestReceivedTimestamp: metav1.NewMicroTime(recv), StageTimestamp: metav1.NewMicroTime(done),
	}
	if code != 0 {
		e.ResponseStatus = &metav1.Status{Code: code}
	}
	return e
}

// lease is pod's admitted write of the Drink mocha's bucket Lease at s
// seconds: an acquire, or a release when pod holds it.
func lease(pod string, s float64) auditv1.Event {
	b := shard.BucketOf(uids["mocha"])
	return event(pod, "update", auditv1.ObjectReference{Resource: "leases", APIGroup: "coordination.k8s.io", Namespace: opNS, Name: shard.BucketLeaseName(b)}, at(s), at(s), 200)
}

// configMap is pod's patch of the ConfigMap of Drink name, received at
// recv seconds, completed at done, answered code.
func configMap(pod, name string, recv, done float64, code int32) auditv1.Event {
	return event(pod, "patch", auditv1.ObjectReference{Resource: "configmaps", Namespace: drinkNS, Name: name}, at(recv), at(done), code)
}

// status is replica a's patch of Drink mocha's status.
func status(recv, done float64, code int32) auditv1.Event {
	return event("a", "patch", auditv1.ObjectReference{Resource: "drinks", APIGroup: "example.com", Subresource: "status", Namespace: drinkNS, Name: "mocha"}, at(recv), at(done), code)
}

// TestReplay: a replay of audit events built by hand, each with the
// handover it describes. The writes that must be reported are those of a
// pod that did not hold the Drink's bucket when its request arrived,
// whether admitted or answered with a server error (possibly applied).
func TestReplay(t *testing.T) {
	for _, tc := range []struct {
		name   string
		events []auditv1.Event
		// stale, maybe: substrings, one per Stale and MaybeStale entry,
		// in order.
		stale, maybe              []string
		written, byTwo, uncertain int
		refused                   map[string]int
	}{
		{
			name:    "the holder's writes",
			events:  []auditv1.Event{lease("a", 0), configMap("a", "mocha", 1, 1.1, 200), status(2, 2.1, 200)},
			written: 2,
		},
		{
			name: "a write by a replica that no longer held the bucket (the known stale write)",
			events: []auditv1.Event{lease("a", 0), lease("a", 5), lease("b", 6), configMap("b", "mocha", 7, 7.1, 200),
				configMap("a", "mocha", 8, 8.1, 200)},
			written: 2, byTwo: 1,
			stale: []string{`patch configmaps mocha by a at 12:00:08.000000, bucket ` + bucketOf() + ` held by "b"`},
		},
		{
			name:    "a write before any replica held the bucket",
			events:  []auditv1.Event{configMap("a", "mocha", 1, 1.1, 200), lease("a", 2)},
			written: 1,
			stale:   []string{`by a at 12:00:01.000000, bucket ` + bucketOf() + ` held by ""`},
		},
		{
			name:    "a write received while holding, completed after the handover: the fence judged it when it arrived",
			events:  []auditv1.Event{lease("a", 0), status(4, 9, 200), lease("a", 5), lease("b", 6)},
			written: 1,
		},
		{
			name:    "a write received after the release, completed out of order in the log",
			events:  []auditv1.Event{status(5.5, 5.6, 200), lease("a", 0), lease("a", 5), lease("b", 6)},
			written: 1,
			stale:   []string{`patch drinks/status mocha by a at 12:00:05.500000, bucket ` + bucketOf() + ` held by ""`},
		},
		{
			name:    "a stale write answered 504 (timed out): possibly applied, reported",
			events:  []auditv1.Event{lease("a", 0), lease("a", 5), lease("b", 6), status(7, 67, 504)},
			written: 1, uncertain: 1,
			maybe: []string{`by a at 12:00:07.000000, bucket ` + bucketOf() + ` held by "b", answered 504 (possibly applied)`},
		},
		{
			name:    "a stale write answered with nothing: possibly applied, reported",
			events:  []auditv1.Event{lease("a", 0), lease("a", 5), configMap("a", "mocha", 7, 7.1, 0)},
			written: 1, uncertain: 1,
			maybe: []string{`held by "", answered nothing (possibly applied)`},
		},
		{
			name:    "the holder's write answered 500: possibly applied, not stale",
			events:  []auditv1.Event{lease("a", 0), configMap("a", "mocha", 1, 1.1, 500)},
			written: 1, uncertain: 1,
		},
		{
			name:    "a stale write the fence refused (403): counted as refused, not written",
			events:  []auditv1.Event{lease("a", 0), lease("a", 5), lease("b", 6), status(7, 7.1, 403)},
			refused: map[string]int{"a": 1},
		},
		{
			name:   "a stale write answered 409 (conflict): not applied",
			events: []auditv1.Event{lease("a", 0), lease("a", 5), lease("b", 6), status(7, 7.1, 409)},
		},
		{
			name: "writes the replay does not judge: another namespace, a Drink it was not given, a Drink's spec, no pod",
			events: []auditv1.Event{
				lease("a", 0), lease("a", 5), lease("b", 6),
				event("a", "patch", auditv1.ObjectReference{Resource: "configmaps", Namespace: "elsewhere", Name: "mocha"}, at(7), at(7), 200),
				configMap("a", "latte", 7, 7.1, 200),
				event("a", "update", auditv1.ObjectReference{Resource: "drinks", APIGroup: "example.com", Namespace: drinkNS, Name: "mocha"}, at(7), at(7), 200),
				event("", "patch", auditv1.ObjectReference{Resource: "configmaps", Namespace: drinkNS, Name: "mocha"}, at(7), at(7), 200),
			},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res := Replay(tc.events, opNS, drinkNS, uids)
			if res.Written != tc.written || res.ByTwo != tc.byTwo || res.Uncertain != tc.uncertain {
				t.Errorf("written %d, by two %d, uncertain %d; want %d, %d, %d", res.Written, res.ByTwo, res.Uncertain, tc.written, tc.byTwo, tc.uncertain)
			}
			if len(res.Stale) != len(tc.stale) {
				t.Fatalf("stale writes %q, want %d matching %q", res.Stale, len(tc.stale), tc.stale)
			}
			for i, want := range tc.stale {
				if !strings.Contains(res.Stale[i], want) {
					t.Errorf("stale write %d: %q, want it to contain %q", i, res.Stale[i], want)
				}
			}
			if len(res.MaybeStale) != len(tc.maybe) {
				t.Fatalf("possibly applied stale writes %q, want %d matching %q", res.MaybeStale, len(tc.maybe), tc.maybe)
			}
			for i, want := range tc.maybe {
				if !strings.Contains(res.MaybeStale[i], want) {
					t.Errorf("possibly applied stale write %d: %q, want it to contain %q", i, res.MaybeStale[i], want)
				}
			}
			for pod, n := range tc.refused {
				if res.Refused[pod] != n {
					t.Errorf("refused %v, want %v", res.Refused, tc.refused)
				}
			}
			if len(res.Refused) != len(tc.refused) {
				t.Errorf("refused %v, want %v", res.Refused, tc.refused)
			}
		})
	}
}

// bucketOf is the Drink mocha's bucket, as Stale names it.
func bucketOf() string { return strconv.Itoa(shard.BucketOf(uids["mocha"])) }
