package webhook

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	ctrl "sigs.k8s.io/controller-runtime"
	crconversion "sigs.k8s.io/controller-runtime/pkg/webhook/conversion"

	"github.com/example/myoperator/internal/webhookguard"
)

// ConvertPath is the path of the conversion webhook (config/crd patches).
const ConvertPath = "/convert"

// Bounds of one conversion request, and their defaults.
//
// The API server converts a whole LIST page, or a whole unpaginated list,
// in one ConversionReview, so a review's size grows with the cluster: the
// handler decodes, converts and writes one object at a time, and its
// memory follows the largest object, not the review. The request bound
// only limits how long one request can keep a replica busy.
const (
	// DefaultMaxConversionObjectBytes bounds each object of a review (and
	// each other value in it). kube-apiserver refuses a request body over
	// 3 MiB, and etcd stores at most 1.5 MiB, so no stored Drink is larger.
	DefaultMaxConversionObjectBytes int64 = 3 << 20
	// DefaultMaxConversionRequestBytes bounds a whole review: the largest
	// cluster docs/sizing.md covers, 50,000 Drinks, in one unpaginated
	// review, at 8 KiB per Drink, four times the size of the bench's Drinks
	// with their managedFields and status.
	DefaultMaxConversionRequestBytes int64 = 50_000 * 8 << 10
)

// ConversionLimits bound one conversion request.
type ConversionLimits struct {
	// MaxRequestBytes bounds the body of a ConversionReview; a longer one
	// is answered 413 (before it is read, when its Content-Length says so).
	MaxRequestBytes int64
	// MaxObjectBytes bounds each object in it.
	MaxObjectBytes int64
}

// Validate says which bound is not usable: each is positive, and an object
// fits in a request.
func (l ConversionLimits) Validate() error {
	switch {
	case l.MaxRequestBytes <= 0:
		return fmt.Errorf("--conversion-max-request-bytes: %d: must be positive", l.MaxRequestBytes)
	case l.MaxObjectBytes <= 0:
		return fmt.Errorf("--conversion-max-object-bytes: %d: must be positive", l.MaxObjectBytes)
	case l.MaxObjectBytes > l.MaxRequestBytes:
		return fmt.Errorf("--conversion-max-object-bytes: %d: must not exceed --conversion-max-request-bytes (%d)", l.MaxObjectBytes, l.MaxRequestBytes)
	}
	return nil
}

// WithDefaults returns l with the defaults in its zero fields.
func (l ConversionLimits) WithDefaults() ConversionLimits {
	if l.MaxRequestBytes <= 0 {
		l.MaxRequestBytes = DefaultMaxConversionRequestBytes
	}
	if l.MaxObjectBytes <= 0 {
		l.MaxObjectBytes = DefaultMaxConversionObjectBytes
	}
	return l
}

// PassThroughFunc moves an object that cannot be converted to
// desiredAPIVersion without interpreting its values, or fails when it does
// not know that version.
type PassThroughFunc func(obj map[string]any, desiredAPIVersion string) error

// streamingConversion serves ConversionReviews with the converters the
// webhook builder registers, one object at a time.
//
// An object the converter cannot take (a value of the wrong type, say) is
// passed through instead of failing the review. Why: for a write in an
// older version, the API server converts the object to v1 for mutating
// admission before it checks the schema. A failed conversion there is a
// 500 that names nothing; passed through, the object reaches schema
// validation, which answers 422 and names the field, as it does for the
// same object written in v1.
type streamingConversion struct {
	scheme      *runtime.Scheme
	decoder     *crconversion.Decoder
	registry    crconversion.Registry
	passThrough map[schema.GroupKind]PassThroughFunc
	limits      ConversionLimits
}

// registerConversion serves ConvertPath before the webhook builder would, so
// that the builder, finding the path taken, leaves it to this handler; the
// converters it registers still do the work.
func registerConversion(mgr ctrl.Manager, limits ConversionLimits, passThrough map[schema.GroupKind]PassThroughFunc) {
	mgr.GetWebhookServer().Register(ConvertPath, &streamingConversion{
		scheme:      mgr.GetScheme(),
		decoder:     crconversion.NewDecoder(mgr.GetScheme()),
		registry:    mgr.GetConverterRegistry(),
		passThrough: passThrough,
		limits:      limits.WithDefaults(),
	})
}

// errValueTooLarge is returned by window when one value of the review is
// longer than MaxObjectBytes.
var errValueTooLarge = errors.New("value too large")

