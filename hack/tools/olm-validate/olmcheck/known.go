package olmcheck

import (
	"path/filepath"
	"slices"
	"strings"

	valerrors "github.com/operator-framework/api/pkg/validation/errors"
)

// Known is a warning the validators give that the generator cannot fix;
// docs/olm.md explains each. Any other warning fails make verify, as an
// error does.
type Known struct {
	// Validators give it; Substring is part of its message.
	Validators []string
	Substring  string
	// Releases limits it to these frozen bundles (bundle/releases/vX.Y.Z,
	// by directory name); empty: every bundle.
	Releases []string
	Why      string
}

// KnownWarnings are the warnings explained in docs/olm.md.
var KnownWarnings = []Known{
	{
		Validators: []string{"alpha-deprecated-apis", "operatorhubv2"},
		Substring:  "this bundle is using APIs which were deprecated and removed in v1.25. More info: https://kubernetes.io/docs/reference/using-api/deprecation-guide/#v1-25. Migrate the API(s) for events:",
		Why: "an RBAC rule names no API version: the rule on events in the groups \"\" and events.k8s.io is read as events.k8s.io/v1beta1, " +
			"but the operator writes events.k8s.io/v1 (and core/v1 events), both served by every Kubernetes it supports",
	},
	{
		Validators: []string{"good-practices"},
		Substring:  `channel(s) ["alpha"] are not following the recommended naming convention`,
		Why: "v0.1.0 was released in the channel alpha, and a Subscription follows one channel: " +
			"renaming it would leave every v0.1.0 install without upgrades",
	},
	{
		Validators: []string{"operatorhubv2"},
		Substring:  "csv.Spec.Icon not specified",
		Releases:   []string{"v0.1.0"},
		Why:        "frozen release bundle; the generator adds an icon since",
	},
	{
		Validators: []string{"good-practices"},
		Substring:  "CSV contains permissions to create CRD",
		Releases:   []string{"v0.1.0"},
		Why: "frozen release bundle: its CSV kept the certificate rotator's patch of the Drink CRD (no create); " +
			"the generator leaves the rotator's writes out of the CSV since, as OLM injects the CA",
	},
}

// Explained says whether a warning of the bundle in dir is a known one.
func Explained(dir string, f Finding) bool {
	if f.Level != valerrors.LevelWarn {
		return false
	}
	release := ""
	if filepath.Base(filepath.Dir(filepath.Clean(dir))) == "releases" {
		release = filepath.Base(filepath.Clean(dir))
	}
	return slices.ContainsFunc(KnownWarnings, func(k Known) bool {
		return slices.Contains(k.Validators, f.Validator) && strings.Contains(f.Message, k.Substring) &&
			(len(k.Releases) == 0 || slices.Contains(k.Releases, release))
	})
}
