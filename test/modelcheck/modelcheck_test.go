package modelcheck

import (
	"context"
	"fmt"
	"maps"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	drinksv1 "github.com/example/myoperator/apis/drinks/v1"
	operatorv1alpha1 "github.com/example/myoperator/apis/operator/v1alpha1"
	"github.com/example/myoperator/internal/app"
	"github.com/example/myoperator/test/framework/testenv"
	"github.com/example/myoperator/test/model"
	"github.com/example/myoperator/test/reliability"
)

const (
	// fieldManager is the user's server-side apply field manager.
	fieldManager = "model-user"
	// settle bounds how long the cluster may take to match the model after
	// a step.
	settle = 10 * time.Second
	// Labels the operator puts on the ConfigMaps it controls (docs/DESIGN.md
	// names them; spelt out here rather than imported).
	managedByLabel = "app.kubernetes.io/managed-by"
	managedByValue = "myoperator"
)

// TestModel draws MODEL_STEPS actions (default 300, about 35 s here) from MODEL_SEED
// (default 1) and checks the cluster against test/model after each one; on
// a failure it shrinks the sequence for at most MODEL_SHRINK (default 3m).
func TestModel(t *testing.T) {
	seedN := envInt(t, "MODEL_SEED", 1)
	seed := uint64(seedN)
	steps := envInt(t, "MODEL_STEPS", 300)
	shrinkFor, err := time.ParseDuration(envString("MODEL_SHRINK", "3m"))
	if err != nil {
		t.Fatalf("MODEL_SHRINK: %v", err)
	}
	// The operator's logs would bury the diff; a failure names the seed to
	// replay with logs instead.
	ctrllog.SetLogger(logr.Discard())
	env, cfg, c := testenv.Start(t, testenv.Options{Webhooks: true})
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "myoperator-system"}}); err != nil {
		t.Fatal(err)
	}
	if err := c.Create(ctx, &operatorv1alpha1.OperatorConfig{ObjectMeta: metav1.ObjectMeta{Name: operatorv1alpha1.SingletonName}}); err != nil {
		t.Fatal(err)
	}
	queues := newScheduled()
	if err := testenv.StartManager(ctx, env, cfg, app.Options{NewQueue: queues.newQueue}); err != nil {
		t.Fatal(err)
	}
	r := &runner{ctx: ctx, c: c, queues: queues}

	start := time.Now()
	gen := model.NewGenerator(seed)
	m := model.New()
	ns := r.freshNamespace(t)
	var seq []model.Action
	for i := range steps {
		a := gen.Next(m)
		seq = append(seq, a)
		diff := r.step(ns, m, a)
		if diff == "" {
			continue
		}
		t.Errorf("MODEL_SEED=%d: step %d of %d, %s: the cluster does not match the model:\n%s\nsequence so far:\n%s",
			seed, i+1, steps, a, diff, render(seq))
		deadline := time.Now().Add(shrinkFor)
		shortest := model.Shrink(seq, func(candidate []model.Action) bool {
			return r.replay(t, candidate) != ""
		}, deadline)
		t.Fatalf("MODEL_SEED=%d: shortest failing sequence found (%d of %d steps, shrunk for %s):\n%s\nits failure:\n%s",
			seed, len(shortest), len(seq), time.Since(deadline.Add(-shrinkFor)).Round(time.Second), render(shortest), r.replay(t, shortest))
	}
	took := time.Since(start)
	t.Logf("MODEL_SEED=%d: %d steps matched the model in %s; %d matches came while the operator was still acting and were judged again once it was idle for %s, %d steps waited for a reconcile scheduled within the settle time (RequeueAfter or retry); %d settled with one scheduled later; %s",
		seed, steps, took.Round(time.Millisecond), r.lateActivity, quietFor, r.scheduledWaits, r.scheduledLater, queues.summary())
	reliability.Save(t, map[string]any{
		"seed":           seedN,
		"steps":          steps,
		"seconds":        reliability.Seconds(took),
		"lateMatches":    r.lateActivity,
		"scheduledWaits": r.scheduledWaits,
		"quietMs":        quietFor.Milliseconds(),
	}, "MODEL_SEED", "MODEL_STEPS")
}

