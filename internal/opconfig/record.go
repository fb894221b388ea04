package opconfig

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	utilvalidation "k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/controller-runtime/pkg/client"

	operatorv1alpha1 "github.com/example/myoperator/apis/operator/v1alpha1"
	"github.com/example/myoperator/internal/validation"
)

// RecordName is the ConfigMap in the operator's namespace that holds the
// last accepted configuration.
const RecordName = "myoperator-accepted-config"

// recordKey is the ConfigMap's data key holding the Record as JSON.
const recordKey = "accepted.json"

// RecordConfigMap returns the ConfigMap that stores rec. Its writer labels
// it as the operator's (names.ManagedByLabel).
func RecordConfigMap(namespace string, rec *Record) (*corev1.ConfigMap, error) {
	raw, err := json.Marshal(rec)
	if err != nil {
		return nil, err
	}
	cm := &corev1.ConfigMap{Data: map[string]string{recordKey: string(raw)}}
	cm.Name, cm.Namespace = RecordName, namespace
	return cm, nil
}

// UnusableRecordError says why the stored record is not used: it does not
// decode, or it holds a configuration the operator would refuse in an
// OperatorConfig. The operator then runs as if there were no record, and
// the next accepted OperatorConfig rewrites it.
type UnusableRecordError struct {
	Namespace string
	Reason    string
}

func (e *UnusableRecordError) Error() string {
	return fmt.Sprintf("ConfigMap %s/%s is not a usable configuration record, so it is ignored: %s", e.Namespace, RecordName, e.Reason)
}

// ReadRecord reads the record; nil, nil when there is none. A record that
// does not decode or validate is returned as nil with an
// *UnusableRecordError; any other error is a failed read.
func ReadRecord(ctx context.Context, r client.Reader, namespace string) (*Record, error) {
	cm := &corev1.ConfigMap{}
	err := r.Get(ctx, client.ObjectKey{Namespace: namespace, Name: RecordName}, cm)
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading ConfigMap %s/%s: %w", namespace, RecordName, err)
	}
	raw, found := cm.Data[recordKey]
	if !found {
		return nil, &UnusableRecordError{Namespace: namespace, Reason: fmt.Sprintf("it has no data key %s", recordKey)}
	}
	rec := &Record{}
	if err := json.Unmarshal([]byte(raw), rec); err != nil {
		return nil, &UnusableRecordError{Namespace: namespace, Reason: fmt.Sprintf("%s does not decode: %v", recordKey, err)}
	}
	if errs := ValidateRecord(rec, namespace); len(errs) > 0 {
		return nil, &UnusableRecordError{Namespace: namespace, Reason: errs.ToAggregate().Error()}
	}
	return rec, nil
}

// ValidateRecord checks a record as an OperatorConfig is checked: the
// webhook's rules (internal/validation) and the schema's enumerations and
// formats, which a ConfigMap does not have, on the recorded spec and on the
// configuration in effect.
func ValidateRecord(rec *Record, operatorNamespace string) field.ErrorList {
	var errs field.ErrorList
	if rec.SourceUID == "" {
		errs = append(errs, field.Required(field.NewPath("sourceUID"), "the UID of the accepted OperatorConfig"))
	}
	e := rec.Effective
	asSpec := operatorv1alpha1.OperatorConfigSpec{ManagementState: e.ManagementState, LogLevel: e.LogLevel,
		Drinks:    operatorv1alpha1.DrinksConfig{DefaultSize: e.DrinkDefaultSize},
		Guestbook: operatorv1alpha1.GuestbookConfig{Namespace: e.GuestbookNamespace, Image: e.GuestbookImage}}
	errs = append(errs, validateSpec(field.NewPath("effective"), asSpec, operatorNamespace)...)
	errs = append(errs, validateSpec(field.NewPath("spec"), rec.Spec, operatorNamespace)...)
	return errs
}

