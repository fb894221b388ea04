package validation

import (
	"fmt"
	"regexp"
	"slices"

	"k8s.io/apimachinery/pkg/util/sets"
	utilvalidation "k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	drinksv1 "github.com/example/myoperator/apis/drinks/v1"
	drinksversions "github.com/example/myoperator/apis/drinks/versions"
	operatorv1alpha1 "github.com/example/myoperator/apis/operator/v1alpha1"
	webappv1 "github.com/example/myoperator/apis/webapp/v1"
	"github.com/example/myoperator/internal/pause"
)

// MaxSmallExtras is how many extras fit in a Small drink.
const MaxSmallExtras = 3

// MaxGuestbookNameLength keeps a Guestbook's StatefulSet name short enough
// for the controller-revision-hash label (63 characters) the StatefulSet
// controller derives from it.
const MaxGuestbookNameLength = 52

// DrinkValidator checks Drinks against one table of Drink versions, which
// says what a Drink may be authored in, which fields each version lacks and
// what a write through each one warns about. The zero value uses
// drinksversions.Drinks, as the binary always does.
type DrinkValidator struct {
	// versions is the table of Drink versions; empty means
	// drinksversions.Drinks. Only tests give another (a fourth version),
	// through NewDrinkValidator.
	versions drinksversions.Table
}

// NewDrinkValidator is a DrinkValidator of the table t; empty means
// drinksversions.Drinks. The Drink webhook passes its own table on, so
// that a test that gives the webhook a fourth version validates with it.
func NewDrinkValidator(t drinksversions.Table) DrinkValidator { return DrinkValidator{versions: t} }

// checkNameIsLabel: the Drink's name becomes a label value on its ConfigMap,
// so it must fit one.
func checkNameIsLabel(d *drinksv1.Drink) field.ErrorList {
	if len(d.Name) <= utilvalidation.LabelValueMaxLength {
		return nil
	}
	return field.ErrorList{field.TooLong(field.NewPath("metadata", "name"), d.Name, utilvalidation.LabelValueMaxLength).
		WithOrigin("drink-name-label")}
}

func checkSmallExtras(d *drinksv1.Drink) field.ErrorList {
	if d.Spec.Size != drinksv1.SizeSmall || len(d.Spec.Extras) <= MaxSmallExtras {
		return nil
	}
	err := field.TooMany(field.NewPath("spec", "extras"), len(d.Spec.Extras), MaxSmallExtras).WithOrigin("small-drink-extras")
	err.Detail = fmt.Sprintf("a Small drink takes at most %d extras; choose size Medium or Large for more", MaxSmallExtras)
	return field.ErrorList{err}
}

// checkAuthoredVersion: the authored version decides the ConfigMap layout,
// so it must name a version a client can write in.
func (v DrinkValidator) checkAuthoredVersion(d *drinksv1.Drink) field.ErrorList {
	authored, ok := d.Annotations[drinksv1.AuthoredVersionAnnotation]
	served := v.table().Served()
	if !ok || slices.Contains(served, authored) {
		return nil
	}
	return field.ErrorList{field.NotSupported(
		field.NewPath("metadata", "annotations").Key(drinksv1.AuthoredVersionAnnotation), authored, served)}
}

// Warnings are the deprecation warnings for a Drink written through an
// older API version, from v's table: a deprecated version says so, and each
// field that the hub names otherwise names its v1 replacement.
func (v DrinkValidator) Warnings(requestVersion string) []string {
	t := v.table()
	version, ok := t.Lookup(requestVersion)
	if !ok || version.Storage {
		return nil
	}
	hub := drinksv1.GroupVersion.Group + "/" + t.Hub().Name
	var warnings []string
	if version.Deprecated {
		warnings = append(warnings, fmt.Sprintf("%s/%s Drink is deprecated: write it as %s",
			drinksv1.GroupVersion.Group, version.Name, hub))
	}
	for _, f := range version.Fields {
		if n := version.HubName(f); n != f {
			warnings = append(warnings, fmt.Sprintf("spec.%s is deprecated: use spec.%s in %s", f, n, hub))
		}
	}
	return warnings
}

func (v DrinkValidator) table() drinksversions.Table { return v.versions.OrDrinks() }