// runner acts for the user and compares the cluster with the model.
type runner struct {
	ctx context.Context
	c   client.Client
	n   int
	// lateActivity counts the matches the operator was not yet done
	// with: without waiting for it to be quiet, the step would have been
	// judged while it was still acting.
	lateActivity int
	// queues are the controllers' work queues, watched for the reconciles
	// they hold for later.
	queues *scheduled
	// scheduledWaits counts the matches judged again because a reconcile
	// was scheduled before the settle deadline; scheduledLater the
	// settled steps that left one scheduled after it.
	scheduledWaits, scheduledLater int
	// waitedScheduled: this step's settle waited for a scheduled reconcile.
	waitedScheduled bool
}

// freshNamespace creates the next namespace for a sequence.
func (r *runner) freshNamespace(t *testing.T) string {
	t.Helper()
	r.n++
	ns := fmt.Sprintf("model-%d", r.n)
	if err := r.c.Create(r.ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
		t.Fatal(err)
	}
	return ns
}

// replay runs seq from scratch (fresh namespace, OperatorConfig back to
// Managed/Medium), skipping what is not applicable there, and returns the
// first mismatch, prefixed with its step, or "".
func (r *runner) replay(t *testing.T, seq []model.Action) string {
	t.Helper()
	m := model.New()
	ns := r.freshNamespace(t)
	for _, reset := range []model.Action{{Kind: model.SetManagement, Managed: true}, {Kind: model.SetDefaultSize, Size: m.Config.DefaultSize}} {
		if err := r.do(ns, reset); err != nil {
			return "resetting the OperatorConfig: " + err.Error()
		}
	}
	if diff := r.settle(ns, m); diff != "" {
		return "after resetting the OperatorConfig: " + diff
	}
	for i, a := range seq {
		if !m.Applicable(a) {
			continue
		}
		if diff := r.step(ns, m, a); diff != "" {
			return fmt.Sprintf("step %d, %s:\n%s", i+1, a, diff)
		}
	}
	return ""
}

// step performs a in ns, advances m, and waits until the cluster matches
// it: an action the model accepts must succeed, one it refuses must be
// refused as invalid.
func (r *runner) step(ns string, m *model.Model, a model.Action) string {
	err := r.do(ns, a)
	switch accepted := m.Step(a); {
	case accepted && err != nil:
		return fmt.Sprintf("  %s failed: %v; the model accepts it", a, err)
	case !accepted && err == nil:
		return fmt.Sprintf("  %s was accepted; the model refuses it", a)
	case !accepted && !apierrors.IsInvalid(err) && !apierrors.IsForbidden(err):
		return fmt.Sprintf("  %s refused with %v; the model refuses it as invalid", a, err)
	}
	return r.settle(ns, m)
}

