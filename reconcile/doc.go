// Package reconcile holds the operator's reconcilers: one Drink reconciler
// for every Drink version, the Guestbook active/standby reconciler and the
// OperatorConfig reconciler that applies configuration live.
package reconcile
