package reconcile

import (
	"context"
	"fmt"
	"slices"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	appsv1ac "k8s.io/client-go/applyconfigurations/apps/v1"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	metav1ac "k8s.io/client-go/applyconfigurations/meta/v1"
	networkingv1ac "k8s.io/client-go/applyconfigurations/networking/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	webappv1 "github.com/example/myoperator/apis/webapp/v1"
	"github.com/example/myoperator/internal/names"
)

// Labels of Guestbook operands.
const (
	NameLabel        = webappv1.NameLabel
	InstanceLabel    = webappv1.InstanceLabel
	GuestbookAppName = webappv1.AppName
	// PodSecurityEnforce is the Pod Security label of the operand namespace.
	PodSecurityEnforce = "pod-security.kubernetes.io/enforce"
)

// defaultEntries is the ConfigMap content for each alias.
var defaultEntries = map[webappv1.Alias]map[string]string{
	webappv1.AliasPhone:   {"alias": "Phone", "entry": "+1 555 0100"},
	webappv1.AliasAddress: {"alias": "Address", "entry": "1 Main Street"},
	webappv1.AliasName:    {"alias": "Name", "entry": "Guest"},
}

// DefaultGuestbookData is the content of a Guestbook ConfigMap the operator
// creates because it is absent.
func DefaultGuestbookData(alias webappv1.Alias) map[string]string {
	if d, ok := defaultEntries[alias]; ok {
		return d
	}
	return defaultEntries[webappv1.AliasName]
}

func guestbookLabels(g *webappv1.Guestbook) map[string]string {
	return map[string]string{NameLabel: GuestbookAppName, InstanceLabel: g.Name, names.ManagedByLabel: names.ManagedByValue}
}

func guestbookOwner(g *webappv1.Guestbook) *metav1ac.OwnerReferenceApplyConfiguration {
	return metav1ac.OwnerReference().WithAPIVersion(webappv1.GroupVersion.String()).WithKind("Guestbook").
		WithName(g.Name).WithUID(g.UID).WithController(true).WithBlockOwnerDeletion(true)
}

// ensureConfigMap creates the Guestbook's ConfigMap with defaults from its
// alias when it is absent. It never changes an existing one, and lets the
// pods mount one the operator did not create only when it carries
// webappv1.MountLabel with the Guestbook's name; any other is a conflict
// (rechecked soon: the label's arrival wakes no watch, since the cache
// holds only the operator's ConfigMaps).
func (r *GuestbookReconciler) ensureConfigMap(ctx context.Context, g *webappv1.Guestbook, operands client.Reader, ns string) error {
	key := client.ObjectKey{Namespace: ns, Name: g.Spec.ConfigMapName}
	cached := &corev1.ConfigMap{}
	if err := operands.Get(ctx, key, cached); err == nil && controlledBy(cached, g.UID) {
		return nil // one the operator created for this Guestbook
	}
	have := &corev1.ConfigMap{}
	err := r.APIReader.Get(ctx, key, have)
	switch {
	case err == nil && (controlledBy(have, g.UID) || have.Labels[webappv1.MountLabel] == g.Name):
		return nil // the operator's, or the user's own, labelled for it
	case err == nil:
		c := conflictWith("ConfigMap", "Guestbook", have)
		c.Hint = fmt.Sprintf("to let this Guestbook's pods mount it, label it %s=%s", webappv1.MountLabel, g.Name)
		return c
	case !apierrors.IsNotFound(err):
		return err
	}
	cm := &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: g.Spec.ConfigMapName, Labels: guestbookLabels(g),
			OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(g, webappv1.GroupVersion.WithKind("Guestbook"))}},
		Data: DefaultGuestbookData(g.Spec.Alias),
	}
	if err := r.Client.Create(ctx, cm, client.FieldOwner(FieldOwner)); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("creating ConfigMap %s/%s: %w", ns, cm.Name, err)
	}
	return nil
}

