package faults

import (
	"fmt"
	"slices"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	drinksv1 "github.com/example/myoperator/apis/drinks/v1"
	operatorv1alpha1 "github.com/example/myoperator/apis/operator/v1alpha1"
	webappv1 "github.com/example/myoperator/apis/webapp/v1"
)

const (
	// stepTimeout bounds how long the operator may take to converge on one
	// user action, including a crash, the Lease expiring and a fresh
	// manager starting.
	stepTimeout = 60 * time.Second
	// instanceLabel names a Guestbook operand's Guestbook (docs/DESIGN.md).
	instanceLabel = "app.kubernetes.io/instance"
	// newImage is the OperatorConfig's guestbook.image after the change.
	newImage = "registry.k8s.io/pause:3.9"
)

// scenario is the user's side of one trial: its Drinks live in namespace
// ns and its Guestbook is gb, both fresh names per trial, which the
// snapshot replaces by NS and GB.
type scenario struct {
	h       *harness
	ns, gb  string
	oldPod  string
	started time.Time
}

func newScenario(h *harness, n int) *scenario {
	s := &scenario{h: h, ns: trialNamespace(n), gb: trialGuestbook(n), started: time.Now()}
	if err := h.c.Create(h.ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: s.ns}}); err != nil {
		h.t.Fatal(err)
	}
	return s
}

func trialNamespace(n int) string { return fmt.Sprintf("faults-%d", n) }

func trialGuestbook(n int) string { return fmt.Sprintf("gb%d", n) }

// step is one user action: do is retried until the API server accepts it
// (the webhooks fail while no manager serves them), then converged is
// polled until it returns "".
type step struct {
	name      string
	do        func() error
	converged func() string
}

// steps covers the operator's writes: Drinks created through each version,
// one edited through another, one deleted; a Guestbook created, failed over
// and scaled; the OperatorConfig changed (a new image for the Guestbook,
// a new default size for the next Drink).
func (s *scenario) steps() []step {
	return []step{
		{"create Drink alpha via v1alpha1", func() error {
			return s.create("v1alpha1", "alpha", map[string]any{"name": "Alpha", "drink": "tea"})
		}, s.drinkReady("alpha")},
		{"create Drink beta via v1beta1", func() error {
			return s.create("v1beta1", "beta", map[string]any{"name": "Beta", "drink": "coffee", "sugar": int64(2)})
		}, s.drinkReady("beta")},
		{"create Drink gamma via v1", func() error {
			return s.create("v1", "gamma", map[string]any{"displayName": "Gamma", "beverage": "juice", "sugarCubes": int64(1), "extras": []any{"ice"}})
		}, s.drinkReady("gamma")},
		{"edit Drink alpha via v1", func() error {
			return s.edit("v1", "alpha", func(spec map[string]any) { spec["sugarCubes"] = int64(3); spec["extras"] = []any{"lemon"} })
		}, s.drinkReady("alpha")},
		{"delete Drink beta", func() error {
			return client.IgnoreNotFound(s.h.c.Delete(s.h.ctx, &drinksv1.Drink{ObjectMeta: metav1.ObjectMeta{Namespace: s.ns, Name: "beta"}}))
		}, s.gone(&drinksv1.Drink{}, "beta", &corev1.ConfigMap{}, "beta")},
		{"create Guestbook (size 2)", s.createGuestbook, s.guestbookReady(2, "")},
		{"fail the active pod over", s.failover, s.guestbookFailedOver},
		{"the old active pod Ready again", func() error { return s.setPodReady(s.oldPod, true) }, s.guestbookReady(2, "")},
		{"scale the Guestbook to 3", s.scale, s.guestbookReady(3, "")},
		{"OperatorConfig: new Guestbook image and default Drink size", func() error {
			return s.setConfig(newImage, operatorv1alpha1.DrinkSize("Large"))
		}, s.guestbookReady(3, newImage)},
		{"create Drink delta via v1 (default size)", func() error {
			return s.create("v1", "delta", map[string]any{"displayName": "Delta", "beverage": "water"})
		}, s.drinkReady("delta")},
	}
}

