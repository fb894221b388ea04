package reconcile_test

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	networkingv1 "k8s.io/api/networking/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	drinksv1 "github.com/example/myoperator/apis/drinks/v1"
	webappv1 "github.com/example/myoperator/apis/webapp/v1"
	"github.com/example/myoperator/internal/names"
	"github.com/example/myoperator/reconcile"
	"github.com/example/myoperator/test/framework/testenv"
)

// foreignCase is an operand name taken by someone else's object.
type foreignCase struct {
	name string
	// foreign is the object that holds the operand's name.
	foreign func(ns, name string) client.Object
	// owner creates the Drink or Guestbook whose operand it would be and
	// returns a function that reads its conditions.
	owner func(t *testing.T, ns, name string) func() ([]metav1.Condition, error)
	// operand is an empty object of the operand's type.
	operand func() client.Object
	// ownerKind is Drink or Guestbook; reason the conflict's reason.
	ownerKind, reason string
}

// TestForeignOperandLeftAlone: an object that holds a Drink's or
// Guestbook's operand name, and that the owner does not control, is left
// byte for byte as it is (same resourceVersion, no owner reference) for
// 10 s while the owner reports Ready=False and an event naming it; once it
// is deleted, the operand appears within 10 s.
func TestForeignOperandLeftAlone(t *testing.T) {
	ensureOperandNamespace(t)
	drinkOwner := func(t *testing.T, ns, name string) func() ([]metav1.Condition, error) {
		key := client.ObjectKey{Namespace: ns, Name: name}
		writeAs(t, "v1", key, drinksv1.DrinkSpec{DisplayName: "Mine", Beverage: "tea"})
		return func() ([]metav1.Condition, error) {
			d := &drinksv1.Drink{}
			err := k8s.Get(testCtx, key, d)
			return d.Status.Conditions, err
		}
	}
	guestbookOwner := func(t *testing.T, _, name string) func() ([]metav1.Condition, error) {
		g := &webappv1.Guestbook{ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec: webappv1.GuestbookSpec{Size: 1, ConfigMapName: name}}
		if err := k8s.Create(testCtx, g); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = k8s.Delete(testCtx, g) })
		return func() ([]metav1.Condition, error) {
			err := k8s.Get(testCtx, client.ObjectKeyFromObject(g), g)
			return g.Status.Conditions, err
		}
	}
	tests := []foreignCase{{
		name:      "ConfigMap without labels or owner",
		foreign:   func(ns, name string) client.Object { return foreignConfigMap(ns, name, nil, nil) },
		owner:     drinkOwner,
		operand:   func() client.Object { return &corev1.ConfigMap{} },
		ownerKind: "Drink", reason: "ConfigMapConflict",
	}, {
		// Labelled as the operator's, so the cache holds it: the owner
		// must look at its controller, not at its labels.
		name: "ConfigMap labelled managed-by, controlled by another Drink",
		foreign: func(ns, name string) client.Object {
			return foreignConfigMap(ns, name, map[string]string{names.ManagedByLabel: names.ManagedByValue},
				[]metav1.OwnerReference{{APIVersion: "example.com/v1", Kind: "Drink", Name: "someone-else",
					UID: types.UID("9e4c4f5e-0000-4000-8000-000000000001"), Controller: ptr.To(true)}})
		},
		owner:     drinkOwner,
		operand:   func() client.Object { return &corev1.ConfigMap{} },
		ownerKind: "Drink", reason: "ConfigMapConflict",
	}, {
		// A Guestbook's ConfigMap is mounted into its page: one someone
		// else made is used only when labelled for this Guestbook.
		name:      "a Guestbook's ConfigMap someone else made, unlabelled",
		foreign:   func(ns, name string) client.Object { return foreignConfigMap(ns, name, nil, nil) },
		owner:     guestbookOwner,
		operand:   func() client.Object { return &corev1.ConfigMap{} },
		ownerKind: "Guestbook", reason: "ConfigMapConflict",
	}, {
		name: "a Guestbook's ConfigMap labelled managed-by, controlled by nobody",
		foreign: func(ns, name string) client.Object {
			return foreignConfigMap(ns, name, map[string]string{names.ManagedByLabel: names.ManagedByValue}, nil)
		},
		owner:     guestbookOwner,
		operand:   func() client.Object { return &corev1.ConfigMap{} },
		ownerKind: "Guestbook", reason: "ConfigMapConflict",
	}, {
		name: "a Guestbook's ConfigMap labelled for another Guestbook",
		foreign: func(ns, name string) client.Object {
			return foreignConfigMap(ns, name, map[string]string{webappv1.MountLabel: "someone-else"}, nil)
		},
		owner:     guestbookOwner,
		operand:   func() client.Object { return &corev1.ConfigMap{} },
		ownerKind: "Guestbook", reason: "ConfigMapConflict",
	}, {
		name:      "StatefulSet",
		foreign:   foreignStatefulSet,
		owner:     guestbookOwner,
		operand:   func() client.Object { return &appsv1.StatefulSet{} },
		ownerKind: "Guestbook", reason: "StatefulSetConflict",
	}, {
		name:      "Service",
		foreign:   foreignService,
		owner:     guestbookOwner,
		operand:   func() client.Object { return &corev1.Service{} },
		ownerKind: "Guestbook", reason: "ServiceConflict",
	}}
	ns := namespace(t)
	for i, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			name := fmt.Sprintf("taken-%d", i)
			objNS := ns
			if tc.ownerKind == "Guestbook" {
				objNS = operandNS
			}
			foreign := tc.foreign(objNS, name)
			if err := k8s.Create(testCtx, foreign, client.FieldOwner("someone-else")); err != nil {
				t.Fatal(err)
			}
			before := foreign.DeepCopyObject().(client.Object)
			conflicts := counter(t, "myoperator_operand_conflicts_total", foreign)
			created := time.Now()
			conditions := tc.owner(t, ns, name)
			ref := objNS + "/" + name

			testenv.Eventually(t, 10*time.Second, func() string {
				conds, err := conditions()
				if err != nil {
					return err.Error()
				}
				c := meta.FindStatusCondition(conds, "Ready")
				if c == nil || c.Status != metav1.ConditionFalse || c.Reason != tc.reason || !strings.Contains(c.Message, ref) {
					return fmt.Sprintf("%s Ready condition %+v: want False, reason %s, naming %s", tc.ownerKind, c, tc.reason, ref)
				}
				return ""
			})
			testenv.Eventually(t, 10*time.Second, func() string {
				for _, e := range eventsAbout(t, tc.ownerKind, name) {
					if e.Type == corev1.EventTypeWarning && e.Reason == tc.reason && strings.Contains(e.Note, ref) {
						return ""
					}
				}
				return fmt.Sprintf("no Warning event %s naming %s", tc.reason, ref)
			})
			if got := counter(t, "myoperator_operand_conflicts_total", foreign); got <= conflicts {
				t.Errorf("myoperator_operand_conflicts_total for the kind is %v, was %v: the conflict is not counted", got, conflicts)
			}

			time.Sleep(time.Until(created.Add(10 * time.Second)))
			now := tc.operand()
			if err := k8s.Get(testCtx, client.ObjectKeyFromObject(foreign), now); err != nil {
				t.Fatal(err)
			}
			if now.GetResourceVersion() != before.GetResourceVersion() || !apiequality.Semantic.DeepEqual(now.GetOwnerReferences(), before.GetOwnerReferences()) {
				t.Fatalf("the foreign %s changed within 10 s: resourceVersion %s (was %s), owner references %+v (were %+v)",
					tc.name, now.GetResourceVersion(), before.GetResourceVersion(), now.GetOwnerReferences(), before.GetOwnerReferences())
			}

			if err := k8s.Delete(testCtx, now); err != nil {
				t.Fatal(err)
			}
			deleted := time.Now()
			testenv.Eventually(t, 10*time.Second, func() string {
				got := tc.operand()
				if err := k8s.Get(testCtx, client.ObjectKeyFromObject(foreign), got); err != nil {
					return "operand not created: " + err.Error()
				}
				if got.GetUID() == before.GetUID() {
					return "the foreign object is still there"
				}
				if c := metav1.GetControllerOf(got); c == nil || c.Kind != tc.ownerKind || c.Name != name {
					return fmt.Sprintf("operand controller %+v, want the %s", c, tc.ownerKind)
				}
				return ""
			})
			t.Logf("operand created %s after the foreign object was deleted", time.Since(deleted).Round(time.Millisecond))
		})
	}
}

