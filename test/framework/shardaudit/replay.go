package shardaudit

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"sort"
	"time"

	"k8s.io/apimachinery/pkg/types"
	auditv1 "k8s.io/apiserver/pkg/apis/audit/v1"

	"github.com/example/myoperator/internal/shard"
	"github.com/example/myoperator/test/framework/testutil"
)

// podNameExtra is where the API server puts the pod of a bound token.
const podNameExtra = "authentication.kubernetes.io/pod-name"

// Policy is an audit policy that logs what Replay reads, and nothing else:
// the metadata of every write to a Lease in operatorNamespace, to a
// ConfigMap and to a Drink's status.
func Policy(operatorNamespace string) string {
	return `apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: ["RequestReceived"]
rules:
- level: Metadata
  verbs: ["create", "update", "patch", "delete"]
  namespaces: ["` + operatorNamespace + `"]
  resources:
  - group: coordination.k8s.io
    resources: ["leases"]
- level: Metadata
  verbs: ["create", "update", "patch", "delete"]
  resources:
  - group: ""
    resources: ["configmaps"]
  - group: example.com
    resources: ["drinks/status"]
- level: None
`
}

// Read returns the completed requests of the audit log at path whose
// stage ends between from and to.
func Read(path string, from, to time.Time) ([]auditv1.Event, error) {
	return ReadWhere(path, func(e *auditv1.Event) bool {
		at := e.StageTimestamp.Time
		return !at.Before(from) && !at.After(to)
	})
}

// ReadWhere returns the completed requests of the audit log at path that
// keep accepts. It streams the log, so that a bench's log of hundreds of
// thousands of writes is held only as far as keep wants it.
func ReadWhere(path string, keep func(*auditv1.Event) bool) ([]auditv1.Event, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer func() { _ = f.Close() }()
	var out []auditv1.Event
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for sc.Scan() {
		// The API server writes one JSON object per line.
		var e auditv1.Event
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			return nil, fmt.Errorf("audit log %s: %w", path, err)
		}
		if e.Stage != auditv1.StageResponseComplete || !keep(&e) {
			continue
		}
		out = append(out, e)
	}
	return out, sc.Err()
}

// IsBucketLease says whether e wrote a bucket Lease: Replay needs every
// such write since the replicas started, whatever the window of the other
// writes.
func IsBucketLease(e *auditv1.Event) bool {
	if e.ObjectRef == nil || e.ObjectRef.Resource != "leases" {
		return false
	}
	_, ok := bucketOfLease(e.ObjectRef.Name)
	return ok
}

// bucketOfLease is the bucket whose Lease is called name.
func bucketOfLease(name string) (int, bool) {
	var b int
	if _, err := fmt.Sscanf(name, "myoperator-bucket-%02d", &b); err != nil || b < 0 || b >= shard.Buckets || name != shard.BucketLeaseName(b) {
		return 0, false
	}
	return b, true
}

// Result is what Replay found.
type Result struct {
	// Written counts the writes of pods to the Drinks' status and
	// ConfigMaps it checked: those admitted and those possibly applied;
	// ByTwo the objects more than one pod wrote (across handovers, as
	// expected).
	Written, ByTwo int
	// Uncertain counts the writes answered with a server error or none (a
	// timeout, 500, 504): the API server may have applied them before it
	// failed to answer, so they are checked as if admitted.
	Uncertain int
	// Stale describes each admitted write from a pod that did not hold
	// the Drink's bucket when the request arrived: a double write.
	Stale []string
	// MaybeStale describes each such write answered with a server error
	// or none. Whether it was applied the audit log cannot say: the fence
	// may still have refused it after the API server gave up answering
	// (a 504 while the fence's webhook call waited). A reader weighs them;
	// a test fails on Stale.
	MaybeStale []string
	// Refused counts the writes of pods to those objects that the API
	// server refused with 403 (the fence, or RBAC).
	Refused map[string]int
}

// holderChange is a write to a bucket Lease that made holder its holder
// ("": released), completed at at.
type holderChange struct {
	at     time.Time
	holder string
}

