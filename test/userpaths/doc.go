// Package userpaths runs the commands a user of the operator types by hand,
// exactly as they are documented, against a real cluster: make install,
// make run and kubectl apply -k config/samples/ on a kwok cluster
// (make test-make-run). It holds tests only.
package userpaths
