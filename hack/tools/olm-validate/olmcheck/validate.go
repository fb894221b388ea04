package olmcheck

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"

	apimanifests "github.com/operator-framework/api/pkg/manifests"
	"github.com/operator-framework/api/pkg/validation"
	valerrors "github.com/operator-framework/api/pkg/validation/errors"
	interfaces "github.com/operator-framework/api/pkg/validation/interfaces"
)

// Suite is what `operator-sdk bundle validate --select-optional
// suite=operatorframework` runs: the default bundle validators (csv, crd,
// bundle), the OperatorHub suite (operatorhubv2 with standardcapabilities
// and standardcategories, which the library names as the replacement of its
// deprecated "operatorhub" validator; that one adds only a warning that it
// is deprecated), the object, removed-API and good-practices validators.
// Left out: MultipleArchitecturesValidator inspects the images in a registry
// (none is reachable here) and CommunityOperatorValidator is deprecated in
// favour of an external validator that needs an index image.
var Suite = map[string]interfaces.Validator{
	"csv":                   validation.ClusterServiceVersionValidator,
	"crd":                   validation.CustomResourceDefinitionValidator,
	"bundle":                validation.BundleValidator,
	"operatorhubv2":         validation.OperatorHubV2Validator,
	"standardcapabilities":  validation.StandardCapabilitiesValidator,
	"standardcategories":    validation.StandardCategoriesValidator,
	"object":                validation.ObjectValidator,
	"alpha-deprecated-apis": validation.AlphaDeprecatedAPIsValidator,
	"good-practices":        validation.GoodPracticesValidator,
}

// Finding is one message of one validator.
type Finding struct {
	Validator string
	Level     valerrors.Level
	Message   string
}

func (f Finding) String() string { return fmt.Sprintf("[%s] %s", f.Validator, f.Message) }

// Load reads the bundle in dir (manifests/ and metadata/). The library's
// loader walks the whole tree below the directory it is given and keeps the
// last ClusterServiceVersion it meets, so dir must not hold other bundles:
// bundle/ holds bundle/releases/*, and Load reads only its two
// subdirectories through a temporary copy.
func Load(dir string) (*apimanifests.Bundle, error) {
	tmp, err := os.MkdirTemp("", "olm-bundle-")
	if err != nil {
		return nil, err
	}
	defer func() { _ = os.RemoveAll(tmp) }()
	for _, sub := range []string{"manifests", "metadata"} {
		if err := os.CopyFS(filepath.Join(tmp, sub), os.DirFS(filepath.Join(dir, sub))); err != nil {
			return nil, fmt.Errorf("%s: %w", dir, err)
		}
	}
	b, err := apimanifests.GetBundleFromDir(tmp)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", dir, err)
	}
	return b, nil
}

// Validate runs every validator of Suite over b. k8sVersion is the
// Kubernetes version the removed-API and OperatorHub checks judge the
// manifests against (their optional value "k8s-version").
func Validate(b *apimanifests.Bundle, k8sVersion string) []Finding {
	objs := append(b.ObjectsToValidate(), map[string]string{"k8s-version": k8sVersion})
	names := make([]string, 0, len(Suite))
	for name := range Suite {
		names = append(names, name)
	}
	slices.Sort(names)
	var out []Finding
	for _, name := range names {
		for _, res := range Suite[name].Validate(objs...) {
			for _, e := range append(res.Errors, res.Warnings...) {
				out = append(out, Finding{Validator: name, Level: e.Level, Message: e.Error()})
			}
		}
	}
	return out
}