// window lets the JSON decoder read at most left bytes until reset: the
// handler resets it before each value, so that the decoder's buffer never
// holds more than one value of MaxObjectBytes.
type window struct {
	r    io.Reader
	max  int64
	left int64
}

func (w *window) reset() { w.left = w.max }

func (w *window) Read(p []byte) (int, error) {
	if w.left <= 0 {
		return 0, errValueTooLarge
	}
	if int64(len(p)) > w.left {
		p = p[:w.left]
	}
	n, err := w.r.Read(p)
	w.left -= int64(n)
	return n, err
}

func (h *streamingConversion) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.ContentLength > h.limits.MaxRequestBytes {
		h.refuseTooLarge(w, r, fmt.Sprintf("the ConversionReview is %d bytes", r.ContentLength))
		return
	}
	// The answer is written while the review is still being read, one
	// object at a time. Over HTTP/1.1 (the webhook server's default) Go's
	// server may close the request body once the answer begins unless the
	// handler asks for full duplex; from go1.27 it does, and every review
	// then failed with "invalid Read on closed Body". HTTP/2 always allows
	// it, and its writer may say so with ErrNotSupported.
	if err := http.NewResponseController(w).EnableFullDuplex(); err != nil && r.ProtoMajor == 1 {
		ctrl.LoggerFrom(r.Context()).WithName("conversion-webhook").Error(err, "cannot read the review while answering it; conversion may fail")
	}
	win := &window{r: http.MaxBytesReader(w, r.Body, h.limits.MaxRequestBytes), max: h.limits.MaxObjectBytes}
	out := &reviewWriter{w: w}
	var rv review
	err := h.stream(r.Context(), json.NewDecoder(win), win, &rv, out)
	var tooLarge *http.MaxBytesError
	switch {
	case err == nil:
		out.finish()
	case out.started:
		// Part of a successful answer is sent: cut the connection, so that
		// the API server sees a failed call, not a short list.
		ctrl.LoggerFrom(r.Context()).WithName("conversion-webhook").Error(err, "conversion failed after its answer began; connection closed")
		panic(http.ErrAbortHandler)
	case errors.As(err, &tooLarge):
		h.refuseTooLarge(w, r, "the ConversionReview is longer")
	case errors.Is(err, webhookguard.ErrBusy):
		// The replica holds as many request bytes as it may: the API
		// server tries again after the Retry-After.
		ctrl.LoggerFrom(r.Context()).WithName("conversion-webhook").V(1).Info("conversion request refused: the replica holds as many request bytes as it may")
		webhookguard.RefuseBusy(w, ConvertPath)
	case isTimeout(err):
		h.refuse(w, r, http.StatusRequestTimeout, "the ConversionReview did not arrive whole within --webhook-read-timeout")
	case errors.Is(err, errPendingTooLarge):
		h.refuse(w, r, http.StatusBadRequest, fmt.Sprintf(
			"the ConversionReview has more than %d bytes of objects before request.uid and request.desiredAPIVersion (--conversion-max-object-bytes); send those first, as the API server does",
			h.limits.MaxObjectBytes))
	case errors.Is(err, errValueTooLarge):
		h.refuse(w, r, http.StatusRequestEntityTooLarge, fmt.Sprintf(
			"a value of the ConversionReview is longer than %d bytes (--conversion-max-object-bytes)", h.limits.MaxObjectBytes))
	case errors.As(err, new(conversionError)):
		out.fail(&rv, err)
	default:
		h.refuse(w, r, http.StatusBadRequest, "malformed ConversionReview: "+err.Error())
	}
}

func (h *streamingConversion) refuseTooLarge(w http.ResponseWriter, r *http.Request, what string) {
	h.refuse(w, r, http.StatusRequestEntityTooLarge, fmt.Sprintf(
		"%s than this replica takes, %d bytes (--conversion-max-request-bytes); page the list (limit, kubectl --chunk-size)",
		what, h.limits.MaxRequestBytes))
}

func (h *streamingConversion) refuse(w http.ResponseWriter, r *http.Request, code int, msg string) {
	ctrl.LoggerFrom(r.Context()).WithName("conversion-webhook").Info("conversion request refused", "code", code, "reason", msg)
	refusedConversions.WithLabelValues(strconv.Itoa(code)).Inc()
	// The rest of the body is not read: the server closes the connection.
	webhookguard.Refuse(w, code, msg)
}

