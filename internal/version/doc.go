// Package version says which build of the operator is running and which
// release it is, or how far from one: the binaries carry Version and Commit,
// stamped at build time, and the record of releases (RELEASES.md) is read
// and extended here, so that the build, make release and the tests agree on
// one reading of it.
package version
