// Package releases reads and extends the record of releases, RELEASES.md:
// its versions (semver), the cut of the Unreleased notes into a release,
// and the git-describe style distance of a tree from the newest release.
// make release (hack/version) and the OLM bundle's upgrade graph
// (hack/olmbundle) read it here, so that they agree on one reading; the
// shipped binaries carry only the stamped result (internal/version).
package releases