// statefulSetFor is the StatefulSet the operator wants for the Guestbook.
// Every field it sets is one the operator owns and restores when another
// writer changes it. Ports name their protocol, the default, because it is
// part of their list key: what the operator owns then reads back as it
// wrote it.
func statefulSetFor(g *webappv1.Guestbook, ns, image string) *appsv1ac.StatefulSetApplyConfiguration {
	labels := guestbookLabels(g)
	selector := webappv1.PodSelector(g.Name)
	container := corev1ac.Container().WithName("guestbook").WithImage(image).
		WithPorts(corev1ac.ContainerPort().WithName("http").WithContainerPort(guestbookPort).WithProtocol(corev1.ProtocolTCP)).
		WithVolumeMounts(corev1ac.VolumeMount().WithName("config").WithMountPath("/etc/guestbook").WithReadOnly(true)).
		WithReadinessProbe(readinessProbe()).
		WithLivenessProbe(livenessProbe()).
		WithResources(podResources(g.Spec.Pod)).
		WithSecurityContext(corev1ac.SecurityContext().
			WithAllowPrivilegeEscalation(false).WithReadOnlyRootFilesystem(true).WithRunAsNonRoot(true).
			WithCapabilities(corev1ac.Capabilities().WithDrop("ALL")))
	podSpec := corev1ac.PodSpec().
		WithContainers(container).
		WithSecurityContext(corev1ac.PodSecurityContext().WithRunAsNonRoot(true).WithRunAsUser(65532).
			WithSeccompProfile(corev1ac.SeccompProfile().WithType(corev1.SeccompProfileTypeRuntimeDefault))).
		WithAutomountServiceAccountToken(false).
		// No environment variables for every Service of the operand
		// namespace: the Guestbook server reads none, and they would show
		// its pods the namespace's other Services (and grow with them).
		WithEnableServiceLinks(false).
		WithVolumes(corev1ac.Volume().WithName("config").
			WithConfigMap(corev1ac.ConfigMapVolumeSource().WithName(g.Spec.ConfigMapName))).
		WithAffinity(podAffinity(g))
	applyPodSettings(podSpec, g.Spec.Pod)
	pod := corev1ac.PodTemplateSpec().WithLabels(labels).WithSpec(podSpec)
	spec := appsv1ac.StatefulSetSpec().WithReplicas(g.Spec.Size).WithServiceName(g.Name).
		WithSelector(metav1ac.LabelSelector().WithMatchLabels(selector)).
		WithPodManagementPolicy(appsv1.ParallelPodManagement).
		WithTemplate(pod)
	return appsv1ac.StatefulSet(g.Name, ns).WithLabels(labels).WithOwnerReferences(guestbookOwner(g)).WithSpec(spec)
}

// readinessProbe is the guestbook server's /readyz. Failover follows it:
// one failed probe marks the pod not Ready (failureThreshold 1, every 2 s),
// and the reconcile that the pod's status change triggers promotes a Ready
// standby, so a standby becomes active within one period plus one
// reconcile. Every field the API server would default is set, so that the
// probe the operator owns reads back as it is written.
func readinessProbe() *corev1ac.ProbeApplyConfiguration {
	return corev1ac.Probe().WithHTTPGet(httpGet("/readyz")).
		WithPeriodSeconds(2).WithFailureThreshold(1).WithSuccessThreshold(1).WithTimeoutSeconds(1)
}

// livenessProbe is the guestbook server's /healthz, which fails only when
// the server no longer answers: the kubelet restarts the container after
// 30 s of that. It is patient on purpose: a restart is no failover.
func livenessProbe() *corev1ac.ProbeApplyConfiguration {
	return corev1ac.Probe().WithHTTPGet(httpGet("/healthz")).
		WithPeriodSeconds(10).WithFailureThreshold(3).WithSuccessThreshold(1).WithTimeoutSeconds(1)
}

// httpGet is a GET of path on the container's port "http".
func httpGet(path string) *corev1ac.HTTPGetActionApplyConfiguration {
	return corev1ac.HTTPGetAction().WithPath(path).WithPort(intstr.FromString("http")).WithScheme(corev1.URISchemeHTTP)
}