// run performs one step, calls accepted (if set) once the API server
// accepted it, and waits until the operator converged on it.
func (s *scenario) run(st step, accepted func()) string {
	deadline := time.Now().Add(stepTimeout)
	var err error
	for {
		if err = st.do(); err == nil {
			break
		}
		if time.Now().After(deadline) {
			return "never accepted: " + err.Error()
		}
		time.Sleep(100 * time.Millisecond)
	}
	if accepted != nil {
		accepted()
	}
	for {
		why := st.converged()
		if why == "" {
			return ""
		}
		if time.Now().After(deadline) {
			return fmt.Sprintf("not converged after %s: %s", stepTimeout, why)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func drinkGVK(version string) (u *unstructured.Unstructured) {
	u = &unstructured.Unstructured{}
	u.SetGroupVersionKind(drinksv1.GroupVersion.WithKind("Drink"))
	gvk := u.GroupVersionKind()
	gvk.Version = version
	u.SetGroupVersionKind(gvk)
	return u
}

// create creates a Drink through version; a create that landed before a
// failed answer counts as done.
func (s *scenario) create(version, name string, spec map[string]any) error {
	u := drinkGVK(version)
	u.SetNamespace(s.ns)
	u.SetName(name)
	u.Object["spec"] = spec
	if err := s.h.c.Create(s.h.ctx, u); err != nil && !apierrors.IsAlreadyExists(err) {
		return err
	}
	return nil
}

func (s *scenario) edit(version, name string, change func(map[string]any)) error {
	u := drinkGVK(version)
	if err := s.h.c.Get(s.h.ctx, client.ObjectKey{Namespace: s.ns, Name: name}, u); err != nil {
		return err
	}
	spec, _, _ := unstructured.NestedMap(u.Object, "spec")
	before := fmt.Sprint(spec)
	change(spec)
	if fmt.Sprint(spec) == before {
		return nil // an earlier try landed
	}
	u.Object["spec"] = spec
	return s.h.c.Update(s.h.ctx, u)
}

// drinkReady: the Drink is Ready at its generation and its ConfigMap is
// controlled by it.
func (s *scenario) drinkReady(name string) func() string {
	return func() string {
		d := &drinksv1.Drink{}
		if err := s.h.c.Get(s.h.ctx, client.ObjectKey{Namespace: s.ns, Name: name}, d); err != nil {
			return err.Error()
		}
		ready := meta.FindStatusCondition(d.Status.Conditions, drinksv1.ConditionReady)
		if d.Status.ObservedGeneration != d.Generation || ready == nil || ready.Status != metav1.ConditionTrue || ready.ObservedGeneration != d.Generation {
			return fmt.Sprintf("Drink %s: generation %d, status %+v", name, d.Generation, d.Status)
		}
		cm := &corev1.ConfigMap{}
		if err := s.h.c.Get(s.h.ctx, client.ObjectKey{Namespace: s.ns, Name: name}, cm); err != nil {
			return err.Error()
		}
		if ref := metav1.GetControllerOf(cm); ref == nil || ref.UID != d.UID {
			return "ConfigMap " + name + " not controlled by its Drink"
		}
		return ""
	}
}

// gone: the object and its operand are deleted (the garbage collector
// played).
func (s *scenario) gone(obj client.Object, name string, operand client.Object, operandName string) func() string {
	return func() string {
		if why := s.collectGarbage(); why != "" {
			return why
		}
		for _, o := range []struct {
			obj  client.Object
			name string
		}{{obj, name}, {operand, operandName}} {
			if err := s.h.c.Get(s.h.ctx, client.ObjectKey{Namespace: s.ns, Name: o.name}, o.obj); !apierrors.IsNotFound(err) {
				return fmt.Sprintf("%T %s still there (%v)", o.obj, o.name, err)
			}
		}
		return ""
	}
}

func (s *scenario) createGuestbook() error {
	g := &webappv1.Guestbook{ObjectMeta: metav1.ObjectMeta{Name: s.gb},
		Spec: webappv1.GuestbookSpec{Size: 2, ConfigMapName: s.gb + "-cm", Alias: webappv1.AliasPhone}}
	if err := s.h.c.Create(s.h.ctx, g); err != nil && !apierrors.IsAlreadyExists(err) {
		return err
	}
	return s.runPods()
}

// runPods plays the StatefulSet controller and the kubelet (envtest has
// neither): a Running, Ready pod for each replica the StatefulSet asks for.
func (s *scenario) runPods() error {
	sts := &appsv1.StatefulSet{}
	if err := s.h.c.Get(s.h.ctx, client.ObjectKey{Namespace: operandNS, Name: s.gb}, sts); err != nil {
		return err
	}
	for i := range *sts.Spec.Replicas {
		p := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Namespace: operandNS, Name: fmt.Sprintf("%s-%d", s.gb, i),
				Labels:          sts.Spec.Template.Labels,
				OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(sts, appsv1.SchemeGroupVersion.WithKind("StatefulSet"))}},
			Spec: sts.Spec.Template.Spec,
		}
		if err := s.h.c.Create(s.h.ctx, p); err != nil && !apierrors.IsAlreadyExists(err) {
			return err
		}
		if p.Status.Phase != corev1.PodRunning {
			if err := s.setPodReady(p.Name, true); err != nil {
				return err
			}
		}
	}
	return nil
}

