// Package version says which build of the operator is running: the binaries
// carry Version and Commit, stamped at build time from what hack/version
// prints (the release, or the distance from the newest one in RELEASES.md).
package version
