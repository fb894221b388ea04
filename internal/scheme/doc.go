// Package scheme builds the runtime scheme shared by the manager, the
// bootstrap binary and the tests: Kubernetes' built-in types plus every
// version of the project's APIs.
package scheme
