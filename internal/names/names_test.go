package names_test

import (
	"testing"

	drinksv1 "github.com/example/myoperator/apis/drinks/v1"
	operatorv1alpha1 "github.com/example/myoperator/apis/operator/v1alpha1"
	webappv1 "github.com/example/myoperator/apis/webapp/v1"
	"github.com/example/myoperator/internal/names"
)

// The CRD names are written out so that the package imports nothing; they
// must still follow the API groups.
func TestCRDNamesFollowTheGroups(t *testing.T) {
	for _, tc := range []struct{ got, want string }{
		{names.DrinkCRD, "drinks." + drinksv1.GroupVersion.Group},
		{names.GuestbookCRD, "guestbooks." + webappv1.GroupVersion.Group},
		{names.OperatorConfigCRD, "operatorconfigs." + operatorv1alpha1.GroupVersion.Group},
	} {
		if tc.got != tc.want {
			t.Errorf("CRD name %q, want %q", tc.got, tc.want)
		}
	}
}