// TestLegacyConfigMapAdopted: a ConfigMap left by the previous release
// (unlabelled, its owner references naming the Drink's UID, with or
// without the controller flag) is adopted in place: same UID and data,
// labelled, the Drink its controller referenced in v1, an event says so.
// Until its owner reference names the Drink, it is a conflict.
func TestLegacyConfigMapAdopted(t *testing.T) {
	ns := namespace(t)
	for _, controller := range []*bool{ptr.To(true), nil} {
		t.Run(fmt.Sprintf("controller %v", ptr.Deref(controller, false)), func(t *testing.T) {
			t.Parallel()
			key := client.ObjectKey{Namespace: ns, Name: fmt.Sprintf("legacy-%v", controller != nil)}
			legacy := map[string]string{"name": "Old", "drink": "tea"}
			cm := foreignConfigMap(key.Namespace, key.Name, nil, nil)
			cm.Data = maps.Clone(legacy)
			if err := k8s.Create(testCtx, cm, client.FieldOwner("myoperator-previous-release")); err != nil {
				t.Fatal(err)
			}
			writeAs(t, "v1alpha1", key, drinksv1.DrinkSpec{DisplayName: "Old", Beverage: "tea"})
			d := &drinksv1.Drink{}
			testenv.Eventually(t, 10*time.Second, func() string {
				if err := k8s.Get(testCtx, key, d); err != nil {
					return err.Error()
				}
				if c := meta.FindStatusCondition(d.Status.Conditions, drinksv1.ConditionReady); c == nil || c.Reason != "ConfigMapConflict" {
					return fmt.Sprintf("Ready %+v, want ConfigMapConflict before the owner reference names the Drink", c)
				}
				return ""
			})
			cm.OwnerReferences = []metav1.OwnerReference{{APIVersion: "example.com/v1alpha1", Kind: "Drink", Name: d.Name, UID: d.UID,
				Controller: controller, BlockOwnerDeletion: controller}}
			if err := k8s.Update(testCtx, cm, client.FieldOwner("myoperator-previous-release")); err != nil {
				t.Fatal(err)
			}
			testenv.Eventually(t, 10*time.Second, converged(key, legacy))
			got := &corev1.ConfigMap{}
			if err := k8s.Get(testCtx, key, got); err != nil {
				t.Fatal(err)
			}
			if got.UID != cm.UID {
				t.Errorf("ConfigMap recreated: UID %s, was %s", got.UID, cm.UID)
			}
			if got.Labels[names.ManagedByLabel] != names.ManagedByValue {
				t.Errorf("adopted ConfigMap not labelled: %v", got.Labels)
			}
			if c := metav1.GetControllerOf(got); c == nil || c.UID != d.UID || c.APIVersion != "example.com/v1" || len(got.OwnerReferences) != 1 {
				t.Errorf("owner references %+v, want the Drink as the one controller, in v1", got.OwnerReferences)
			}
			testenv.Eventually(t, 10*time.Second, func() string {
				for _, e := range eventsAbout(t, "Drink", key.Name) {
					if e.Reason == reconcile.ReasonConfigMapAdopted {
						return ""
					}
				}
				return "no ConfigMapAdopted event"
			})
		})
	}
}