func (s *scenario) setPodReady(name string, ready bool) error {
	p := &corev1.Pod{}
	if err := s.h.c.Get(s.h.ctx, client.ObjectKey{Namespace: operandNS, Name: name}, p); err != nil {
		return err
	}
	cond := corev1.ConditionFalse
	if ready {
		cond = corev1.ConditionTrue
	}
	p.Status.Phase = corev1.PodRunning
	p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: cond, LastTransitionTime: metav1.Now()}}
	return s.h.c.Status().Update(s.h.ctx, p)
}

func (s *scenario) guestbook() (*webappv1.Guestbook, error) {
	g := &webappv1.Guestbook{}
	return g, s.h.c.Get(s.h.ctx, client.ObjectKey{Name: s.gb}, g)
}

// guestbookReady: Ready at its generation with one active pod and size-1
// standbys, and its StatefulSet runs image (any when "").
func (s *scenario) guestbookReady(size int, image string) func() string {
	return func() string {
		g, err := s.guestbook()
		if err != nil {
			return err.Error()
		}
		ready := meta.FindStatusCondition(g.Status.Conditions, webappv1.ConditionReady)
		if g.Status.ObservedGeneration != g.Generation || ready == nil || ready.Status != metav1.ConditionTrue ||
			g.Status.Active == "" || len(g.Status.Standby) != size-1 {
			return fmt.Sprintf("Guestbook: generation %d, status %+v", g.Generation, g.Status)
		}
		if image == "" {
			return ""
		}
		sts := &appsv1.StatefulSet{}
		if err := s.h.c.Get(s.h.ctx, client.ObjectKey{Namespace: operandNS, Name: s.gb}, sts); err != nil {
			return err.Error()
		}
		if got := sts.Spec.Template.Spec.Containers[0].Image; got != image {
			return "StatefulSet image " + got
		}
		return ""
	}
}

func (s *scenario) failover() error {
	if s.oldPod == "" {
		g, err := s.guestbook()
		if err != nil {
			return err
		}
		s.oldPod = g.Status.Active
	}
	return s.setPodReady(s.oldPod, false)
}

func (s *scenario) guestbookFailedOver() string {
	g, err := s.guestbook()
	if err != nil {
		return err.Error()
	}
	if g.Status.Active == "" || g.Status.Active == s.oldPod {
		return fmt.Sprintf("not failed over from %s: %+v", s.oldPod, g.Status)
	}
	return ""
}

func (s *scenario) scale() error {
	g, err := s.guestbook()
	if err != nil {
		return err
	}
	if g.Spec.Size != 3 {
		g.Spec.Size = 3
		if err := s.h.c.Update(s.h.ctx, g); err != nil {
			return err
		}
	}
	sts := &appsv1.StatefulSet{}
	if err := s.h.c.Get(s.h.ctx, client.ObjectKey{Namespace: operandNS, Name: s.gb}, sts); err != nil {
		return err
	}
	if *sts.Spec.Replicas != 3 {
		return fmt.Errorf("StatefulSet at %d replicas", *sts.Spec.Replicas)
	}
	return s.runPods()
}

func (s *scenario) setConfig(image string, size operatorv1alpha1.DrinkSize) error {
	oc := &operatorv1alpha1.OperatorConfig{}
	if err := s.h.c.Get(s.h.ctx, client.ObjectKey{Name: operatorv1alpha1.SingletonName}, oc); err != nil {
		return err
	}
	if oc.Spec.Guestbook.Image == image && oc.Spec.Drinks.DefaultSize == size {
		return nil
	}
	oc.Spec.Guestbook.Image, oc.Spec.Drinks.DefaultSize = image, size
	return s.h.c.Update(s.h.ctx, oc)
}