// serviceFor is the Service that selects only the active pod.
func serviceFor(g *webappv1.Guestbook, ns string) *corev1ac.ServiceApplyConfiguration {
	return corev1ac.Service(g.Name, ns).WithLabels(guestbookLabels(g)).WithOwnerReferences(guestbookOwner(g)).
		WithSpec(corev1ac.ServiceSpec().
			WithSelector(map[string]string{NameLabel: GuestbookAppName, InstanceLabel: g.Name, webappv1.RoleLabel: webappv1.RoleActive}).
			WithPorts(corev1ac.ServicePort().WithName("http").WithProtocol(corev1.ProtocolTCP).WithPort(80).
				WithTargetPort(intstr.FromString("http"))))
}

// ensureStatefulSet converges the Guestbook's StatefulSet and returns it.
func (r *GuestbookReconciler) ensureStatefulSet(ctx context.Context, g *webappv1.Guestbook, cached client.Reader, ns, image string) (*appsv1.StatefulSet, error) {
	live, desired := &appsv1.StatefulSet{}, statefulSetFor(g, ns, image)
	return live, r.ensureOperand(ctx, g, cached, operand{
		kind: "StatefulSet", key: client.ObjectKey{Namespace: ns, Name: g.Name}, live: live, desired: desired,
		owned:   func() (any, error) { return appsv1ac.ExtractStatefulSet(live, FieldOwner) },
		guard:   func(uid types.UID) { desired.WithUID(uid) },
		added:   statefulSetAdded,
		prepare: func() error { return r.releaseCreatedFields(ctx, live, desired) },
	})
}

// statefulSetAdded are the fields of statefulSetFor that the previous
// release (v0.2.0) did not set: on a StatefulSet it applied, their absence
// is the upgrade, not another writer's change (RELEASES.md, Operands).
// The affinity is the default pod anti-affinity every Guestbook now has;
// enableServiceLinks is off in every Guestbook's pods now.
var statefulSetAdded = []string{
	"spec.template.spec.affinity",
	"spec.template.spec.containers[0].livenessProbe",
	"spec.template.spec.containers[0].readinessProbe",
	"spec.template.spec.enableServiceLinks",
}

// ensureService converges the Guestbook's Service.
func (r *GuestbookReconciler) ensureService(ctx context.Context, g *webappv1.Guestbook, cached client.Reader, ns string) error {
	live, desired := &corev1.Service{}, serviceFor(g, ns)
	return r.ensureOperand(ctx, g, cached, operand{
		kind: "Service", key: client.ObjectKey{Namespace: ns, Name: g.Name}, live: live, desired: desired,
		owned: func() (any, error) { return corev1ac.ExtractService(live, FieldOwner) },
		guard: func(uid types.UID) { desired.WithUID(uid) },
	})
}

// guestbookPort is the Guestbook server's HTTP port: the container's, the
// Service's target, the probes' and the only one its NetworkPolicy admits.
const guestbookPort = 8080

// networkPolicyFor is the NetworkPolicy that fences the Guestbook's pods
// wherever they run: ingress only on the HTTP port (from any peer: the
// Service, an Ingress controller and the kubelet's probes reach them
// there), and no egress at all, since the server only reads its mounted
// ConfigMap. It lives beside the pods, so it moves with the operand
// namespace. NetworkPolicies only add what they allow: a user who needs
// more (another peer's egress, say) adds a policy of their own rather than
// editing this one, which the operator keeps as written.
func networkPolicyFor(g *webappv1.Guestbook, ns string) *networkingv1ac.NetworkPolicyApplyConfiguration {
	return networkingv1ac.NetworkPolicy(g.Name, ns).WithLabels(guestbookLabels(g)).WithOwnerReferences(guestbookOwner(g)).
		WithSpec(networkingv1ac.NetworkPolicySpec().
			WithPodSelector(metav1ac.LabelSelector().WithMatchLabels(webappv1.PodSelector(g.Name))).
			WithPolicyTypes(networkingv1.PolicyTypeIngress, networkingv1.PolicyTypeEgress).
			WithIngress(networkingv1ac.NetworkPolicyIngressRule().
				WithPorts(networkingv1ac.NetworkPolicyPort().WithProtocol(corev1.ProtocolTCP).
					WithPort(intstr.FromInt32(guestbookPort)))))
}