// TestGuestbookDriftReverted: another writer's change to any field the
// operator sets on the Guestbook's StatefulSet, Service or NetworkPolicy is
// reverted within 10 s, with an event naming the field.
func TestGuestbookDriftReverted(t *testing.T) {
	g := &webappv1.Guestbook{ObjectMeta: metav1.ObjectMeta{Name: "drift"},
		Spec: webappv1.GuestbookSpec{Size: 2, ConfigMapName: "drift-cm"}}
	if err := k8s.Create(testCtx, g); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = k8s.Delete(testCtx, g) })
	runPods(t, g)
	testenv.Eventually(t, 10*time.Second, guestbookReady(g))
	key := client.ObjectKey{Namespace: operandNS, Name: g.Name}
	// imageBefore is the operator's image, read by the image drift.
	var imageBefore string

	tests := []struct {
		name, event, field string
		// drift changes the operand as another writer would.
		drift func() error
		// reverted returns "" once the operand is as the operator wants.
		reverted func() string
	}{{
		name: "kubectl scale (scale subresource)", event: "StatefulSetCorrected", field: "spec.replicas",
		drift: func() error {
			sts := &appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: key.Name}}
			return k8s.SubResource("scale").Patch(testCtx, sts, client.RawPatch(types.MergePatchType, []byte(`{"spec":{"replicas":5}}`)),
				client.FieldOwner("kubectl-scale"))
		},
		reverted: func() string {
			sts := &appsv1.StatefulSet{}
			if err := k8s.Get(testCtx, key, sts); err != nil {
				return err.Error()
			}
			if r := ptr.Deref(sts.Spec.Replicas, 0); r != 2 {
				return fmt.Sprintf("replicas %d, want 2", r)
			}
			return ""
		},
	}, {
		// The selector is an atomic map: a change of one key moves all of it.
		name: "Service selector edited", event: "ServiceCorrected", field: "spec.selector",
		drift: func() error {
			svc := &corev1.Service{}
			if err := k8s.Get(testCtx, key, svc); err != nil {
				return err
			}
			svc.Spec.Selector[webappv1.RoleLabel] = webappv1.RoleStandby
			return k8s.Update(testCtx, svc, client.FieldOwner("kubectl-edit"))
		},
		reverted: func() string {
			svc := &corev1.Service{}
			if err := k8s.Get(testCtx, key, svc); err != nil {
				return err.Error()
			}
			if got := svc.Spec.Selector[webappv1.RoleLabel]; got != webappv1.RoleActive {
				return fmt.Sprintf("Service selects role %q, want active", got)
			}
			return ""
		},
	}, {
		name: "container image edited", event: "StatefulSetCorrected", field: "spec.template.spec.containers[0].image",
		drift: func() error {
			sts := &appsv1.StatefulSet{}
			if err := k8s.Get(testCtx, key, sts); err != nil {
				return err
			}
			imageBefore = sts.Spec.Template.Spec.Containers[0].Image
			sts.Spec.Template.Spec.Containers[0].Image = "example.com/other:latest"
			return k8s.Update(testCtx, sts, client.FieldOwner("kubectl-edit"))
		},
		reverted: func() string {
			sts := &appsv1.StatefulSet{}
			if err := k8s.Get(testCtx, key, sts); err != nil {
				return err.Error()
			}
			// The operator's image exactly, not merely another one than the
			// drifted: a correction to a wrong value must fail too.
			if img := sts.Spec.Template.Spec.Containers[0].Image; img != imageBefore {
				return fmt.Sprintf("image %s, want %s (the operator's, before the edit)", img, imageBefore)
			}
			return ""
		},
	}, {
		// The probes are the operator's: failover follows the readiness
		// probe, so its period and threshold are not anyone's to change.
		name: "readiness probe edited", event: "StatefulSetCorrected", field: "spec.template.spec.containers[0].readinessProbe.periodSeconds",
		drift: func() error {
			sts := &appsv1.StatefulSet{}
			if err := k8s.Get(testCtx, key, sts); err != nil {
				return err
			}
			c := &sts.Spec.Template.Spec.Containers[0]
			if c.ReadinessProbe == nil {
				return fmt.Errorf("the StatefulSet's container has no readiness probe")
			}
			c.ReadinessProbe.PeriodSeconds = 30
			return k8s.Update(testCtx, sts, client.FieldOwner("kubectl-edit"))
		},
		reverted: func() string {
			sts := &appsv1.StatefulSet{}
			if err := k8s.Get(testCtx, key, sts); err != nil {
				return err.Error()
			}
			c := sts.Spec.Template.Spec.Containers[0]
			get := func(path string) corev1.ProbeHandler {
				return corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: path, Port: intstr.FromString("http"), Scheme: corev1.URISchemeHTTP}}
			}
			want := map[string]*corev1.Probe{
				"readiness": {ProbeHandler: get("/readyz"), PeriodSeconds: 2, FailureThreshold: 1, SuccessThreshold: 1, TimeoutSeconds: 1},
				"liveness":  {ProbeHandler: get("/healthz"), PeriodSeconds: 10, FailureThreshold: 3, SuccessThreshold: 1, TimeoutSeconds: 1},
			}
			for kind, got := range map[string]*corev1.Probe{"readiness": c.ReadinessProbe, "liveness": c.LivenessProbe} {
				if diff := cmp.Diff(want[kind], got); diff != "" {
					return fmt.Sprintf("%s probe (-want +got):\n%s", kind, diff)
				}
			}
			return ""
		},
	}, {
		name: "Service port removed", event: "ServiceCorrected", field: "spec.ports",
		drift: func() error {
			svc := &corev1.Service{}
			if err := k8s.Get(testCtx, key, svc); err != nil {
				return err
			}
			svc.Spec.Ports = []corev1.ServicePort{{Name: "other", Port: 8081, TargetPort: intstr.FromInt32(8081), Protocol: corev1.ProtocolTCP}}
			return k8s.Update(testCtx, svc, client.FieldOwner("kubectl-edit"))
		},
		reverted: func() string {
			svc := &corev1.Service{}
			if err := k8s.Get(testCtx, key, svc); err != nil {
				return err.Error()
			}
			for _, p := range svc.Spec.Ports {
				if p.Name == "http" && p.Port == 80 {
					return ""
				}
			}
			return fmt.Sprintf("Service ports %+v: the http port is missing", svc.Spec.Ports)
		},
	}, {
		// Egress dropped from the policy types lets the pods send
		// anywhere; the policy the operator writes lets them send nothing.
		// (A rule another writer adds is theirs, as a policy of their own
		// would be: policies only add what they allow.)
		name: "NetworkPolicy egress type removed", event: "NetworkPolicyCorrected", field: "spec.policyTypes",
		drift: func() error {
			np := &networkingv1.NetworkPolicy{}
			if err := k8s.Get(testCtx, key, np); err != nil {
				return err
			}
			np.Spec.PolicyTypes = []networkingv1.PolicyType{networkingv1.PolicyTypeIngress}
			return k8s.Update(testCtx, np, client.FieldOwner("kubectl-edit"))
		},
		reverted: func() string {
			np := &networkingv1.NetworkPolicy{}
			if err := k8s.Get(testCtx, key, np); err != nil {
				return err.Error()
			}
			if !slices.Contains(np.Spec.PolicyTypes, networkingv1.PolicyTypeEgress) {
				return fmt.Sprintf("NetworkPolicy types %v, want Egress among them (no egress allowed)", np.Spec.PolicyTypes)
			}
			return ""
		},
	}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			start := time.Now().Truncate(time.Second)
			kind := strings.TrimSuffix(tc.event, "Corrected")
			corrections := counterOfKind(t, "myoperator_drift_corrections_total", kind)
			if err := tc.drift(); err != nil {
				t.Fatal(err)
			}
			testenv.Eventually(t, 10*time.Second, tc.reverted)
			t.Logf("reverted after %s", time.Since(start).Round(time.Millisecond))
			testenv.Eventually(t, 10*time.Second, func() string {
				for _, e := range eventsAbout(t, "Guestbook", g.Name) {
					if e.Reason == tc.event && strings.Contains(e.Note, tc.field) && !eventTime(e).Before(start) {
						return ""
					}
				}
				var seen []string
				for _, e := range eventsAbout(t, "Guestbook", g.Name) {
					seen = append(seen, fmt.Sprintf("%s at %s: %s", e.Reason, eventTime(e), e.Note))
				}
				return fmt.Sprintf("no %s event naming %s since %s; events: %v", tc.event, tc.field, start, seen)
			})
			if got := counterOfKind(t, "myoperator_drift_corrections_total", kind); got <= corrections {
				t.Errorf("myoperator_drift_corrections_total{kind=%q} is %v, was %v: the correction is not counted", kind, got, corrections)
			}
		})
	}
}

