package pause

import (
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// Annotation pauses the object it is on when its value is "true".
const Annotation = "example.com/paused"

// Values an Annotation may take; anything else is refused at admission,
// so that a typo ("yes", "True") never leaves a user believing an object
// is paused when it is not.
const (
	On  = "true"
	Off = "false"
)

// ConditionType is the condition a paused object carries.
const ConditionType = "Paused"

// Reason is the reason of the Paused condition and of Ready=False while
// paused.
const Reason = "Paused"

// Requested reports whether annotations ask to pause the object.
func Requested(annotations map[string]string) bool {
	return annotations[Annotation] == On
}

// Validate checks the annotation's value, if present.
func Validate(annotations map[string]string) field.ErrorList {
	v, ok := annotations[Annotation]
	if !ok || v == On || v == Off {
		return nil
	}
	return field.ErrorList{field.NotSupported(field.NewPath("metadata", "annotations").Key(Annotation), v, []string{On, Off})}
}

// Message says what pausing means for the object of resource named name,
// whose operands are what, and how to resume.
func Message(resource, name, what string) string {
	return "annotation " + Annotation + " is \"true\": the operator makes no change to " + what +
		"; resume with kubectl annotate " + resource + " " + name + " " + Annotation + "-"
}
