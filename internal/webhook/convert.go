package webhook

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	ctrl "sigs.k8s.io/controller-runtime"
	crconversion "sigs.k8s.io/controller-runtime/pkg/webhook/conversion"
)

// ConvertPath is the path of the conversion webhook (config/crd patches).
const ConvertPath = "/convert"

// PassThroughFunc moves an object that cannot be converted to
// desiredAPIVersion without interpreting its values, or fails when it does
// not know that version.
type PassThroughFunc func(obj map[string]any, desiredAPIVersion string) error

// tolerantConversion serves conversion reviews with controller-runtime's
// handler, except that an object the converter cannot take (a value of the
// wrong type, say) is passed through instead of failing the review.
//
// Why: for a write in an older version, the API server converts the object
// to v1 for mutating admission before it checks the schema. A failed
// conversion there is a 500 that names nothing; passed through, the object
// reaches schema validation, which answers 422 and names the field, as it
// does for the same object written in v1.
type tolerantConversion struct {
	next        http.Handler
	passThrough map[schema.GroupKind]PassThroughFunc
}

// registerConversion serves ConvertPath before the webhook builder would, so
// that the builder, finding the path taken, leaves it to this handler; the
// converters it registers still do the work.
func registerConversion(mgr ctrl.Manager, passThrough map[schema.GroupKind]PassThroughFunc) {
	mgr.GetWebhookServer().Register(ConvertPath, &tolerantConversion{
		next:        crconversion.NewWebhookHandler(mgr.GetScheme(), mgr.GetConverterRegistry()),
		passThrough: passThrough,
	})
}

func (h *tolerantConversion) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	whole := h.serve(r, body)
	if whole.converted() {
		whole.writeTo(w)
		return
	}
	review := &apiextensionsv1.ConversionReview{}
	if err := json.Unmarshal(body, review); err != nil || review.Request == nil {
		// Malformed reviews keep the inner handler's answer.
		whole.writeTo(w)
		return
	}
	objects := make([]runtime.RawExtension, 0, len(review.Request.Objects))
	for _, obj := range review.Request.Objects {
		converted, ok := h.convertOne(r, review, obj)
		if !ok {
			whole.writeTo(w)
			return
		}
		objects = append(objects, converted)
	}
	review.Response = &apiextensionsv1.ConversionResponse{
		UID: review.Request.UID, ConvertedObjects: objects, Result: metav1.Status{Status: metav1.StatusSuccess},
	}
	review.Request = nil
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(review)
}

// convertOne converts obj alone, or passes it through when the converter
// cannot take it. ok is false when neither works (a version nobody serves).
func (h *tolerantConversion) convertOne(r *http.Request, review *apiextensionsv1.ConversionReview, obj runtime.RawExtension) (runtime.RawExtension, bool) {
	one := &apiextensionsv1.ConversionReview{TypeMeta: review.TypeMeta, Request: &apiextensionsv1.ConversionRequest{
		UID: review.Request.UID, DesiredAPIVersion: review.Request.DesiredAPIVersion, Objects: []runtime.RawExtension{obj},
	}}
	single, err := json.Marshal(one)
	if err != nil {
		return runtime.RawExtension{}, false
	}
	if resp := h.serve(r, single); resp.converted() {
		converted := &apiextensionsv1.ConversionReview{}
		if json.Unmarshal(resp.rec.body.Bytes(), converted) == nil && len(converted.Response.ConvertedObjects) == 1 {
			return converted.Response.ConvertedObjects[0], true
		}
	}
	var u map[string]any
	if err := json.Unmarshal(obj.Raw, &u); err != nil {
		return runtime.RawExtension{}, false
	}
	apiVersion, _ := u["apiVersion"].(string)
	kind, _ := u["kind"].(string)
	pass, found := h.passThrough[schema.FromAPIVersionAndKind(apiVersion, kind).GroupKind()]
	if !found || pass(u, review.Request.DesiredAPIVersion) != nil {
		return runtime.RawExtension{}, false
	}
	raw, err := json.Marshal(u)
	if err != nil {
		return runtime.RawExtension{}, false
	}
	ctrl.LoggerFrom(r.Context()).WithName("conversion-webhook").Info(
		"passed through an object the converter cannot take, for the API server's validation to answer",
		"kind", kind, "name", objectName(u), "from", apiVersion, "to", review.Request.DesiredAPIVersion)
	return runtime.RawExtension{Raw: raw}, true
}

// buffered keeps a handler's response in memory, to be looked at before
// any of it is sent.
type buffered struct {
	header http.Header
	code   int
	body   bytes.Buffer
}

func (b *buffered) Header() http.Header { return b.header }

func (b *buffered) Write(p []byte) (int, error) {
	if b.code == 0 {
		b.code = http.StatusOK
	}
	return b.body.Write(p)
}

func (b *buffered) WriteHeader(code int) {
	if b.code == 0 {
		b.code = code
	}
}

// innerResponse is what the inner handler answered.
type innerResponse struct {
	rec *buffered
	// status is the review's result status ("Success"), empty when the
	// answer is no review.
	status string
}

func (h *tolerantConversion) serve(r *http.Request, body []byte) innerResponse {
	rec := &buffered{header: http.Header{}}
	inner := r.Clone(r.Context())
	inner.Body, inner.ContentLength = io.NopCloser(bytes.NewReader(body)), int64(len(body))
	h.next.ServeHTTP(rec, inner)
	// Only the status is decoded: the converted objects are passed on as
	// they are.
	var review struct {
		Response *struct {
			Result struct {
				Status string `json:"status"`
			} `json:"result"`
		} `json:"response"`
	}
	if rec.code == 0 {
		rec.code = http.StatusOK
	}
	resp := innerResponse{rec: rec}
	if rec.code == http.StatusOK && json.Unmarshal(rec.body.Bytes(), &review) == nil && review.Response != nil {
		resp.status = review.Response.Result.Status
	}
	return resp
}

func (r innerResponse) converted() bool { return r.status == metav1.StatusSuccess }

func (r innerResponse) writeTo(w http.ResponseWriter) {
	for k, v := range r.rec.header {
		w.Header()[k] = v
	}
	w.WriteHeader(r.rec.code)
	_, _ = w.Write(r.rec.body.Bytes())
}

// objectName is the object's metadata.name, "" when it has none.
func objectName(u map[string]any) string {
	name, _, _ := unstructured.NestedString(u, "metadata", "name")
	return name
}
