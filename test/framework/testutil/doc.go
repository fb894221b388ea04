// Package testutil holds the small helpers every test layer shares, written
// once: a free port on loopback, the repository's root, and which API calls
// write. It imports nothing of the project, so any test, bench or tool under
// test/ and hack/ may use it.
package testutil
