// Package pause is the per-object pause switch: the annotation
// example.com/paused: "true" on a Drink or a Guestbook stops every write of
// the operator for that object (its operands, drift correction, failover,
// its status after the Paused condition is set) until it is removed or
// set to "false". It is the per-object form of the OperatorConfig's
// managementState Unmanaged.
package pause