// ValidateGuestbook checks a Guestbook beyond its schema. others are the
// other Guestbooks in the cluster: two Guestbooks must not share a
// ConfigMap, since each mounts its own and defaults it from its alias.
func ValidateGuestbook(g *webappv1.Guestbook, others []webappv1.Guestbook) field.ErrorList {
	var errs field.ErrorList
	name := field.NewPath("metadata", "name")
	for _, msg := range utilvalidation.IsDNS1123Label(g.Name) {
		errs = append(errs, field.Invalid(name, g.Name,
			"must be a DNS label, because it names the Guestbook's StatefulSet, pods and Service: "+msg))
	}
	if len(g.Name) > MaxGuestbookNameLength {
		errs = append(errs, field.TooLong(name, g.Name, MaxGuestbookNameLength))
		errs[len(errs)-1].Detail = fmt.Sprintf(
			"may not be more than %d characters: the StatefulSet's revision labels add a suffix to it", MaxGuestbookNameLength)
	}
	errs = append(errs, pause.Validate(g.Annotations)...)
	errs = append(errs, validateGuestbookPod(g)...)
	for _, o := range others {
		if o.Name != g.Name && o.Spec.ConfigMapName == g.Spec.ConfigMapName {
			errs = append(errs, field.Duplicate(field.NewPath("spec", "configMapName"), g.Spec.ConfigMapName).
				MarkCoveredByDeclarative())
			errs[len(errs)-1].Detail = fmt.Sprintf("ConfigMap %q is already used by Guestbook %q", g.Spec.ConfigMapName, o.Name)
		}
	}
	return errs
}

// ValidateGuestbookUpdate checks what may not change on a Guestbook.
func ValidateGuestbookUpdate(old, g *webappv1.Guestbook) field.ErrorList {
	if old.Spec.ConfigMapName != g.Spec.ConfigMapName {
		return field.ErrorList{field.Forbidden(field.NewPath("spec", "configMapName"),
			fmt.Sprintf("cannot change from %q: the pods mount it, and the operator never takes over another ConfigMap; create a new Guestbook instead",
				old.Spec.ConfigMapName))}
	}
	return nil
}

// GuestbookUpdateWarnings warns about updates that are allowed but do not do
// what a user may expect.
func GuestbookUpdateWarnings(old, g *webappv1.Guestbook) []string {
	if old.Spec.Alias != g.Spec.Alias {
		return []string{fmt.Sprintf("spec.alias changed from %q to %q: the existing ConfigMap %q is never overwritten, so its content stays",
			old.Spec.Alias, g.Spec.Alias, g.Spec.ConfigMapName)}
	}
	return nil
}

// reservedNamespaces may not hold Guestbook operands: they belong to the
// cluster or to the operator itself.
var reservedNamespaces = sets.New("kube-system", "kube-public", "kube-node-lease", "default")

// imageRef is the grammar of a container image reference: an optional
// registry host, a lowercase repository path, and a tag and/or digest.
var imageRef = regexp.MustCompile(`^` +
	`(?:(?:[a-zA-Z0-9](?:[a-zA-Z0-9-]*[a-zA-Z0-9])?)(?:\.(?:[a-zA-Z0-9](?:[a-zA-Z0-9-]*[a-zA-Z0-9])?))*(?::[0-9]+)?/)?` +
	`[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*(?:/[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*)*` +
	`(?::[\w][\w.-]{0,127})?` +
	`(?:@[A-Za-z][A-Za-z0-9]*(?:[-_+.][A-Za-z][A-Za-z0-9]*)*:[0-9a-fA-F]{32,})?$`)

// ValidateOperatorConfig checks an OperatorConfig beyond its schema.
// operatorNamespace is where the operator runs; operands may not go there.
func ValidateOperatorConfig(c *operatorv1alpha1.OperatorConfig, operatorNamespace string) field.ErrorList {
	var errs field.ErrorList
	if c.Name != operatorv1alpha1.SingletonName {
		errs = append(errs, field.Invalid(field.NewPath("metadata", "name"), c.Name,
			"OperatorConfig is a singleton; the only accepted name is 'cluster'"))
	}
	ns := c.Spec.Guestbook.Namespace
	nsPath := field.NewPath("spec", "guestbook", "namespace")
	switch {
	case reservedNamespaces.Has(ns):
		errs = append(errs, field.Forbidden(nsPath, fmt.Sprintf("%q belongs to the cluster; choose a namespace of its own for Guestbook operands", ns)))
	case ns != "" && ns == operatorNamespace:
		errs = append(errs, field.Forbidden(nsPath, fmt.Sprintf("%q is the operator's own namespace (Pod Security restricted); choose another one for Guestbook operands", ns)))
	}
	if img := c.Spec.Guestbook.Image; img != "" {
		errs = append(errs, validateImage(field.NewPath("spec", "guestbook", "image"), img)...)
	}
	return errs
}

// ValidateGuestbookImage checks the manager's default Guestbook image (its
// --guestbook-image) as spec.guestbook.image is checked.
func ValidateGuestbookImage(img string) field.ErrorList {
	return validateImage(field.NewPath("guestbookImage"), img)
}

func validateImage(p *field.Path, img string) field.ErrorList {
	if !imageRef.MatchString(img) {
		return field.ErrorList{field.Invalid(p, img,
			"must be a container image reference such as registry.example.com/team/app:1.2 or app@sha256:<hex>")}
	}
	return nil
}