// TestCopiedLabelsNeverActive: a Ready pod that carries the Guestbook's
// pod labels but is not controlled by its StatefulSet is never made
// active, labelled or counted, before and after the real pods run.
func TestCopiedLabelsNeverActive(t *testing.T) {
	g := &webappv1.Guestbook{ObjectMeta: metav1.ObjectMeta{Name: "impostor"},
		Spec: webappv1.GuestbookSpec{Size: 1, ConfigMapName: "impostor-cm"}}
	if err := k8s.Create(testCtx, g); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = k8s.Delete(testCtx, g) })
	sts := &appsv1.StatefulSet{}
	testenv.Eventually(t, 10*time.Second, func() string {
		if err := k8s.Get(testCtx, client.ObjectKey{Namespace: operandNS, Name: g.Name}, sts); err != nil {
			return err.Error()
		}
		return ""
	})
	fake := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: operandNS, Name: "impostor-copy", Labels: sts.Spec.Template.Labels},
		Spec: sts.Spec.Template.Spec}
	if err := k8s.Create(testCtx, fake); err != nil {
		t.Fatal(err)
	}
	setPodReady(t, fake.Name, true)
	check := func() {
		t.Helper()
		if err := k8s.Get(testCtx, client.ObjectKeyFromObject(fake), fake); err != nil {
			t.Fatal(err)
		}
		if role, ok := fake.Labels[webappv1.RoleLabel]; ok {
			t.Fatalf("the pod with copied labels got role %q", role)
		}
		if err := k8s.Get(testCtx, client.ObjectKeyFromObject(g), g); err != nil {
			t.Fatal(err)
		}
		if g.Status.Active == fake.Name || strings.Contains(strings.Join(g.Status.Standby, ","), fake.Name) {
			t.Fatalf("status names the pod with copied labels: %+v", g.Status)
		}
	}
	for range 10 {
		time.Sleep(500 * time.Millisecond)
		check()
	}
	if c := meta.FindStatusCondition(g.Status.Conditions, webappv1.ConditionReady); c == nil || c.Reason != reconcile.ReasonNoActivePod || !strings.Contains(c.Message, "0 of 1") {
		t.Errorf("before the real pod runs, Ready %+v: want NoActivePod, 0 of 1 pods Ready", c)
	}
	pods := runPods(t, g)
	testenv.Eventually(t, 10*time.Second, guestbookReady(g))
	check()
	if g.Status.Active != pods[0] {
		t.Errorf("active %q, want the StatefulSet's pod %s", g.Status.Active, pods[0])
	}
}

