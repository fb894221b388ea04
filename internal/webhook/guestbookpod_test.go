package webhook_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
)

// TestGuestbookPodRejected: a spec.pod that the pods could not run with is
// refused by the API server (its schema's bounds and enums) or by the
// Guestbook webhook (the pod's own rules, which the API server would
// otherwise apply only to the StatefulSet the operator writes, where the
// user never sees the error); each message names the field and the rule.
func TestGuestbookPodRejected(t *testing.T) {
	ctx := context.Background()
	many := func(n int, item string) string {
		items := make([]string, n)
		for i := range items {
			items[i] = fmt.Sprintf(item, i)
		}
		return strings.Join(items, ", ")
	}
	tests := []struct {
		name string
		pod  string // the value of spec.pod, in YAML flow style
		// webhook: refused by the Guestbook webhook, not by the schema.
		webhook bool
		want    []string
	}{
		{"request above its limit", "{resources: {requests: {memory: 128Mi}, limits: {memory: 64Mi}}}", true,
			[]string{"spec.pod.resources.requests[memory]", "must be less than or equal to the memory limit of 64Mi"}},
		{"negative request", "{resources: {requests: {cpu: '-1'}}}", true,
			[]string{"spec.pod.resources.requests[cpu]", "must be greater than or equal to 0"}},
		{"resource claim", "{resources: {claims: [{name: gpu}]}}", true,
			[]string{"spec.pod.resources.claims", "resource claims are not supported"}},
		{"quantity that is no quantity", "{resources: {limits: {memory: lots}}}", false,
			[]string{"spec.pod.resources.limits.memory"}},
		{"node selector key with a space", "{nodeSelector: {'disk type': ssd}}", true,
			[]string{"spec.pod.nodeSelector", "disk type", "name part must consist of alphanumeric characters"}},
		{"node selector value too long", "{nodeSelector: {disk: " + strings.Repeat("s", 64) + "}}", true,
			[]string{"spec.pod.nodeSelector", "must be no more than 63 bytes"}},
		{"33 node selector entries", "{nodeSelector: {" + many(33, "k%d: v") + "}}", false,
			[]string{"spec.pod.nodeSelector", "must have at most 32 items"}},
		{"toleration operator", "{tolerations: [{key: k, operator: Matches, value: v}]}", true,
			[]string{"spec.pod.tolerations[0].operator", `Unsupported value: "Matches"`, `"Exists", "Equal"`}},
		{"toleration effect", "{tolerations: [{key: k, operator: Exists, effect: Evict}]}", true,
			[]string{"spec.pod.tolerations[0].effect", `Unsupported value: "Evict"`, `"NoSchedule"`}},
		{"toleration Exists with a value", "{tolerations: [{key: k, operator: Exists, value: v}]}", true,
			[]string{"spec.pod.tolerations[0].value", "must be empty when operator is Exists"}},
		{"tolerationSeconds without NoExecute", "{tolerations: [{key: k, operator: Exists, effect: NoSchedule, tolerationSeconds: 5}]}", true,
			[]string{"spec.pod.tolerations[0].effect", "must be NoExecute when tolerationSeconds is set"}},
		{"33 tolerations", "{tolerations: [" + many(33, "{key: k%d, operator: Exists}") + "]}", false,
			[]string{"spec.pod.tolerations", "must have at most 32 items"}},
		{"priority class not a DNS subdomain", "{priorityClassName: High_Priority}", true,
			[]string{"spec.pod.priorityClassName", "must name a PriorityClass", "RFC 1123 subdomain"}},
		{"pull secret twice", "{imagePullSecrets: [{name: regcred}, {name: regcred}]}", true,
			[]string{"spec.pod.imagePullSecrets[1].name", "Duplicate value"}},
		{"17 pull secrets", "{imagePullSecrets: [" + many(17, "{name: s%d}") + "]}", false,
			[]string{"spec.pod.imagePullSecrets", "must have at most 16 items"}},
		{"anti-affinity neither Soft nor Hard", "{antiAffinity: Strict}", false,
			[]string{"spec.pod.antiAffinity", `Unsupported value: "Strict"`, `"Soft", "Hard"`}},
		{"node affinity operator", "{affinity: {nodeAffinity: {requiredDuringSchedulingIgnoredDuringExecution: {nodeSelectorTerms: [{matchExpressions: [{key: zone, operator: Near, values: [a]}]}]}}}}", true,
			[]string{"spec.pod.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0].matchExpressions[0].operator", `Unsupported value: "Near"`}},
		{"node affinity In without values", "{affinity: {nodeAffinity: {requiredDuringSchedulingIgnoredDuringExecution: {nodeSelectorTerms: [{matchExpressions: [{key: zone, operator: In}]}]}}}}", true,
			[]string{"nodeSelectorTerms[0].matchExpressions[0].values", "must be specified when operator is In or NotIn"}},
		{"preferred weight 0", "{affinity: {podAffinity: {preferredDuringSchedulingIgnoredDuringExecution: [{weight: 0, podAffinityTerm: {topologyKey: zone}}]}}}", true,
			[]string{"spec.pod.affinity.podAffinity.preferredDuringSchedulingIgnoredDuringExecution[0].weight", "must be in the range 1-100"}},
		{"pod anti-affinity without topology key", "{affinity: {podAntiAffinity: {requiredDuringSchedulingIgnoredDuringExecution: [{labelSelector: {matchLabels: {app: db}}}]}}}", true,
			[]string{"spec.pod.affinity.podAntiAffinity.requiredDuringSchedulingIgnoredDuringExecution[0].topologyKey", "Required value"}},
		{"pod affinity label selector operator", "{affinity: {podAffinity: {requiredDuringSchedulingIgnoredDuringExecution: [{topologyKey: zone, labelSelector: {matchExpressions: [{key: app, operator: Near}]}}]}}}", true,
			[]string{"spec.pod.affinity.podAffinity.requiredDuringSchedulingIgnoredDuringExecution[0].labelSelector.matchExpressions[0].operator", "not a valid selector operator"}},
		{"17 node affinity terms", "{affinity: {nodeAffinity: {requiredDuringSchedulingIgnoredDuringExecution: {nodeSelectorTerms: [" + many(17, "{matchExpressions: [{key: k%d, operator: Exists}]}") + "]}}}}", true,
			[]string{"spec.pod.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms", "must have at most 16 items"}},
		{"own pods together while Hard", "{antiAffinity: Hard, affinity: {podAffinity: {requiredDuringSchedulingIgnoredDuringExecution: [{topologyKey: kubernetes.io/hostname, labelSelector: {matchLabels: {app.kubernetes.io/instance: pod-bad}}}]}}}", true,
			[]string{"spec.pod.affinity.podAffinity.requiredDuringSchedulingIgnoredDuringExecution[0]", "antiAffinity Hard forbids for a size of 2"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			obj := decodeYAML(t, "", "apiVersion: webapp.my.domain/v1\nkind: Guestbook\nmetadata: {name: pod-bad}\nspec: {size: 2, configMapName: pod-bad, pod: "+tc.pod+"}")
			err := k8s.Create(ctx, obj)
			if err == nil {
				_ = k8s.Delete(ctx, obj)
				t.Fatalf("accepted, want rejected with %q", tc.want)
			}
			if !apierrors.IsInvalid(err) && !apierrors.IsForbidden(err) {
				t.Fatalf("error is not a rejection: %v", err)
			}
			want := tc.want
			if tc.webhook {
				want = append([]string{"admission webhook", "vguestbook.webapp.my.domain"}, want...)
			}
			for _, w := range want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error does not contain %q:\n%v", w, err)
				}
			}
		})
	}
}

