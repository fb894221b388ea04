package opconfig_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apiextensions-apiserver/pkg/apis/apiextensions"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	structuralschema "k8s.io/apiextensions-apiserver/pkg/apiserver/schema"
	structuraldefaulting "k8s.io/apiextensions-apiserver/pkg/apiserver/schema/defaulting"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/yaml"

	operatorv1alpha1 "github.com/example/myoperator/apis/operator/v1alpha1"
	"github.com/example/myoperator/internal/opconfig"
	"github.com/example/myoperator/test/framework/testutil"
)

const operatorNS = "myoperator-system"

func config(uid types.UID, mutate func(*operatorv1alpha1.OperatorConfigSpec)) *operatorv1alpha1.OperatorConfig {
	c := &operatorv1alpha1.OperatorConfig{
		ObjectMeta: metav1.ObjectMeta{Name: operatorv1alpha1.SingletonName, UID: uid},
		Spec:       operatorv1alpha1.DefaultSpec(),
	}
	if mutate != nil {
		mutate(&c.Spec)
	}
	return c
}

// record is what the operator recorded after accepting OperatorConfig "a".
func record(mutate func(*operatorv1alpha1.OperatorConfigSpec)) *opconfig.Record {
	res := opconfig.Resolve(config("a", mutate), nil, operatorNS)
	return res.Record
}

func teamA(s *operatorv1alpha1.OperatorConfigSpec) { s.Guestbook.Namespace = "team-a" }
func unmanagedTeamA(s *operatorv1alpha1.OperatorConfigSpec) {
	s.Guestbook.Namespace = "team-a"
	s.ManagementState = operatorv1alpha1.Unmanaged
}

// TestResolve covers every way the effective configuration is decided: a
// missing or invalid OperatorConfig never changes it, a recreated one never
// stops or moves operands, an edit of the accepted one does.
func TestResolve(t *testing.T) {
	defaults := opconfig.Defaults()
	tests := []struct {
		name      string
		c         *operatorv1alpha1.OperatorConfig
		rec       *opconfig.Record
		state     opconfig.State
		ns        string
		mgmt      operatorv1alpha1.ManagementState
		level     operatorv1alpha1.LogLevel
		kept      int
		recorded  bool
		fromStore bool
	}{
		{name: "first config accepted", c: config("a", teamA), state: opconfig.StateAccepted, ns: "team-a", mgmt: "Managed", level: "Info", recorded: true},
		{name: "missing, never accepted: defaults", state: opconfig.StateMissing, ns: defaults.GuestbookNamespace, mgmt: "Managed", level: "Info"},
		{name: "missing keeps the accepted config", rec: record(unmanagedTeamA), state: opconfig.StateMissing, ns: "team-a", mgmt: "Unmanaged", level: "Info", fromStore: true},
		{name: "invalid keeps the accepted config",
			c: config("a", func(s *operatorv1alpha1.OperatorConfigSpec) {
				s.Guestbook.Namespace = "kube-system"
				s.LogLevel = "Debug"
			}),
			rec: record(unmanagedTeamA), state: opconfig.StateInvalid, ns: "team-a", mgmt: "Unmanaged", level: "Info", fromStore: true},
		{name: "invalid, never accepted: defaults",
			c:     config("a", func(s *operatorv1alpha1.OperatorConfigSpec) { s.Guestbook.Namespace = "default" }),
			state: opconfig.StateInvalid, ns: defaults.GuestbookNamespace, mgmt: "Managed", level: "Info"},
		{name: "recreated with defaults keeps the namespace, takes the rest",
			c:   config("b", func(s *operatorv1alpha1.OperatorConfigSpec) { s.LogLevel = "Debug" }),
			rec: record(unmanagedTeamA), state: opconfig.StateAccepted, ns: "team-a", mgmt: "Managed", level: "Debug", kept: 1, recorded: true},
		{name: "recreated Unmanaged stays Unmanaged",
			c:   config("b", func(s *operatorv1alpha1.OperatorConfigSpec) { s.ManagementState = "Unmanaged" }),
			rec: record(unmanagedTeamA), state: opconfig.StateAccepted, ns: "team-a", mgmt: "Unmanaged", level: "Info", kept: 1, recorded: true},
		{name: "edit of the accepted config moves operands",
			c:   config("a", func(s *operatorv1alpha1.OperatorConfigSpec) { s.Guestbook.Namespace = "team-b" }),
			rec: record(teamA), state: opconfig.StateAccepted, ns: "team-b", mgmt: "Managed", level: "Info", recorded: true},
		{name: "edit of the accepted config resumes management",
			c:   config("a", teamA),
			rec: record(unmanagedTeamA), state: opconfig.StateAccepted, ns: "team-a", mgmt: "Managed", level: "Info", recorded: true},
		{name: "an unrelated edit of a recreated config moves nothing",
			c: config("b", func(s *operatorv1alpha1.OperatorConfigSpec) { s.LogLevel = "Error" }),
			rec: func() *opconfig.Record {
				// The record after the recreated config "b" was accepted:
				// its spec says the default namespace, the operands stay.
				r := opconfig.Resolve(config("b", nil), record(teamA), operatorNS).Record
				return r
			}(),
			state: opconfig.StateAccepted, ns: "team-a", mgmt: "Managed", level: "Error", kept: 1, recorded: true},
		{name: "an edit of the namespace of a recreated config moves",
			c:     config("b", func(s *operatorv1alpha1.OperatorConfigSpec) { s.Guestbook.Namespace = "team-c" }),
			rec:   opconfig.Resolve(config("b", nil), record(teamA), operatorNS).Record,
			state: opconfig.StateAccepted, ns: "team-c", mgmt: "Managed", level: "Info", recorded: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := opconfig.Resolve(tt.c, tt.rec, operatorNS)
			got := []any{res.State, res.Effective.GuestbookNamespace, res.Effective.ManagementState, res.Effective.LogLevel, len(res.Kept), res.Record != nil, res.FromRecord}
			want := []any{tt.state, tt.ns, tt.mgmt, tt.level, tt.kept, tt.recorded, tt.fromStore}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("state, namespace, management, level, kept, recorded, from record (-want +got):\n%s\nkept: %v", diff, res.Kept)
			}
			if res.Record != nil && !cmp.Equal(res.Record.Effective, res.Effective) {
				t.Errorf("the record holds %+v, the operator runs %+v", res.Record.Effective, res.Effective)
			}
		})
	}
}

