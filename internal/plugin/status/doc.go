// Package status is kubectl myoperator status: the summary of an
// installation that make demo prints (hack/demo.sh), read through the
// API: the manager's pods and the leader, the webhooks and their
// certificate's expiry, the Drinks by authored version, the Guestbooks and
// their active pod, and the OperatorConfig cluster.
package status