// counter reads the manager's counter name for the kind of obj (the
// manager runs in this process and registers its metrics there).
func counter(t *testing.T, name string, obj client.Object) float64 {
	t.Helper()
	kind := "ConfigMap"
	switch obj.(type) {
	case *appsv1.StatefulSet:
		kind = "StatefulSet"
	case *corev1.Service:
		kind = "Service"
	}
	return counterOfKind(t, name, kind)
}

func counterOfKind(t *testing.T, name, kind string) float64 {
	t.Helper()
	families, err := metrics.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "kind" && l.GetValue() == kind {
					return m.GetCounter().GetValue()
				}
			}
		}
	}
	return 0
}

// guestbookReady returns "" once the Guestbook is Ready for its generation.
func guestbookReady(g *webappv1.Guestbook) func() string {
	return func() string {
		if err := k8s.Get(testCtx, client.ObjectKeyFromObject(g), g); err != nil {
			return err.Error()
		}
		if g.Status.ObservedGeneration != g.Generation || !meta.IsStatusConditionTrue(g.Status.Conditions, webappv1.ConditionReady) {
			return fmt.Sprintf("Guestbook %s not Ready: %+v", g.Name, g.Status)
		}
		return ""
	}
}

// eventsAbout returns the events, in any namespace, about an object of a
// kind and name.
func eventsAbout(t *testing.T, kind, name string) []eventsv1.Event {
	t.Helper()
	list := &eventsv1.EventList{}
	if err := k8s.List(testCtx, list); err != nil {
		t.Fatal(err)
	}
	var out []eventsv1.Event
	for _, e := range list.Items {
		if e.Regarding.Kind == kind && e.Regarding.Name == name {
			out = append(out, e)
		}
	}
	return out
}

