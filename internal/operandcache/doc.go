// Package operandcache gives a controller informer caches limited to the
// namespaces it works in, created when first needed: the operator's rights on
// Guestbook operands (pods, StatefulSets, Services) exist only in the operand
// namespace, which the OperatorConfig may change at run time, so a
// cluster-wide informer would be refused and a fixed namespace list would
// need a restart.
package operandcache
