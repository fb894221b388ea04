// Package promtool pins Prometheus's promtool, built from its Go module
// (github.com/prometheus/prometheus, a tool directive in this module's
// go.mod) so that the version is chosen here and nowhere else, and so that
// its dependencies stay out of the operator's go.mod. It holds no code:
// make promtool runs `go build github.com/prometheus/prometheus/cmd/promtool`
// in this folder, with the build tag remove_all_sd (Prometheus's plugins
// package then links no service-discovery SDK, which check rules and test
// rules do not use) into bin/promtool-<version>. make test passes it to
// test/alerts, which checks and unit-tests config/prometheus's alerts
// with it.
package promtool