// eventTime is when an event, or the last of its series, happened.
func eventTime(e eventsv1.Event) time.Time {
	if e.Series != nil {
		return e.Series.LastObservedTime.Time
	}
	return e.EventTime.Time
}

// ensureOperandNamespace creates the default operand namespace as the
// operator would, for tests that put objects there before any Guestbook.
func ensureOperandNamespace(t *testing.T) {
	t.Helper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: operandNS, Labels: map[string]string{
		names.ManagedByLabel: names.ManagedByValue, reconcile.PodSecurityEnforce: "restricted"}}}
	if err := k8s.Create(testCtx, ns); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
}

func foreignConfigMap(ns, name string, labels map[string]string, owners []metav1.OwnerReference) *corev1.ConfigMap {
	return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: labels, OwnerReferences: owners},
		Data: map[string]string{"owner": "someone else"}}
}

func foreignStatefulSet(ns, name string) client.Object {
	labels := map[string]string{"app": "someone-elses-" + name}
	return &appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: appsv1.StatefulSetSpec{Replicas: ptr.To[int32](0), Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "example.com/app:1"}}}}}}
}

func foreignService(ns, name string) client.Object {
	return &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: corev1.ServiceSpec{Selector: map[string]string{"app": "someone-elses-" + name},
			Ports: []corev1.ServicePort{{Name: "web", Port: 8080, Protocol: corev1.ProtocolTCP}}}}
}

