// Package alerts holds the tests of the optional monitoring component
// config/prometheus: its PrometheusRule checked and unit-tested with
// promtool (config/prometheus/tests), a runbook in docs/runbooks for every
// alert, only the operator's own metric names in the rules and the Grafana
// dashboard, and the component added to config/default in an overlay.
package alerts
