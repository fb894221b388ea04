package webhook

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	webappv1 "github.com/example/myoperator/apis/webapp/v1"
	"github.com/example/myoperator/internal/validation"
)

// +kubebuilder:webhook:path=/mutate-webapp-my-domain-v1-guestbook,mutating=true,failurePolicy=fail,sideEffects=None,groups=webapp.my.domain,resources=guestbooks,verbs=create;update,versions=v1,name=mguestbook.webapp.my.domain,admissionReviewVersions=v1,matchPolicy=Equivalent,timeoutSeconds=5
// +kubebuilder:webhook:path=/validate-webapp-my-domain-v1-guestbook,mutating=false,failurePolicy=fail,sideEffects=None,groups=webapp.my.domain,resources=guestbooks,verbs=create;update,versions=v1,name=vguestbook.webapp.my.domain,admissionReviewVersions=v1,matchPolicy=Equivalent,timeoutSeconds=5

// GuestbookWebhook defaults and validates Guestbooks.
type GuestbookWebhook struct {
	// Reader lists the other Guestbooks, whose ConfigMaps are taken.
	Reader client.Reader
}

var (
	_ admission.Defaulter[*webappv1.Guestbook] = &GuestbookWebhook{}
	_ admission.Validator[*webappv1.Guestbook] = &GuestbookWebhook{}
)

// DefaultAlias is the alias of a Guestbook that names none.
const DefaultAlias = webappv1.AliasName

// Default fills in the alias.
func (w *GuestbookWebhook) Default(_ context.Context, g *webappv1.Guestbook) error {
	DefaultGuestbook(g)
	return nil
}

// DefaultGuestbook sets the alias when it is omitted. It is idempotent.
func DefaultGuestbook(g *webappv1.Guestbook) {
	if g.Spec.Alias == "" {
		g.Spec.Alias = DefaultAlias
	}
}

// ValidateCreate checks a new Guestbook against the others.
func (w *GuestbookWebhook) ValidateCreate(ctx context.Context, g *webappv1.Guestbook) (admission.Warnings, error) {
	return nil, w.validate(ctx, nil, g)
}

// ValidateUpdate checks a changed Guestbook.
func (w *GuestbookWebhook) ValidateUpdate(ctx context.Context, old, g *webappv1.Guestbook) (admission.Warnings, error) {
	return validation.GuestbookUpdateWarnings(old, g), w.validate(ctx, old, g)
}

// ValidateDelete allows every delete.
func (w *GuestbookWebhook) ValidateDelete(context.Context, *webappv1.Guestbook) (admission.Warnings, error) {
	return nil, nil
}

func (w *GuestbookWebhook) validate(ctx context.Context, old, g *webappv1.Guestbook) error {
	others := &webappv1.GuestbookList{}
	if err := w.Reader.List(ctx, others); err != nil {
		return apierrors.NewInternalError(fmt.Errorf("listing Guestbooks to check spec.configMapName: %w", err))
	}
	errs := validation.ValidateGuestbook(g, others.Items)
	if old != nil {
		errs = append(errs, validation.ValidateGuestbookUpdate(old, g)...)
	}
	if len(errs) > 0 {
		return apierrors.NewInvalid(webappv1.GroupVersion.WithKind("Guestbook").GroupKind(), g.Name, errs)
	}
	return nil
}