// do performs a in namespace ns.
func (r *runner) do(ns string, a model.Action) error {
	var err error
	switch a.Kind {
	case model.Create:
		err = r.write(ns, a, true)
	case model.Update:
		err = r.write(ns, a, false)
	case model.Delete:
		err = r.deleteDrink(ns, a.Name)
	case model.Recreate:
		if err = r.deleteDrink(ns, a.Name); err == nil {
			err = r.write(ns, a, true)
		}
	case model.EditOperand, model.AddForeignKey:
		err = retry.RetryOnConflict(retry.DefaultRetry, func() error {
			cm := &corev1.ConfigMap{}
			if err := r.c.Get(r.ctx, client.ObjectKey{Namespace: ns, Name: a.Name}, cm); err != nil {
				return err
			}
			if cm.Data == nil {
				cm.Data = map[string]string{}
			}
			cm.Data[a.Key] = a.Value
			return r.c.Update(r.ctx, cm)
		})
	case model.DeleteOperand:
		err = r.c.Delete(r.ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: a.Name}})
	case model.SetManagement, model.SetDefaultSize:
		err = retry.RetryOnConflict(retry.DefaultRetry, func() error {
			oc := &operatorv1alpha1.OperatorConfig{}
			if err := r.c.Get(r.ctx, client.ObjectKey{Name: operatorv1alpha1.SingletonName}, oc); err != nil {
				return err
			}
			if a.Kind == model.SetManagement {
				oc.Spec.ManagementState = operatorv1alpha1.Unmanaged
				if a.Managed {
					oc.Spec.ManagementState = operatorv1alpha1.Managed
				}
			} else {
				oc.Spec.Drinks.DefaultSize = operatorv1alpha1.DrinkSize(a.Size)
			}
			return r.c.Update(r.ctx, oc)
		})
	}
	return err
}

// write creates or updates a Drink through a.Version: by create, or update
// of a fresh read, or by server-side apply of the version's whole spec.
func (r *runner) write(ns string, a model.Action, create bool) error {
	gvk := drinksv1.GroupVersion.WithKind("Drink")
	gvk.Version = a.Version
	if a.Method == model.ByApply {
		u := &unstructured.Unstructured{}
		u.SetGroupVersionKind(gvk)
		u.SetNamespace(ns)
		u.SetName(a.Name)
		u.Object["spec"] = specOf(a)
		return r.c.Apply(r.ctx, client.ApplyConfigurationFromUnstructured(u), client.FieldOwner(fieldManager), client.ForceOwnership)
	}
	if create {
		u := &unstructured.Unstructured{}
		u.SetGroupVersionKind(gvk)
		u.SetNamespace(ns)
		u.SetName(a.Name)
		u.Object["spec"] = specOf(a)
		return r.c.Create(r.ctx, u)
	}
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		u := &unstructured.Unstructured{}
		u.SetGroupVersionKind(gvk)
		if err := r.c.Get(r.ctx, client.ObjectKey{Namespace: ns, Name: a.Name}, u); err != nil {
			return err
		}
		spec, _, _ := unstructured.NestedMap(u.Object, "spec")
		if spec == nil {
			spec = map[string]any{}
		}
		maps.Copy(spec, specOf(a))
		if a.Version != model.V1alpha1 && a.Fields.Size == "" {
			delete(spec, "size") // cleared: the webhook gives the default size
		}
		if a.Version == model.V1 && len(a.Fields.Extras) == 0 {
			delete(spec, "extras")
		}
		u.Object["spec"] = spec
		return r.c.Update(r.ctx, u)
	})
}

// specOf is the spec a write sends, in its version's field names.
func specOf(a model.Action) map[string]any {
	f := a.Fields
	switch a.Version {
	case model.V1alpha1:
		return map[string]any{"name": f.DisplayName, "drink": f.Beverage}
	case model.V1beta1:
		s := map[string]any{"name": f.DisplayName, "drink": f.Beverage, "sugar": int64(f.SugarCubes)}
		if f.Size != "" {
			s["size"] = f.Size
		}
		return s
	}
	s := map[string]any{"displayName": f.DisplayName, "beverage": f.Beverage, "sugarCubes": int64(f.SugarCubes)}
	if f.Size != "" {
		s["size"] = f.Size
	}
	if len(f.Extras) > 0 {
		extras := make([]any, 0, len(f.Extras))
		for _, e := range f.Extras {
			extras = append(extras, e)
		}
		s["extras"] = extras
	}
	return s
}

func (r *runner) deleteDrink(ns, name string) error {
	return r.c.Delete(r.ctx, &drinksv1.Drink{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}})
}

