package webhook

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/example/myoperator/apis/drinks"
	"github.com/example/myoperator/apis/drinks/conversion"
	drinksv1 "github.com/example/myoperator/apis/drinks/v1"
	operatorv1alpha1 "github.com/example/myoperator/apis/operator/v1alpha1"
	webappv1 "github.com/example/myoperator/apis/webapp/v1"
	"github.com/example/myoperator/internal/opconfig"
)

// Paths of the mutating webhooks; they match the markers and config/webhook.
const (
	MutateDrinkPath     = "/mutate-example-com-v1-drink"
	MutateGuestbookPath = "/mutate-webapp-my-domain-v1-guestbook"
	// RetiredMutateOperatorConfigPath was the OperatorConfig's defaulting
	// webhook up to v0.2.0. Its webhook configuration still names it while
	// a rollout between such a release and this one runs (the old pods'
	// bootstrap creates the OperatorConfig, which calls it, before their
	// manager serves), so it is answered, changing nothing, rather than
	// failing open on every call.
	RetiredMutateOperatorConfigPath = "/mutate-operator-example-com-v1alpha1-operatorconfig"
)

// Options configure the webhooks.
type Options struct {
	// Namespace is the namespace the operator runs in.
	Namespace string
	// Conversion bounds each conversion request; zero fields take the
	// defaults (DefaultMaxConversionRequestBytes and
	// DefaultMaxConversionObjectBytes).
	Conversion ConversionLimits
	// Records is the record of the accepted configuration, shared with the
	// reconcilers.
	Records *opconfig.Records
}

// Setup registers every webhook of the operator on the manager's webhook
// server: Drink conversion, and defaulting and validation of each kind.
func Setup(mgr ctrl.Manager, opts Options) error {
	// A Drink the converter cannot take is passed through, for the schema
	// to reject with a 422 that names the field, not a 500.
	registerConversion(mgr, opts.Conversion, map[schema.GroupKind]PassThroughFunc{
		drinksv1.GroupVersion.WithKind("Drink").GroupKind(): conversion.PassThrough,
	})
	dw := &DrinkWebhook{Config: newLiveConfigReader(mgr.GetAPIReader(), mgr.GetClient()), Namespace: opts.Namespace, Records: opts.Records}
	if err := ctrl.NewWebhookManagedBy(mgr, &drinksv1.Drink{}).
		WithConverter(drinks.NewConverter()).
		WithValidator(dw).
		Complete(); err != nil {
		return fmt.Errorf("drink webhooks: %w", err)
	}
	registerDefaulter(mgr, MutateDrinkPath, admission.Defaulter[*drinksv1.Drink](dw))

	gb := &GuestbookWebhook{Reader: mgr.GetClient()}
	if err := ctrl.NewWebhookManagedBy(mgr, &webappv1.Guestbook{}).WithValidator(gb).Complete(); err != nil {
		return fmt.Errorf("guestbook webhooks: %w", err)
	}
	registerDefaulter(mgr, MutateGuestbookPath, admission.Defaulter[*webappv1.Guestbook](gb))

	oc := &OperatorConfigWebhook{Namespace: opts.Namespace}
	if err := ctrl.NewWebhookManagedBy(mgr, &operatorv1alpha1.OperatorConfig{}).WithValidator(oc).Complete(); err != nil {
		return fmt.Errorf("operatorconfig webhooks: %w", err)
	}
	mgr.GetWebhookServer().Register(RetiredMutateOperatorConfigPath, &admission.Webhook{Handler: admission.HandlerFunc(
		func(context.Context, admission.Request) admission.Response {
			return admission.Allowed("the OperatorConfig is no longer defaulted: its spec holds only what users chose")
		})})
	return nil
}

// registerDefaulter serves a typed defaulter that lets objects which do not
// decode into their Go type through untouched. Mutating admission runs
// before schema validation; a JSON decoding error from here would hide the
// schema's message, which names the field and the type it wants.
func registerDefaulter[T runtime.Object](mgr ctrl.Manager, path string, d admission.Defaulter[T]) {
	next := admission.WithDefaulter(mgr.GetScheme(), d)
	mgr.GetWebhookServer().Register(path, &admission.Webhook{Handler: &lenient{next: next.Handler}})
}

type lenient struct {
	next admission.Handler
}

func (l *lenient) Handle(ctx context.Context, req admission.Request) admission.Response {
	// A review without an object, or whose object is not JSON at all, is
	// malformed, not merely invalid.
	var probe map[string]any
	if len(req.Object.Raw) == 0 {
		return admission.Errored(http.StatusBadRequest, errors.New("the AdmissionReview has no request.object"))
	}
	if err := json.Unmarshal(req.Object.Raw, &probe); err != nil {
		return admission.Errored(http.StatusBadRequest, fmt.Errorf("request.object is not JSON: %w", err))
	}
	resp := l.next.Handle(ctx, req)
	if !resp.Allowed && resp.Result != nil && resp.Result.Code == http.StatusBadRequest {
		return admission.Allowed("not defaulted: the object does not match its schema, which rejects it next")
	}
	return resp
}

func jsonUnmarshal(data []byte, into any) error {
	if err := json.Unmarshal(data, into); err != nil {
		return fmt.Errorf("decoding the old object: %w", err)
	}
	return nil
}