// collectGarbage plays Kubernetes' garbage collector, which envtest does not
// run: it deletes every object of the trial whose owners are all gone
// (ConfigMaps of Drinks; the Guestbook's StatefulSet, Service, ConfigMap;
// the StatefulSet's pods).
func (s *scenario) collectGarbage() string {
	live := map[types.UID]bool{}
	drinks := &drinksv1.DrinkList{}
	if err := s.h.c.List(s.h.ctx, drinks, client.InNamespace(s.ns)); err != nil {
		return err.Error()
	}
	for _, d := range drinks.Items {
		live[d.UID] = true
	}
	gbs := &webappv1.GuestbookList{}
	if err := s.h.c.List(s.h.ctx, gbs); err != nil {
		return err.Error()
	}
	for _, g := range gbs.Items {
		live[g.UID] = true
	}
	stss := &appsv1.StatefulSetList{}
	if err := s.h.c.List(s.h.ctx, stss, client.InNamespace(operandNS)); err != nil {
		return err.Error()
	}
	for _, x := range stss.Items {
		live[x.UID] = true
	}
	var objs []client.Object
	for _, l := range []struct {
		list client.ObjectList
		ns   string
	}{{&corev1.ConfigMapList{}, s.ns}, {&corev1.ConfigMapList{}, operandNS}, {&corev1.ServiceList{}, operandNS}, {&appsv1.StatefulSetList{}, operandNS}, {&corev1.PodList{}, operandNS}} {
		if err := s.h.c.List(s.h.ctx, l.list, client.InNamespace(l.ns)); err != nil {
			return err.Error()
		}
		items, _ := meta.ExtractList(l.list)
		for _, it := range items {
			objs = append(objs, it.(client.Object))
		}
	}
	for _, o := range objs {
		refs := o.GetOwnerReferences()
		if len(refs) == 0 || slices.ContainsFunc(refs, func(r metav1.OwnerReference) bool { return live[r.UID] }) {
			continue
		}
		uid := o.GetUID()
		if err := s.h.c.Delete(s.h.ctx, o, client.Preconditions{UID: &uid}); err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
			return "garbage collection: " + err.Error()
		}
	}
	return ""
}

// settle waits, at most timeout, until the final state equals want (or,
// with want nil, is the same twice 2 s apart) and returns it with what
// differs.
func (s *scenario) settle(want []string, timeout time.Duration) ([]string, string) {
	deadline := time.Now().Add(timeout)
	var last []string
	for {
		got, err := s.snapshot()
		if err == nil {
			switch {
			case want != nil && slices.Equal(got, want):
				return got, ""
			case want == nil && last != nil && slices.Equal(got, last):
				return got, ""
			}
			last = got
		}
		if time.Now().After(deadline) {
			if err != nil {
				return last, err.Error()
			}
			return last, diffLines(want, last)
		}
		if want == nil {
			time.Sleep(2 * time.Second)
		} else {
			time.Sleep(200 * time.Millisecond)
		}
	}
}