// TestGuestbookPodAccepted: every spec.pod field at once, within its
// bounds, and the own-pods podAffinity term with antiAffinity Soft (which
// only prefers apart), are accepted as written.
func TestGuestbookPodAccepted(t *testing.T) {
	ctx := context.Background()
	obj := decodeYAML(t, "", `apiVersion: webapp.my.domain/v1
kind: Guestbook
metadata: {name: pod-good}
spec:
  size: 2
  configMapName: pod-good
  pod:
    resources: {requests: {cpu: 100m, memory: 32Mi}, limits: {cpu: "1", memory: 128Mi}}
    nodeSelector: {disktype: ssd, example.com/pool: web}
    tolerations: [{key: dedicated, operator: Equal, value: web, effect: NoSchedule}, {operator: Exists, effect: NoExecute, tolerationSeconds: 30}]
    priorityClassName: high-priority
    imagePullSecrets: [{name: regcred}]
    antiAffinity: Soft
    affinity:
      nodeAffinity:
        requiredDuringSchedulingIgnoredDuringExecution: {nodeSelectorTerms: [{matchExpressions: [{key: zone, operator: In, values: [a, b]}]}]}
      podAffinity:
        requiredDuringSchedulingIgnoredDuringExecution: [{topologyKey: kubernetes.io/hostname, labelSelector: {matchLabels: {app.kubernetes.io/instance: pod-good}}}]
`)
	if err := k8s.Create(ctx, obj); err != nil {
		t.Fatalf("rejected: %v", err)
	}
	_ = k8s.Delete(ctx, obj)
}