// conversionError is an object the handler can neither convert nor pass
// through: the review is answered with a Failure that says which.
type conversionError struct{ err error }

func (e conversionError) Error() string { return e.err.Error() }

// review is what the handler keeps of a ConversionReview: everything but the
// objects, which go through one at a time.
type review struct {
	apiVersion, kind string
	uid, desired     string
	haveUID          bool
	haveDesired      bool
	// pending are objects read before the uid and desiredAPIVersion (the
	// API server sends those first; another client may not), at most
	// MaxObjectBytes of them together (errPendingTooLarge): without a bound
	// a client could make a replica hold a whole request of them.
	pending      []json.RawMessage
	pendingBytes int64
}

// errPendingTooLarge: the objects sent before the review's uid and
// desiredAPIVersion are longer than one object may be.
var errPendingTooLarge = errors.New("objects before request.uid and request.desiredAPIVersion")

// stream reads the review value by value and converts each object as it
// arrives.
func (h *streamingConversion) stream(ctx context.Context, dec *json.Decoder, win *window, rv *review, out *reviewWriter) error {
	if err := expectDelim(dec, win, '{'); err != nil {
		return err
	}
	for dec.More() {
		key, err := nextKey(dec, win)
		if err != nil {
			return err
		}
		win.reset()
		switch key {
		case "apiVersion":
			err = dec.Decode(&rv.apiVersion)
		case "kind":
			err = dec.Decode(&rv.kind)
		case "request":
			err = h.streamRequest(ctx, dec, win, rv, out)
		default:
			err = dec.Decode(new(json.RawMessage))
		}
		if err != nil {
			return err
		}
	}
	if err := expectDelim(dec, win, '}'); err != nil {
		return err
	}
	if !rv.haveDesired {
		return errors.New("the ConversionReview has no request.desiredAPIVersion")
	}
	for _, raw := range rv.pending {
		if err := h.emit(ctx, rv, raw, out); err != nil {
			return err
		}
	}
	out.begin(rv)
	return nil
}

func (h *streamingConversion) streamRequest(ctx context.Context, dec *json.Decoder, win *window, rv *review, out *reviewWriter) error {
	if err := expectDelim(dec, win, '{'); err != nil {
		return err
	}
	for dec.More() {
		key, err := nextKey(dec, win)
		if err != nil {
			return err
		}
		win.reset()
		switch key {
		case "uid":
			err, rv.haveUID = dec.Decode(&rv.uid), true
		case "desiredAPIVersion":
			err, rv.haveDesired = dec.Decode(&rv.desired), true
		case "objects":
			err = h.streamObjects(ctx, dec, win, rv, out)
		default:
			err = dec.Decode(new(json.RawMessage))
		}
		if err != nil {
			return err
		}
	}
	return expectDelim(dec, win, '}')
}

func (h *streamingConversion) streamObjects(ctx context.Context, dec *json.Decoder, win *window, rv *review, out *reviewWriter) error {
	if err := expectDelim(dec, win, '['); err != nil {
		return err
	}
	for dec.More() {
		win.reset()
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			return err
		}
		if !rv.haveUID || !rv.haveDesired {
			rv.pendingBytes += int64(len(raw))
			if rv.pendingBytes > h.limits.MaxObjectBytes {
				return errPendingTooLarge
			}
			rv.pending = append(rv.pending, raw)
			continue
		}
		if err := h.emit(ctx, rv, raw, out); err != nil {
			return err
		}
	}
	return expectDelim(dec, win, ']')
}

// emit converts one object and writes it.
func (h *streamingConversion) emit(ctx context.Context, rv *review, raw []byte, out *reviewWriter) error {
	converted, err := h.convertOne(ctx, raw, rv.desired)
	if err != nil {
		return conversionError{err}
	}
	out.begin(rv)
	return out.object(converted)
}