// validateSpec checks a complete spec: every field set, each one a value
// an OperatorConfig may hold.
func validateSpec(p *field.Path, s operatorv1alpha1.OperatorConfigSpec, operatorNamespace string) field.ErrorList {
	var errs field.ErrorList
	oneOf := func(fp *field.Path, v string, allowed ...string) {
		for _, a := range allowed {
			if v == a {
				return
			}
		}
		errs = append(errs, field.NotSupported(fp, v, allowed))
	}
	oneOf(p.Child("managementState"), string(s.ManagementState), string(operatorv1alpha1.Managed), string(operatorv1alpha1.Unmanaged))
	oneOf(p.Child("logLevel"), string(s.LogLevel), string(operatorv1alpha1.LogDebug), string(operatorv1alpha1.LogInfo), string(operatorv1alpha1.LogError))
	oneOf(p.Child("drinks", "defaultSize"), string(s.Drinks.DefaultSize), "Small", "Medium", "Large")
	nsPath := p.Child("guestbook", "namespace")
	for _, msg := range utilvalidation.IsDNS1123Label(s.Guestbook.Namespace) {
		errs = append(errs, field.Invalid(nsPath, s.Guestbook.Namespace, msg))
	}
	if s.Guestbook.Image == "" {
		errs = append(errs, field.Required(p.Child("guestbook", "image"), ""))
	}
	c := &operatorv1alpha1.OperatorConfig{Spec: s}
	c.Name = operatorv1alpha1.SingletonName
	for _, err := range validation.ValidateOperatorConfig(c, operatorNamespace) {
		// The webhook's paths start at spec; here they start at p.
		err.Field = p.String() + err.Field[len("spec"):]
		errs = append(errs, err)
	}
	return errs
}

// Records keeps the record as last read from the API server, for every
// reconcile and admission that resolves the configuration, so that the
// record is read where the configuration changes, not once per Drink:
// live on first use, again on every OperatorConfig reconcile (Refresh),
// and again the first time it is used after this replica became leader
// (the previous leader may have rewritten it since). It is never read from
// the manager's cache, which holds only ConfigMaps labelled as the
// operator's and so would miss a record that lost its label.
type Records struct {
	// Reader reads from the API server (the manager's APIReader).
	Reader client.Reader
	// Namespace is the operator's namespace, where the record lives.
	Namespace string
	// Elected is closed once this replica leads; nil for always.
	Elected <-chan struct{}

	mu            sync.Mutex
	loaded        bool
	loadedLeading bool
	rec           *Record
	problem       error
}

func (s *Records) leading() bool {
	if s.Elected == nil {
		return true
	}
	select {
	case <-s.Elected:
		return true
	default:
		return false
	}
}

// Get returns the record (nil: none, or none usable), reading it when it
// was never read, or not since this replica became leader.
func (s *Records) Get(ctx context.Context) (*Record, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.loaded && (s.loadedLeading || !s.leading()) {
		return s.rec, nil
	}
	if _, err := s.refreshLocked(ctx); err != nil {
		return nil, err
	}
	return s.rec, nil
}

// Refresh reads the record from the API server. problem, when not nil,
// says why the stored record is not used (an *UnusableRecordError); err is
// a failed read, which keeps what was read before.
func (s *Records) Refresh(ctx context.Context) (problem, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.refreshLocked(ctx)
}

func (s *Records) refreshLocked(ctx context.Context) (problem, err error) {
	leading := s.leading()
	rec, err := ReadRecord(ctx, s.Reader, s.Namespace)
	var unusable *UnusableRecordError
	if err != nil && !errors.As(err, &unusable) {
		return nil, err
	}
	s.rec, s.problem, s.loaded, s.loadedLeading = rec, nil, true, leading
	if unusable != nil {
		s.problem = unusable
	}
	return s.problem, nil
}

// Set is what the operator just wrote.
func (s *Records) Set(rec *Record) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.rec, s.problem, s.loaded, s.loadedLeading = rec, nil, true, s.leading()
}
