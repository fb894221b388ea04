package olmbundle

import "slices"

// certResources and certVerbs are the writes only the manager's
// certificate rotator makes: it injects its CA into the Drink CRD's
// conversion webhook and into the two webhook configurations. Under OLM the
// manager runs with --manage-webhook-certs=false (no rotator) and OLM
// injects the CA itself, so the CSV does not ask for them. The storage
// migration's write of the CRD's status (customresourcedefinitions/status)
// stays.
var (
	certResources = [][2]string{
		{"apiextensions.k8s.io", "customresourcedefinitions"},
		{"admissionregistration.k8s.io", "mutatingwebhookconfigurations"},
		{"admissionregistration.k8s.io", "validatingwebhookconfigurations"},
	}
	certVerbs = []string{"update", "patch"}
)

// WithoutCertRights returns the ClusterRole's rules without the
// certificate rotator's writes. A rule that grants them on some of its
// resources is split: those resources keep the rule's other verbs, the rest
// keep the rule as it was; a rule left with no verb is dropped.
func WithoutCertRights(rules []any) []any {
	out := make([]any, 0, len(rules))
	for _, r := range rules {
		rule, ok := r.(map[string]any)
		if !ok {
			out = append(out, r)
			continue
		}
		groups := stringList(rule["apiGroups"])
		var kept, trimmed []string
		for _, res := range stringList(rule["resources"]) {
			if slices.ContainsFunc(groups, func(g string) bool { return slices.Contains(certResources, [2]string{g, res}) }) {
				trimmed = append(trimmed, res)
			} else {
				kept = append(kept, res)
			}
		}
		if len(trimmed) == 0 {
			out = append(out, rule)
			continue
		}
		if len(kept) > 0 {
			out = append(out, withField(rule, "resources", kept))
		}
		left := slices.DeleteFunc(stringList(rule["verbs"]), func(v string) bool { return slices.Contains(certVerbs, v) })
		if len(left) > 0 {
			out = append(out, withField(withField(rule, "resources", trimmed), "verbs", left))
		}
	}
	return out
}

func stringList(v any) []string {
	items, _ := v.([]any)
	out := make([]string, 0, len(items))
	for _, i := range items {
		if s, ok := i.(string); ok {
			out = append(out, s)
		}
	}
	return out
}

func withField(rule map[string]any, key string, values []string) map[string]any {
	c := make(map[string]any, len(rule))
	for k, v := range rule {
		c[k] = v
	}
	c[key] = toAny(values)
	return c
}
