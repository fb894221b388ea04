package main

import (
	"strings"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
)

// TestRender: a rule becomes a row with its verbs in reading order and
// its names; a rule without a reason is reported, naming what to add; an
// entry no rule used stays unused (run reports it).
func TestRender(t *testing.T) {
	w := &why{Role: "Role/r", Groups: []string{""}, Resources: []string{"secrets"}, Names: []string{"cert"}, Why: "its certificate"}
	unused := &why{Role: "Role/r", Groups: []string{"apps"}, Resources: []string{"deployments"}, Why: "nothing now"}
	byKey := map[string]*why{w.key(): w, unused.key(): unused}
	tests := []struct {
		name        string
		rules       []rbacv1.PolicyRule
		wantRow     string
		wantMissing string
	}{
		{"a rule with its reason", []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"secrets"}, ResourceNames: []string{"cert"}, Verbs: []string{"patch", "get", "update"}}},
			"| `\"\"` | `secrets` | get, update, patch, **only `cert`** | its certificate |", ""},
		{"a rule without one", []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: []string{"get"}}},
			"", `Role/r: no why for the rule of groups [""], resources ["configmaps"], names []: add it to hack/rbacdoc/why.yaml`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			table, missing := render("Role/r", tc.rules, byKey)
			if tc.wantRow != "" && !strings.Contains(table, tc.wantRow+"\n") {
				t.Errorf("table:\n%s\nwant the row %s", table, tc.wantRow)
			}
			if got := strings.Join(missing, "\n"); got != tc.wantMissing {
				t.Errorf("missing %q, want %q", got, tc.wantMissing)
			}
		})
	}
	if unused.used {
		t.Error("an entry no rule matches was marked used")
	}
}
