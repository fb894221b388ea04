// Package scripts tests what the project's shell scripts that run as root
// refuse before they act: input that would make them remove or signal
// something outside their own folders, and state folders another user
// could have prepared.
package scripts
