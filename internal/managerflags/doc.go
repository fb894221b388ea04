// Package managerflags is the manager's command line: every flag in one
// type, registered in one place and checked by one function, which turns
// them into the manager's app.Options. docs/configuration.md's table of flags
// is generated from it (hack/flagdoc), so the two cannot disagree.
package managerflags
