package v1beta1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// GroupVersion is the group and version of this package's types.
var GroupVersion = schema.GroupVersion{Group: "example.com", Version: "v1beta1"}

var (
	// SchemeBuilder registers this package's types in a scheme.
	SchemeBuilder = runtime.NewSchemeBuilder(addKnownTypes)
	// AddToScheme adds this package's types to a scheme.
	AddToScheme = SchemeBuilder.AddToScheme
)

func addKnownTypes(scheme *runtime.Scheme) error {
	scheme.AddKnownTypes(GroupVersion, &Drink{}, &DrinkList{})
	metav1.AddToGroupVersion(scheme, GroupVersion)
	return nil
}
