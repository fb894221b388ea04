package app

import (
	"net/http/httptest"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache/informertest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllertest"

	drinksv1 "github.com/example/myoperator/apis/drinks/v1"
	operatorv1alpha1 "github.com/example/myoperator/apis/operator/v1alpha1"
	webappv1 "github.com/example/myoperator/apis/webapp/v1"
	"github.com/example/myoperator/internal/scheme"
)

// TestCachesReady: a replica is Ready once the informers the webhooks read
// have synced, whatever the Drinks' informer does (its first LIST may need
// the conversion webhook, which the Service sends only to Ready pods).
func TestCachesReady(t *testing.T) {
	for _, tc := range []struct {
		name     string
		unsynced []client.Object
		ready    bool
	}{
		{name: "every informer synced", ready: true},
		{name: "the Drinks' informer waits on the conversion webhook", unsynced: []client.Object{&drinksv1.Drink{}, &corev1.ConfigMap{}}, ready: true},
		{name: "the OperatorConfig not synced", unsynced: []client.Object{&operatorv1alpha1.OperatorConfig{}}},
		{name: "the Guestbooks not synced", unsynced: []client.Object{&webappv1.Guestbook{}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synced := len(tc.unsynced) == 0
			c := &informertest.FakeInformers{Scheme: scheme.New(), Synced: &synced,
				InformersByGVK: map[schema.GroupVersionKind]toolscache.SharedIndexInformer{}}
			// An informer made first here has not synced; the others the
			// fake makes on demand have.
			for _, obj := range tc.unsynced {
				gvk, err := apiutil.GVKForObject(obj, c.Scheme)
				if err != nil {
					t.Fatal(err)
				}
				c.InformersByGVK[gvk] = controllertest.NewFakeInformer()
			}
			err := cachesReady(c)(httptest.NewRequest("GET", "/readyz", nil))
			if (err == nil) != tc.ready {
				t.Errorf("ready: %v, want %t", err, tc.ready)
			}
		})
	}
}