// TestRecordConfigMapRoundTrip: what is persisted reads back the same.
func TestRecordConfigMapRoundTrip(t *testing.T) {
	rec := record(unmanagedTeamA)
	cm, err := opconfig.RecordConfigMap(operatorNS, rec)
	if err != nil {
		t.Fatal(err)
	}
	if cm.Name != opconfig.RecordName || cm.Namespace != operatorNS {
		t.Fatalf("record ConfigMap %s/%s", cm.Namespace, cm.Name)
	}
	var back opconfig.Record
	for _, v := range cm.Data {
		if err := json.Unmarshal([]byte(v), &back); err != nil {
			t.Fatal(err)
		}
	}
	if diff := cmp.Diff(*rec, back); diff != "" {
		t.Errorf("round trip (-want +got):\n%s", diff)
	}
}

// TestCRDWritesNoDefaults applies the generated CRD's schema defaults, with
// the API server's own defaulting algorithm, to OperatorConfigs written
// with an empty spec, without one, and with one field: the spec must stay
// exactly as written. A schema default would be stored in the spec on the
// next write, and the operator could no longer tell it from a user's
// choice, so a default a later release changes would never reach it.
func TestCRDWritesNoDefaults(t *testing.T) {
	root, err := testutil.FindRepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(filepath.Join(root, "config", "crd", "bases", "operator.example.com_operatorconfigs.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	crd := &apiextensionsv1.CustomResourceDefinition{}
	if err := yaml.UnmarshalStrict(raw, crd); err != nil {
		t.Fatal(err)
	}
	internal := &apiextensions.JSONSchemaProps{}
	if err := apiextensionsv1.Convert_v1_JSONSchemaProps_To_apiextensions_JSONSchemaProps(crd.Spec.Versions[0].Schema.OpenAPIV3Schema, internal, nil); err != nil {
		t.Fatal(err)
	}
	structural, err := structuralschema.NewStructural(internal)
	if err != nil {
		t.Fatal(err)
	}
	for _, written := range []string{`{"spec":{}}`, `{}`, `{"spec":{"drinks":{},"guestbook":{}}}`, `{"spec":{"guestbook":{"image":"example.com/gb:1"}}}`} {
		obj := map[string]any{}
		if err := json.Unmarshal([]byte(written), &obj); err != nil {
			t.Fatal(err)
		}
		structuraldefaulting.Default(obj, structural)
		got, err := json.Marshal(obj)
		if err != nil {
			t.Fatal(err)
		}
		if string(got) != written {
			t.Errorf("the CRD's schema defaults turn %s into %s; remove the +kubebuilder:default markers (opconfig.Effective applies the defaults)", written, got)
		}
	}
	// Every field of DefaultSpec is set, so that a new field without a
	// default fails here rather than silently running on "".
	want, err := json.Marshal(operatorv1alpha1.DefaultSpec())
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(want), `""`) {
		t.Errorf("DefaultSpec leaves a field empty: %s", want)
	}
}

// TestEffective: every value of the configuration in effect says where it
// came from, and Customized names exactly the values that differ from the
// running release's defaults.
func TestEffective(t *testing.T) {
	d := operatorv1alpha1.DefaultSpec()
	user, def, keptSrc := operatorv1alpha1.SourceUser, operatorv1alpha1.SourceDefault, operatorv1alpha1.SourceKept
	tests := []struct {
		name       string
		c          *operatorv1alpha1.OperatorConfig
		rec        *opconfig.Record
		sources    operatorv1alpha1.EffectiveSources
		customized []string
	}{
		{name: "empty spec: every value a default", c: empty("a"),
			sources: operatorv1alpha1.EffectiveSources{ManagementState: def, LogLevel: def, DrinkDefaultSize: def, GuestbookNamespace: def, GuestbookImage: def}},
		{name: "a user's value, and one equal to the default",
			c: withSpec(empty("a"), func(s *operatorv1alpha1.OperatorConfigSpec) {
				s.Guestbook.Image = "example.com/gb:2"
				s.LogLevel = d.LogLevel
			}),
			sources:    operatorv1alpha1.EffectiveSources{ManagementState: def, LogLevel: user, DrinkDefaultSize: def, GuestbookNamespace: def, GuestbookImage: user},
			customized: []string{"guestbook.image"}},
		{name: "recreated: the namespace is kept", c: empty("b"), rec: record(teamA),
			sources:    operatorv1alpha1.EffectiveSources{ManagementState: def, LogLevel: def, DrinkDefaultSize: def, GuestbookNamespace: keptSrc, GuestbookImage: def},
			customized: []string{"guestbook.namespace"}},
		{name: "invalid: every value kept from the record",
			c:          withSpec(empty("a"), func(s *operatorv1alpha1.OperatorConfigSpec) { s.Guestbook.Namespace = "kube-system" }),
			rec:        record(unmanagedTeamA),
			sources:    operatorv1alpha1.EffectiveSources{ManagementState: keptSrc, LogLevel: keptSrc, DrinkDefaultSize: keptSrc, GuestbookNamespace: keptSrc, GuestbookImage: keptSrc},
			customized: []string{"managementState", "guestbook.namespace"}},
		{name: "invalid, never accepted: defaults",
			c:       withSpec(empty("a"), func(s *operatorv1alpha1.OperatorConfigSpec) { s.Guestbook.Namespace = "default" }),
			sources: operatorv1alpha1.EffectiveSources{ManagementState: def, LogLevel: def, DrinkDefaultSize: def, GuestbookNamespace: def, GuestbookImage: def}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := opconfig.Resolve(tt.c, tt.rec, operatorNS).Effective
			if diff := cmp.Diff(tt.sources, e.Sources); diff != "" {
				t.Errorf("sources (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.customized, e.Customized); diff != "" {
				t.Errorf("customized (-want +got):\n%s", diff)
			}
		})
	}
}

func empty(uid types.UID) *operatorv1alpha1.OperatorConfig {
	return &operatorv1alpha1.OperatorConfig{ObjectMeta: metav1.ObjectMeta{Name: operatorv1alpha1.SingletonName, UID: uid}}
}

func withSpec(c *operatorv1alpha1.OperatorConfig, mutate func(*operatorv1alpha1.OperatorConfigSpec)) *operatorv1alpha1.OperatorConfig {
	mutate(&c.Spec)
	return c
}