// TestGuestbookMountsLabelledConfigMap: a ConfigMap of the operand
// namespace that the operator did not create, labelled
// webapp.my.domain/guestbook with the Guestbook's name by whoever may
// write there, is mounted as it is: the StatefulSet names it, and the
// ConfigMap keeps its resourceVersion and gains no owner.
func TestGuestbookMountsLabelledConfigMap(t *testing.T) {
	ensureOperandNamespace(t)
	cm := foreignConfigMap(operandNS, "users-own", map[string]string{webappv1.MountLabel: "users-own"}, nil)
	if err := k8s.Create(testCtx, cm, client.FieldOwner("someone-else")); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = k8s.Delete(testCtx, cm) })
	g := &webappv1.Guestbook{ObjectMeta: metav1.ObjectMeta{Name: "users-own"}, Spec: webappv1.GuestbookSpec{Size: 1, ConfigMapName: "users-own"}}
	if err := k8s.Create(testCtx, g); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = k8s.Delete(testCtx, g) })
	testenv.Eventually(t, 10*time.Second, func() string {
		sts := &appsv1.StatefulSet{}
		if err := k8s.Get(testCtx, client.ObjectKey{Namespace: operandNS, Name: g.Name}, sts); err != nil {
			return err.Error()
		}
		for _, v := range sts.Spec.Template.Spec.Volumes {
			if v.ConfigMap != nil && v.ConfigMap.Name == "users-own" {
				return ""
			}
		}
		return fmt.Sprintf("the StatefulSet mounts %+v, want ConfigMap users-own", sts.Spec.Template.Spec.Volumes)
	})
	after := &corev1.ConfigMap{}
	if err := k8s.Get(testCtx, client.ObjectKeyFromObject(cm), after); err != nil {
		t.Fatal(err)
	}
	if after.ResourceVersion != cm.ResourceVersion || len(after.OwnerReferences) != 0 {
		t.Errorf("the user's ConfigMap changed: resourceVersion %s (was %s), owners %v", after.ResourceVersion, cm.ResourceVersion, after.OwnerReferences)
	}
}
