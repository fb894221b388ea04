package app_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	operatorv1alpha1 "github.com/example/myoperator/apis/operator/v1alpha1"
	"github.com/example/myoperator/bootstrap"
	"github.com/example/myoperator/internal/app"
	"github.com/example/myoperator/test/framework/testenv"
)

// TestLeaderReleasesEarlierDefaults: an OperatorConfig as v0.2.0's
// bootstrap created it (every default spelled out, owned by the
// bootstrap's Update entry) still holds them when the manager starts,
// as after a rollout in which every new pod's bootstrap met an old pod
// that wrote them back. The leader removes them, keeping a user's value,
// without any pod starting again.
func TestLeaderReleasesEarlierDefaults(t *testing.T) {
	env, cfg, c := testenv.Start(t, testenv.Options{Webhooks: true})
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: operatorNS}}); err != nil {
		t.Fatal(err)
	}
	userImage := "registry.example.com/team/guestbook:2"
	v020 := &operatorv1alpha1.OperatorConfig{
		ObjectMeta: metav1.ObjectMeta{Name: operatorv1alpha1.SingletonName},
		Spec: operatorv1alpha1.OperatorConfigSpec{
			ManagementState: operatorv1alpha1.Managed,
			LogLevel:        operatorv1alpha1.LogInfo,
			Drinks:          operatorv1alpha1.DrinksConfig{DefaultSize: "Medium"},
			Guestbook:       operatorv1alpha1.GuestbookConfig{Namespace: "guestbook", Image: "registry.k8s.io/pause:3.10"},
		},
	}
	if err := c.Create(ctx, v020, client.FieldOwner(bootstrap.FieldOwner)); err != nil {
		t.Fatal(err)
	}
	// A user's choice, made with a tool of their own, is theirs to keep.
	v020.Spec.Guestbook.Image = userImage
	if err := c.Update(ctx, v020, client.FieldOwner("kubectl-edit")); err != nil {
		t.Fatal(err)
	}

	o := app.InProcess(app.Options{
		Namespace: operatorNS, LeaderElection: true,
		LeaseDuration: 4 * time.Second, RenewDeadline: 3 * time.Second, RetryPeriod: 500 * time.Millisecond,
	})
	if err := testenv.StartManager(ctx, env, cfg, o); err != nil {
		t.Fatal(err)
	}
	want := operatorv1alpha1.OperatorConfigSpec{Guestbook: operatorv1alpha1.GuestbookConfig{Image: userImage}}
	got := &operatorv1alpha1.OperatorConfig{}
	testenv.Eventually(t, 30*time.Second, func() string {
		if err := c.Get(ctx, client.ObjectKey{Name: operatorv1alpha1.SingletonName}, got); err != nil {
			return err.Error()
		}
		if got.Spec != want {
			return fmt.Sprintf("spec %+v, want %+v", got.Spec, want)
		}
		return ""
	})
	note := got.Annotations[bootstrap.ReleasedAnnotation]
	for _, field := range []string{"managementState", "logLevel", "drinks.defaultSize", "guestbook.namespace"} {
		if !strings.Contains(note, "spec."+field+" ") {
			t.Errorf("annotation %s = %q does not name spec.%s", bootstrap.ReleasedAnnotation, note, field)
		}
	}
	if strings.Contains(note, "guestbook.image") {
		t.Errorf("annotation %s = %q names the user's image", bootstrap.ReleasedAnnotation, note)
	}
}