// convertOne converts one object with the registered converter, or passes
// it through when the converter cannot take it.
func (h *streamingConversion) convertOne(ctx context.Context, raw []byte, desired string) (_ []byte, err error) {
	converted, convErr := h.convert(ctx, raw, desired)
	if convErr == nil {
		return converted, nil
	}
	var u map[string]any
	if err := json.Unmarshal(raw, &u); err != nil {
		return nil, fmt.Errorf("an object of the review is not a JSON object: %w", err)
	}
	apiVersion, _ := u["apiVersion"].(string)
	kind, _ := u["kind"].(string)
	pass, found := h.passThrough[schema.FromAPIVersionAndKind(apiVersion, kind).GroupKind()]
	if !found {
		return nil, convErr
	}
	if err := pass(u, desired); err != nil {
		return nil, fmt.Errorf("%s %q to %s: %w (converting it: %w)", kind, objectName(u), desired, err, convErr)
	}
	if converted, err = json.Marshal(u); err != nil {
		return nil, err
	}
	ctrl.LoggerFrom(ctx).WithName("conversion-webhook").Info(
		"passed through an object the converter cannot take, for the API server's validation to answer",
		"kind", kind, "name", objectName(u), "from", apiVersion, "to", desired, "reason", convErr.Error())
	return converted, nil
}

// convert is what controller-runtime's conversion handler does for each
// object, on one object.
func (h *streamingConversion) convert(ctx context.Context, raw []byte, desired string) (_ []byte, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("the converter panicked: %v", r)
		}
	}()
	src, gvk, err := h.decoder.Decode(raw)
	if err != nil {
		return nil, err
	}
	if gvk.GroupVersion().String() == desired {
		return raw, nil
	}
	converter, ok := h.registry.GetConverter(gvk.GroupKind())
	if !ok {
		return nil, fmt.Errorf("no converter for %s", gvk.GroupKind())
	}
	dstGVK := schema.FromAPIVersionAndKind(desired, gvk.Kind)
	dst, err := h.scheme.New(dstGVK)
	if err != nil {
		return nil, err
	}
	t, err := meta.TypeAccessor(dst)
	if err != nil {
		return nil, err
	}
	t.SetAPIVersion(desired)
	t.SetKind(gvk.Kind)
	if err := converter.ConvertObject(ctx, src, dst); err != nil {
		return nil, err
	}
	return json.Marshal(dst)
}

// reviewWriter writes the answer as the objects are converted.
type reviewWriter struct {
	w       http.ResponseWriter
	started bool
	objects int
}

// begin writes the answer's head once.
func (o *reviewWriter) begin(rv *review) {
	if o.started {
		return
	}
	o.started = true
	apiVersion := rv.apiVersion
	if apiVersion == "" {
		apiVersion = "apiextensions.k8s.io/v1"
	}
	o.w.Header().Set("Content-Type", "application/json")
	o.w.WriteHeader(http.StatusOK)
	_, _ = fmt.Fprintf(o.w, `{"kind":"ConversionReview","apiVersion":%s,"response":{"uid":%s,"result":{"metadata":{},"status":"Success"},"convertedObjects":[`,
		jsonString(apiVersion), jsonString(rv.uid))
}

func (o *reviewWriter) object(raw []byte) error {
	if o.objects > 0 {
		if _, err := io.WriteString(o.w, ","); err != nil {
			return err
		}
	}
	o.objects++
	_, err := o.w.Write(raw)
	return err
}

func (o *reviewWriter) finish() {
	_, _ = io.WriteString(o.w, "]}}\n")
}

// fail answers a review that could not be converted, as controller-runtime
// does: a Failure result, which the API server passes on with its message.
func (o *reviewWriter) fail(rv *review, err error) {
	o.w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(o.w).Encode(map[string]any{
		"kind": "ConversionReview", "apiVersion": "apiextensions.k8s.io/v1",
		"response": map[string]any{"uid": rv.uid, "result": map[string]any{"status": "Failure", "message": err.Error()}},
	})
}

// isTimeout reports whether err is a deadline of the connection passing
// (internal/webhookguard sets them).
func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

func jsonString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

func expectDelim(dec *json.Decoder, win *window, want json.Delim) error {
	win.reset()
	tok, err := dec.Token()
	if err != nil {
		return err
	}
	if d, ok := tok.(json.Delim); !ok || d != want {
		return fmt.Errorf("want %q, got %v", want, tok)
	}
	return nil
}

func nextKey(dec *json.Decoder, win *window) (string, error) {
	win.reset()
	tok, err := dec.Token()
	if err != nil {
		return "", err
	}
	key, ok := tok.(string)
	if !ok {
		return "", fmt.Errorf("want an object key, got %v", tok)
	}
	return key, nil
}

// objectName is the object's metadata.name, "" when it has none.
func objectName(u map[string]any) string {
	name, _, _ := unstructured.NestedString(u, "metadata", "name")
	return name
}
