// Package operanddiff is the oracle of the e2e upgrade test: it says which
// field paths of an operand (a Drink's ConfigMap, a Guestbook's
// StatefulSet, Service or ConfigMap) a write changed, and which of those
// the release record (RELEASES.md, "### Operands") does not announce.
//
// An announcement names a kind and a field path, as in
// `StatefulSet spec.template.spec.containers[0].image`, and covers that
// path and everything under it, nothing else. Comparing whole specs and
// accepting a change when any announced word occurred in it let every
// change of a StatefulSet through once a probe was announced, since its
// spec names the probe; a path says exactly which part may change.
//
// It uses the standard library only, so that the rule the release record
// is written against is tested without a cluster.
package operanddiff