// ensureNetworkPolicy converges the Guestbook's NetworkPolicy. It runs
// before the StatefulSet's, so that no pod of the Guestbook starts
// unfenced in a new operand namespace.
func (r *GuestbookReconciler) ensureNetworkPolicy(ctx context.Context, g *webappv1.Guestbook, cached client.Reader, ns string) error {
	live, desired := &networkingv1.NetworkPolicy{}, networkPolicyFor(g, ns)
	return r.ensureOperand(ctx, g, cached, operand{
		kind: "NetworkPolicy", key: client.ObjectKey{Namespace: ns, Name: g.Name}, live: live, desired: desired,
		owned: func() (any, error) { return networkingv1ac.ExtractNetworkPolicy(live, FieldOwner) },
		guard: func(uid types.UID) { desired.WithUID(uid) },
	})
}

// roles is the outcome of a role assignment.
type roles struct {
	active, previous string
	standby          []string
	ready            int
	reason           string
	// promoted: this reconcile labelled a pod active, after the one status
	// names had gone or stopped being Ready.
	promoted bool
	// stuck is the first pod that cannot run the template, if any.
	stuck    stuckPod
	hasStuck bool
}

// complete reports whether the application runs as the Guestbook asks:
// one pod active and every pod Ready.
func (r roles) complete(size int32) bool {
	return r.active != "" && int32(r.ready) >= size
}

// failedOver reports whether a pod took over from the one status names
// (for the event; the event recorder folds a repeat into one event): a
// promotion, even of a pod of the same name (the StatefulSet recreates a
// deleted pod under its name, and the new one may be the Ready pod
// promoted), or another name in status.
func (r roles) failedOver() bool {
	return r.previous != "" && r.active != "" && (r.promoted || r.active != r.previous)
}

// assignRoles labels exactly one Ready pod active and the others standby.
// When the active pod is gone or not Ready, it is demoted before a Ready
// standby is promoted, so two pods never carry the active label at once.
// Only pods the Guestbook's StatefulSet controls take part: labels can be
// copied by anyone, so a pod that only carries them is never promoted,
// labelled or counted.
func (r *GuestbookReconciler) assignRoles(ctx context.Context, g *webappv1.Guestbook, cached client.Reader, sts *appsv1.StatefulSet) (roles, error) {
	pods := &corev1.PodList{}
	if err := cached.List(ctx, pods, client.InNamespace(sts.Namespace),
		client.MatchingLabels{NameLabel: GuestbookAppName, InstanceLabel: g.Name}); err != nil {
		return roles{}, err
	}
	items := slices.DeleteFunc(pods.Items, func(p corev1.Pod) bool { return !controlledBy(&p, sts.UID) })
	slices.SortFunc(items, func(a, b corev1.Pod) int { return strings.Compare(a.Name, b.Name) })
	out := roles{previous: g.Status.Active}
	keep := ""
	for i := range items {
		p := &items[i]
		if podReady(p) {
			out.ready++
		}
		if p.Labels[webappv1.RoleLabel] == webappv1.RoleActive && podReady(p) && keep == "" {
			keep = p.Name
		}
	}
	// Demote every active pod but the one kept, before any promotion.
	for i := range items {
		p := &items[i]
		if p.Labels[webappv1.RoleLabel] == webappv1.RoleActive && p.Name != keep {
			if err := r.setRole(ctx, p, webappv1.RoleStandby); err != nil {
				return roles{}, err
			}
			out.reason = fmt.Sprintf("pod %s stopped being Ready", p.Name)
		}
	}
	if keep == "" {
		candidates := promotionOrder(items)
		for i := range candidates {
			if p := &candidates[i]; podReady(p) {
				keep = p.Name
				if out.reason == "" {
					out.reason = "the previous active pod is gone"
				}
				if err := r.setRole(ctx, p, webappv1.RoleActive); err != nil {
					return roles{}, err
				}
				// Counted here, at the one write that promotes, so that a
				// reconcile that later fails or reads a stale status
				// neither misses nor repeats it.
				if out.previous != "" {
					failoversTotal.Inc()
				}
				out.promoted = true
				break
			}
		}
	}
	out.active = keep
	out.stuck, out.hasStuck = findStuck(items)
	for i := range items {
		p := &items[i]
		if p.Name == keep || !p.DeletionTimestamp.IsZero() {
			continue
		}
		if err := r.setRole(ctx, p, webappv1.RoleStandby); err != nil {
			return roles{}, err
		}
		out.standby = append(out.standby, p.Name)
	}
	return out, nil
}

