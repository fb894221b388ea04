package reconcile

// How the operator names itself to the API server and to users. Each is
// its own constant, though the values agree: a field manager or a label
// value that changed would orphan what the operator wrote under the old one
// (server-side apply ownership, the cache's label selector), so none may
// follow another by accident.
const (
	// FieldOwner is the server-side apply field manager of every operand
	// write, and of the operator's other writes (the record of the accepted
	// configuration, the webhook certificates).
	FieldOwner = "myoperator"
	// EventRecorderName is the reporting controller of the operator's
	// events (the manager's GetEventRecorder).
	EventRecorderName = "myoperator"
)