// settle waits, at most settle, until the cluster matches m and the
// operator is quiet, and returns the last mismatch. A match alone is not
// enough: the operator may act again a moment later (a second reconcile
// of the same change, a requeue), and a write that undoes the match would
// go unseen; so a match counts only once the operator has been idle for
// quietFor (quiet) and the cluster still matches after it.
func (r *runner) settle(ns string, m *model.Model) string {
	deadline := time.Now().Add(settle)
	r.waitedScheduled = false
	defer func() {
		if r.waitedScheduled {
			r.scheduledWaits++
		}
	}()
	for {
		diff := r.collectGarbage(ns)
		if diff == "" {
			diff = r.check(ns, m)
		}
		if diff == "" {
			if !r.quiet(deadline) {
				r.lateActivity++
				if time.Now().After(deadline) {
					return fmt.Sprintf("  the cluster matches, but the operator did not stay idle for %s within %s: it keeps reconciling", quietFor, settle)
				}
				continue
			}
			if diff = r.check(ns, m); diff == "" {
				if _, later := r.queues.dueBefore(deadline); later > 0 {
					r.scheduledLater++
				}
				return ""
			}
		}
		if time.Now().After(deadline) {
			return diff
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// quietFor is how long the operator must stay idle for a match to count.
// An action reaches the operator's queue through a watch on loopback,
// a few milliseconds; 50 ms is well past it.
const quietFor = 50 * time.Millisecond

// quiet reports whether the operator, which runs in this process, did
// nothing for quietFor: every controller's queue empty and no reconcile
// running at both ends, and no reconcile started in between (the
// controller-runtime metrics of this process's registry); and whether no
// reconcile is scheduled before deadline (a RequeueAfter or a retry,
// which the queues' depth does not count until it is due): one that is
// would act before the step's time is up, so the step waits for it. One
// scheduled later (a recheck, a retry backed off far) cannot be waited
// for; it is counted, and the next step's settle sees what it did.
func (r *runner) quiet(deadline time.Time) bool {
	if due, _ := r.queues.dueBefore(deadline); due > 0 {
		r.waitedScheduled = true
		time.Sleep(10 * time.Millisecond)
		return false
	}
	busy, before := activity()
	if busy {
		time.Sleep(10 * time.Millisecond)
		return false
	}
	time.Sleep(quietFor)
	busy, after := activity()
	return !busy && after == before
}

// activity reads the controllers' queue depths, running reconciles and the
// reconciles done so far.
func activity() (busy bool, reconciles float64) {
	families, err := metrics.Registry.Gather()
	if err != nil {
		return true, 0
	}
	for _, f := range families {
		for _, m := range f.GetMetric() {
			switch f.GetName() {
			case "workqueue_depth":
				busy = busy || m.GetGauge().GetValue() > 0
			case "controller_runtime_active_workers":
				busy = busy || m.GetGauge().GetValue() > 0
			case "controller_runtime_reconcile_total":
				reconciles += m.GetCounter().GetValue()
			}
		}
	}
	return busy, reconciles
}

// collectGarbage plays Kubernetes' garbage collector, which envtest does not
// run (there is no kube-controller-manager): it deletes every ConfigMap in
// ns whose owners are all gone. In a real cluster that is the GC's job, not
// the operator's, so the runner does it rather than the model.
func (r *runner) collectGarbage(ns string) string {
	drinks := &drinksv1.DrinkList{}
	if err := r.c.List(r.ctx, drinks, client.InNamespace(ns)); err != nil {
		return err.Error()
	}
	live := map[types.UID]bool{}
	for _, d := range drinks.Items {
		live[d.UID] = true
	}
	cms := &corev1.ConfigMapList{}
	if err := r.c.List(r.ctx, cms, client.InNamespace(ns)); err != nil {
		return err.Error()
	}
	for _, cm := range cms.Items {
		refs := cm.OwnerReferences
		if len(refs) == 0 || slices.ContainsFunc(refs, func(o metav1.OwnerReference) bool { return live[o.UID] }) {
			continue
		}
		if err := r.c.Delete(r.ctx, &cm, client.Preconditions{UID: &cm.UID}); err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
			return "garbage collection: " + err.Error()
		}
	}
	return ""
}

// check compares the cluster with m and lists every difference.
func (r *runner) check(ns string, m *model.Model) string {
	var diffs []string
	add := func(format string, args ...any) { diffs = append(diffs, "  "+fmt.Sprintf(format, args...)) }

	oc := &operatorv1alpha1.OperatorConfig{}
	if err := r.c.Get(r.ctx, client.ObjectKey{Name: operatorv1alpha1.SingletonName}, oc); err != nil {
		return err.Error()
	}
	wantState := "Unmanaged"
	if m.Config.Managed {
		wantState = "Managed"
	}
	if e := oc.Status.Effective; oc.Status.ObservedGeneration != oc.Generation || e == nil ||
		string(e.ManagementState) != wantState || string(e.DrinkDefaultSize) != m.Config.DefaultSize {
		add("OperatorConfig: observedGeneration %d of %d, effective %+v; model: %s, defaultSize %s",
			oc.Status.ObservedGeneration, oc.Generation, oc.Status.Effective, wantState, m.Config.DefaultSize)
	}

	drinks := &drinksv1.DrinkList{}
	if err := r.c.List(r.ctx, drinks, client.InNamespace(ns)); err != nil {
		return err.Error()
	}
	uids := map[string]types.UID{}
	for i := range drinks.Items {
		d := &drinks.Items[i]
		uids[d.Name] = d.UID
		want, ok := m.Drinks[d.Name]
		if !ok {
			add("Drink %s: in the cluster, not in the model", d.Name)
			continue
		}
		r.checkDrink(d, want, m.Config.Managed, add)
	}
	for _, name := range slices.Sorted(maps.Keys(m.Drinks)) {
		if _, ok := uids[name]; !ok {
			add("Drink %s: in the model, not in the cluster", name)
		}
	}

	cms := &corev1.ConfigMapList{}
	if err := r.c.List(r.ctx, cms, client.InNamespace(ns)); err != nil {
		return err.Error()
	}
	seen := map[string]bool{}
	for _, cm := range cms.Items {
		want, ok := m.ConfigMaps[cm.Name]
		switch {
		case cm.Name == "kube-root-ca.crt":
		case !ok && cm.Labels[managedByLabel] == managedByValue:
			add("ConfigMap %s: labelled as the operator's, owners %s, but the model has none (orphaned or duplicated)", cm.Name, owners(cm.OwnerReferences))
		case !ok:
			add("ConfigMap %s: in the cluster, not in the model", cm.Name)
		default:
			seen[cm.Name] = true
			if !maps.Equal(cm.Data, want) {
				add("ConfigMap %s data:\n      model:   %s\n      cluster: %s", cm.Name, render(want), render(cm.Data))
			}
			if ref := metav1.GetControllerOf(&cm); ref == nil || ref.UID != uids[cm.Name] || ref.Kind != "Drink" {
				add("ConfigMap %s: controller %s, want Drink %s with UID %s", cm.Name, owners(cm.OwnerReferences), cm.Name, uids[cm.Name])
			}
		}
	}
	for _, name := range slices.Sorted(maps.Keys(m.ConfigMaps)) {
		if !seen[name] {
			add("ConfigMap %s: in the model (%s), not in the cluster", name, render(m.ConfigMaps[name]))
		}
	}
	slices.Sort(diffs)
	return strings.Join(diffs, "\n")
}

// checkDrink compares one Drink's spec as every version shows it, and its
// status, with the model.
func (r *runner) checkDrink(d *drinksv1.Drink, want *model.Drink, managed bool, add func(string, ...any)) {
	for _, v := range model.Versions {
		u := &unstructured.Unstructured{}
		gvk := drinksv1.GroupVersion.WithKind("Drink")
		gvk.Version = v
		u.SetGroupVersionKind(gvk)
		if err := r.c.Get(r.ctx, client.ObjectKeyFromObject(d), u); err != nil {
			add("Drink %s via %s: %v", d.Name, v, err)
			continue
		}
		if got, exp := view(u), model.View(want.Spec, v); !maps.Equal(got, exp) {
			add("Drink %s spec via %s:\n      model:   %s\n      cluster: %s", d.Name, v, render(exp), render(got))
		}
	}
	s := d.Status
	if s.ObservedGeneration != d.Generation {
		add("Drink %s: observedGeneration %d, generation %d", d.Name, s.ObservedGeneration, d.Generation)
	}
	if s.AuthoredVersion != want.Authored {
		add("Drink %s: status.authoredVersion %q, model %q", d.Name, s.AuthoredVersion, want.Authored)
	}
	ready := meta.FindStatusCondition(s.Conditions, drinksv1.ConditionReady)
	switch {
	case ready == nil:
		add("Drink %s: no Ready condition", d.Name)
	case ready.ObservedGeneration != d.Generation:
		add("Drink %s: Ready is about generation %d, not %d", d.Name, ready.ObservedGeneration, d.Generation)
	case managed && ready.Status != metav1.ConditionTrue:
		add("Drink %s: Ready %s/%s %q, model: True (Managed)", d.Name, ready.Status, ready.Reason, ready.Message)
	case !managed && (ready.Status != metav1.ConditionFalse || ready.Reason != "Unmanaged"):
		add("Drink %s: Ready %s/%s, model: False/Unmanaged", d.Name, ready.Status, ready.Reason)
	}
	if managed && s.ConfigMapName != d.Name {
		add("Drink %s: status.configMapName %q, want %q", d.Name, s.ConfigMapName, d.Name)
	}
}

// view is a Drink's spec as read through its version, in model.View's form.
func view(u *unstructured.Unstructured) map[string]string {
	spec, _, _ := unstructured.NestedMap(u.Object, "spec")
	out := map[string]string{}
	for k, v := range spec {
		switch v := v.(type) {
		case string:
			out[k] = v
		case int64:
			out[k] = strconv.FormatInt(v, 10)
		case []any:
			var items []string
			for _, i := range v {
				items = append(items, fmt.Sprint(i))
			}
			slices.Sort(items)
			out[k] = strings.Join(items, ",")
		default:
			out[k] = fmt.Sprint(v)
		}
	}
	// Fields at their zero value may be left out of the stored object.
	switch u.GroupVersionKind().Version {
	case model.V1beta1:
		setDefault(out, "sugar", "0")
	case model.V1:
		setDefault(out, "sugarCubes", "0")
		setDefault(out, "extras", "")
	}
	return out
}

func setDefault(m map[string]string, key, value string) {
	if _, ok := m[key]; !ok {
		m[key] = value
	}
}

func owners(refs []metav1.OwnerReference) string {
	var out []string
	for _, o := range refs {
		out = append(out, fmt.Sprintf("%s/%s uid=%s controller=%v", o.Kind, o.Name, o.UID, o.Controller != nil && *o.Controller))
	}
	return "[" + strings.Join(out, " ") + "]"
}

// render prints a sequence one action a line, or a map with sorted keys.
func render[T any](v T) string {
	switch v := any(v).(type) {
	case []model.Action:
		var b strings.Builder
		b.WriteString("[]Action{\n")
		for _, a := range v {
			b.WriteString("\t" + a.String() + ",\n")
		}
		b.WriteString("}")
		return b.String()
	case map[string]string:
		var parts []string
		for _, k := range slices.Sorted(maps.Keys(v)) {
			parts = append(parts, fmt.Sprintf("%s=%q", k, v[k]))
		}
		return "{" + strings.Join(parts, " ") + "}"
	}
	return fmt.Sprint(v)
}

func envString(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}

func envInt(t *testing.T, name string, def int) int {
	t.Helper()
	n, err := strconv.Atoi(envString(name, strconv.Itoa(def)))
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return n
}