// snapshot is the trial's final state, normalized: names (with the trial's
// namespace and Guestbook name replaced), specs, data, labels, owners by
// kind and name, conditions' status and reason, whether each status is at
// its object's generation; no UIDs, resourceVersions or times.
func (s *scenario) snapshot() ([]string, error) {
	if why := s.collectGarbage(); why != "" {
		return nil, fmt.Errorf("%s", why)
	}
	var out []string
	add := func(format string, args ...any) {
		l := fmt.Sprintf(format, args...)
		l = strings.ReplaceAll(l, s.ns, "NS")
		out = append(out, strings.ReplaceAll(l, s.gb, "GB"))
	}
	drinks := &drinksv1.DrinkList{}
	if err := s.h.c.List(s.h.ctx, drinks, client.InNamespace(s.ns)); err != nil {
		return nil, err
	}
	for _, d := range drinks.Items {
		add("Drink %s spec=%+v atGeneration=%v authored=%s configMap=%s conditions=%s", d.Name, d.Spec,
			d.Status.ObservedGeneration == d.Generation, d.Status.AuthoredVersion, d.Status.ConfigMapName,
			conditions(d.Status.Conditions, d.Generation))
	}
	gbs := &webappv1.GuestbookList{}
	if err := s.h.c.List(s.h.ctx, gbs); err != nil {
		return nil, err
	}
	for _, g := range gbs.Items {
		if g.Name != s.gb {
			continue
		}
		add("Guestbook %s spec=%+v atGeneration=%v active=%s standby=%v operandNamespace=%s conditions=%s", g.Name, g.Spec,
			g.Status.ObservedGeneration == g.Generation, g.Status.Active, g.Status.Standby, g.Status.OperandNamespace,
			conditions(g.Status.Conditions, g.Generation))
	}
	objects := func(list client.ObjectList, ns string, opts ...client.ListOption) error {
		if err := s.h.c.List(s.h.ctx, list, append(opts, client.InNamespace(ns))...); err != nil {
			return err
		}
		items, _ := meta.ExtractList(list)
		for _, it := range items {
			o := it.(client.Object)
			if o.GetName() == "kube-root-ca.crt" {
				continue
			}
			var detail string
			switch x := o.(type) {
			case *corev1.ConfigMap:
				detail = "data=" + render(x.Data)
			case *corev1.Service:
				detail = fmt.Sprintf("selector=%s ports=%v", render(x.Spec.Selector), x.Spec.Ports)
			case *appsv1.StatefulSet:
				detail = fmt.Sprintf("replicas=%d image=%s podLabels=%s", *x.Spec.Replicas, x.Spec.Template.Spec.Containers[0].Image, render(x.Spec.Template.Labels))
			}
			add("%T %s/%s labels=%s annotations=%s owners=%s %s", o, ns, o.GetName(), render(o.GetLabels()), render(o.GetAnnotations()), owners(o.GetOwnerReferences()), detail)
		}
		return nil
	}
	inst := client.MatchingLabels{instanceLabel: s.gb}
	for _, l := range []struct {
		list client.ObjectList
		ns   string
		opts []client.ListOption
	}{{&corev1.ConfigMapList{}, s.ns, nil}, {&corev1.ConfigMapList{}, operandNS, []client.ListOption{inst}},
		{&corev1.ServiceList{}, operandNS, []client.ListOption{inst}}, {&appsv1.StatefulSetList{}, operandNS, []client.ListOption{inst}},
		{&corev1.PodList{}, operandNS, []client.ListOption{inst}}} {
		if err := objects(l.list, l.ns, l.opts...); err != nil {
			return nil, err
		}
	}
	oc := &operatorv1alpha1.OperatorConfig{}
	if err := s.h.c.Get(s.h.ctx, client.ObjectKey{Name: operatorv1alpha1.SingletonName}, oc); err != nil {
		return nil, err
	}
	add("OperatorConfig atGeneration=%v effective=%+v conditions=%s", oc.Status.ObservedGeneration == oc.Generation, oc.Status.Effective,
		conditions(oc.Status.Conditions, oc.Generation))
	slices.Sort(out)
	return out, nil
}

// cleanup deletes the trial's objects and puts the OperatorConfig back,
// with the manager still running, so that the next trial starts from the
// same cluster.
func (s *scenario) cleanup() {
	t := s.h.t
	_ = s.h.c.DeleteAllOf(s.h.ctx, &drinksv1.Drink{}, client.InNamespace(s.ns))
	_ = s.h.c.Delete(s.h.ctx, &webappv1.Guestbook{ObjectMeta: metav1.ObjectMeta{Name: s.gb}})
	deadline := time.Now().Add(stepTimeout)
	for {
		err := s.setConfig(operatorv1alpha1.DefaultGuestbookImage, "Medium")
		why := s.collectGarbage()
		if err == nil && why == "" {
			snap, err := s.snapshot()
			if err == nil && len(snap) == 1 && strings.Contains(snap[0], "atGeneration=true") {
				return
			}
			why = fmt.Sprint(snap, err)
		}
		if time.Now().After(deadline) {
			t.Fatalf("cleanup: %v %s", err, why)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

func conditions(cs []metav1.Condition, generation int64) string {
	var out []string
	for _, c := range cs {
		out = append(out, fmt.Sprintf("%s=%s/%s@current=%v", c.Type, c.Status, c.Reason, c.ObservedGeneration == generation))
	}
	slices.Sort(out)
	return "[" + strings.Join(out, " ") + "]"
}

func owners(refs []metav1.OwnerReference) string {
	var out []string
	for _, o := range refs {
		out = append(out, fmt.Sprintf("%s/%s controller=%v", o.Kind, o.Name, o.Controller != nil && *o.Controller))
	}
	return "[" + strings.Join(out, " ") + "]"
}

// render prints a map with sorted keys (fmt sorts them) and other values
// as fmt does.
func render(v any) string { return fmt.Sprintf("%v", v) }
