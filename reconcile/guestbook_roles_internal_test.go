package reconcile

import (
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	webappv1 "github.com/example/myoperator/apis/webapp/v1"
)

// TestPromotionOrder: a standby goes before a pod without the role, such
// as the active pod the StatefulSet recreated under its name; name order
// otherwise.
func TestPromotionOrder(t *testing.T) {
	pod := func(name, role string) corev1.Pod {
		p := corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name}}
		if role != "" {
			p.Labels = map[string]string{webappv1.RoleLabel: role}
		}
		return p
	}
	for _, c := range []struct {
		name string
		pods []corev1.Pod
		want []string
	}{
		{"the recreated gb-0 after the standbys", []corev1.Pod{pod("gb-0", ""), pod("gb-1", webappv1.RoleStandby), pod("gb-2", webappv1.RoleStandby)}, []string{"gb-1", "gb-2", "gb-0"}},
		{"a demoted active among standbys keeps name order", []corev1.Pod{pod("gb-0", webappv1.RoleStandby), pod("gb-1", webappv1.RoleStandby)}, []string{"gb-0", "gb-1"}},
		{"no standby: name order", []corev1.Pod{pod("gb-0", ""), pod("gb-1", webappv1.RoleActive)}, []string{"gb-0", "gb-1"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			var got []string
			for _, p := range promotionOrder(c.pods) {
				got = append(got, p.Name)
			}
			if !slices.Equal(got, c.want) {
				t.Errorf("order %v, want %v", got, c.want)
			}
		})
	}
}

// TestFailedOver: the Failover event follows a promotion, also of a pod
// under the name status already gives (the recreated active pod), and not
// the first assignment or an active pod that stayed.
func TestFailedOver(t *testing.T) {
	for _, c := range []struct {
		name string
		r    roles
		want bool
	}{
		{"first active", roles{active: "gb-0", promoted: true}, false},
		{"the active pod stayed", roles{active: "gb-0", previous: "gb-0"}, false},
		{"a standby promoted", roles{active: "gb-1", previous: "gb-0", promoted: true}, true},
		{"the recreated pod of the same name promoted", roles{active: "gb-0", previous: "gb-0", promoted: true}, true},
		{"status named another pod", roles{active: "gb-1", previous: "gb-0"}, true},
		{"no pod Ready", roles{previous: "gb-0"}, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := c.r.failedOver(); got != c.want {
				t.Errorf("failedOver() = %v, want %v", got, c.want)
			}
		})
	}
}
