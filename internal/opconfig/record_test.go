package opconfig_test

import (
	"strings"
	"testing"

	operatorv1alpha1 "github.com/example/myoperator/apis/operator/v1alpha1"
	"github.com/example/myoperator/internal/opconfig"
)

// TestValidateRecord: a record is checked as an OperatorConfig is, on the
// recorded spec and on the configuration in effect; the first error of
// each row names the field and the rule.
func TestValidateRecord(t *testing.T) {
	tests := []struct {
		name   string
		mutate func(*opconfig.Record)
		want   string // "" for valid
	}{
		{"as the operator writes it", func(*opconfig.Record) {}, ""},
		{"unmanaged, in team-a", func(r *opconfig.Record) {
			r.Effective.ManagementState, r.Spec.ManagementState = operatorv1alpha1.Unmanaged, operatorv1alpha1.Unmanaged
			r.Effective.GuestbookNamespace, r.Spec.Guestbook.Namespace = "team-a", "team-a"
		}, ""},
		{"no source UID", func(r *opconfig.Record) { r.SourceUID = "" }, "sourceUID: Required value"},
		{"operands in default", func(r *opconfig.Record) { r.Effective.GuestbookNamespace = "default" },
			`effective.guestbook.namespace: Forbidden: "default" belongs to the cluster`},
		{"operands in the operator's namespace", func(r *opconfig.Record) { r.Spec.Guestbook.Namespace = operatorNS },
			`spec.guestbook.namespace: Forbidden: "myoperator-system" is the operator's own namespace`},
		{"a namespace that is no name", func(r *opconfig.Record) { r.Effective.GuestbookNamespace = "Team_A" },
			`effective.guestbook.namespace: Invalid value: "Team_A"`},
		{"no namespace", func(r *opconfig.Record) { r.Effective.GuestbookNamespace = "" },
			`effective.guestbook.namespace: Invalid value: ""`},
		{"an image that is no reference", func(r *opconfig.Record) { r.Effective.GuestbookImage = "evil image; rm -rf" },
			`effective.guestbook.image: Invalid value: "evil image; rm -rf"`},
		{"no image", func(r *opconfig.Record) { r.Spec.Guestbook.Image = "" }, "spec.guestbook.image: Required value"},
		{"a management state no release knows", func(r *opconfig.Record) { r.Effective.ManagementState = "Removed" },
			`effective.managementState: Unsupported value: "Removed"`},
		{"a log level no release knows", func(r *opconfig.Record) { r.Spec.LogLevel = "Trace" },
			`spec.logLevel: Unsupported value: "Trace"`},
		{"a size no Drink has", func(r *opconfig.Record) { r.Effective.DrinkDefaultSize = "Huge" },
			`effective.drinks.defaultSize: Unsupported value: "Huge"`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			rec := record(nil)
			tc.mutate(rec)
			errs := opconfig.ValidateRecord(rec, operatorNS)
			switch {
			case tc.want == "" && len(errs) > 0:
				t.Fatalf("refused: %v", errs.ToAggregate())
			case tc.want != "" && len(errs) == 0:
				t.Fatalf("accepted, want %q", tc.want)
			case tc.want != "" && !strings.Contains(errs[0].Error(), tc.want):
				t.Fatalf("first error %q, want %q (all: %v)", errs[0].Error(), tc.want, errs.ToAggregate())
			}
		})
	}
}