// Replay checks the writes of pods to the Drinks of namespace, whose UIDs
// by name are uids, against the bucket Leases of operatorNamespace. A
// pod's admitted write to a bucket Lease is an acquire, unless that pod
// held it: then a release.
func Replay(events []auditv1.Event, operatorNamespace, namespace string, uids map[string]types.UID) Result {
	events = append([]auditv1.Event(nil), events...)
	sort.SliceStable(events, func(i, j int) bool { return events[i].StageTimestamp.Time.Before(events[j].StageTimestamp.Time) })
	changes := make([][]holderChange, shard.Buckets)
	for _, e := range events {
		r := e.ObjectRef
		if r == nil || r.Resource != "leases" || r.Namespace != operatorNamespace || !testutil.IsWriteVerb(e.Verb) || !admitted(e) {
			continue
		}
		b, ok := bucketOfLease(r.Name)
		if !ok {
			continue
		}
		pod, prev := podOf(e), ""
		if n := len(changes[b]); n > 0 {
			prev = changes[b][n-1].holder
		}
		holder := pod
		if prev == pod {
			holder = ""
		}
		changes[b] = append(changes[b], holderChange{at: e.StageTimestamp.Time, holder: holder})
	}
	holderAt := func(b int, t time.Time) string {
		h := ""
		for _, c := range changes[b] {
			if c.at.After(t) {
				break
			}
			h = c.holder
		}
		return h
	}
	res := Result{Refused: map[string]int{}}
	writers := map[string]map[string]bool{}
	for _, e := range events {
		r := e.ObjectRef
		pod := podOf(e)
		if r == nil || pod == "" || r.Namespace != namespace || !testutil.IsWriteVerb(e.Verb) || !fenced(r) {
			continue
		}
		uid, ok := uids[r.Name]
		if !ok {
			continue
		}
		what := r.Resource + " " + r.Name
		if r.Subresource != "" {
			what = r.Resource + "/" + r.Subresource + " " + r.Name
		}
		if e.ResponseStatus != nil && e.ResponseStatus.Code == 403 {
			res.Refused[pod]++
		}
		uncertain := possiblyApplied(e)
		if !admitted(e) && !uncertain {
			continue
		}
		res.Written++
		answer := ""
		if uncertain {
			res.Uncertain++
			answer = ", answered " + answerOf(e) + " (possibly applied)"
		}
		if writers[what] == nil {
			writers[what] = map[string]bool{}
		}
		writers[what][pod] = true
		b := shard.BucketOf(uid)
		if h := holderAt(b, e.RequestReceivedTimestamp.Time); h != pod {
			d := fmt.Sprintf("%s %s by %s at %s, bucket %d held by %q%s", e.Verb, what, pod,
				e.RequestReceivedTimestamp.Format("15:04:05.000000"), b, h, answer)
			if uncertain {
				res.MaybeStale = append(res.MaybeStale, d)
			} else {
				res.Stale = append(res.Stale, d)
			}
		}
	}
	for _, w := range writers {
		if len(w) > 1 {
			res.ByTwo++
		}
	}
	return res
}

// fenced: a Drink's status or a ConfigMap, what the fence guards.
func fenced(r *auditv1.ObjectReference) bool {
	return r.Resource == "configmaps" || r.Resource == "drinks" && r.Subresource == "status"
}

func admitted(e auditv1.Event) bool { return e.ResponseStatus != nil && e.ResponseStatus.Code < 300 }

// possiblyApplied: answered with a server error, or with no status at all.
// A request that timed out (504) or failed after storage (500) may have
// been written; a 4xx answer (refused, conflict, invalid) was not.
func possiblyApplied(e auditv1.Event) bool {
	return e.ResponseStatus == nil || e.ResponseStatus.Code >= 500
}

func answerOf(e auditv1.Event) string {
	if e.ResponseStatus == nil {
		return "nothing"
	}
	return fmt.Sprint(e.ResponseStatus.Code)
}

func podOf(e auditv1.Event) string {
	if v := e.User.Extra[podNameExtra]; len(v) > 0 {
		return v[0]
	}
	return ""
}
