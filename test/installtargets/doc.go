// Package installtargets runs `make install` and `make uninstall` (hack/
// uninstall.sh), with and without the confirmation flag, against a real API
// server; `make deploy` and `make undeploy` need a running operator and are
// run by the e2e suite (e2e/lifecycle_test.go).
package installtargets