// promotionOrder is the order in which pods are considered for active:
// the standbys first, in name order, then the others. A standby has run
// and been Ready the longest, where a pod the StatefulSet just recreated
// (the deleted active pod, under its name) has only now started.
func promotionOrder(items []corev1.Pod) []corev1.Pod {
	notStandby := func(p corev1.Pod) int {
		if p.Labels[webappv1.RoleLabel] == webappv1.RoleStandby {
			return 0
		}
		return 1
	}
	out := slices.Clone(items)
	slices.SortStableFunc(out, func(a, b corev1.Pod) int { return notStandby(a) - notStandby(b) })
	return out
}

// setRole patches a pod's role label, if it differs.
func (r *GuestbookReconciler) setRole(ctx context.Context, p *corev1.Pod, role string) error {
	if p.Labels[webappv1.RoleLabel] == role {
		return nil
	}
	base := p.DeepCopy()
	if p.Labels == nil {
		p.Labels = map[string]string{}
	}
	p.Labels[webappv1.RoleLabel] = role
	// The resourceVersion in the patch makes it fail, rather than act on a
	// stale view, when the pod changed since it was read.
	err := r.Client.Patch(ctx, p, client.MergeFromWithOptions(base, client.MergeFromWithOptimisticLock{}))
	if apierrors.IsNotFound(err) {
		return nil
	}
	return err
}

func podReady(p *corev1.Pod) bool {
	if !p.DeletionTimestamp.IsZero() || p.Status.Phase != corev1.PodRunning {
		return false
	}
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// removeOperandsIn deletes what the operator created for the Guestbook in
// namespace old, after guestbook.namespace changed: the operands move, they
// are not left running twice. It runs once the operands in the new
// namespace are Ready, so the application never stops on a move. Each
// object is read by name and deleted only if the Guestbook controls it,
// with its UID as a precondition; a user's own ConfigMap stays. The
// NetworkPolicy goes last, after the StatefulSet whose pods it fences;
// those pods, terminating, are no longer in the Service.
func (r *GuestbookReconciler) removeOperandsIn(ctx context.Context, g *webappv1.Guestbook, old string) error {
	for _, obj := range []client.Object{
		&appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Namespace: old, Name: g.Name}},
		&corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: old, Name: g.Name}},
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: old, Name: g.Spec.ConfigMapName}},
		&networkingv1.NetworkPolicy{ObjectMeta: metav1.ObjectMeta{Namespace: old, Name: g.Name}},
	} {
		err := r.APIReader.Get(ctx, client.ObjectKeyFromObject(obj), obj)
		if apierrors.IsNotFound(err) {
			continue
		}
		if err != nil {
			return fmt.Errorf("reading %s/%s in the previous operand namespace: %w", old, obj.GetName(), err)
		}
		if !controlledBy(obj, g.UID) {
			continue
		}
		uid := obj.GetUID()
		if err := r.Client.Delete(ctx, obj, client.Preconditions{UID: &uid}); client.IgnoreNotFound(err) != nil {
			return fmt.Errorf("removing %s/%s from the previous operand namespace: %w", old, obj.GetName(), err)
		}
	}
	return nil
}
