package olmbundle

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/example/myoperator/hack/releases"
)

// FallbackVersion is the bundle version while RELEASES.md does not exist
// yet: the first release.
const FallbackVersion = "0.1.0"

// ReleasesDir holds one frozen bundle per release, bundle/releases/vX.Y.Z
// (manifests/ and metadata/), written once by make bundle-release and never
// regenerated: they are what a catalog served for that release.
const ReleasesDir = "releases"

// Version is a release version X.Y.Z or X.Y.Z-rc.N: the release record's
// (package version), which also parses and orders it; the bundle writes it
// without the "v" of a tag.
type Version releases.Semver

// ParseVersion reads "X.Y.Z" or "vX.Y.Z".
func ParseVersion(s string) (Version, error) {
	v, err := releases.ParseSemver(s)
	return Version(v), err
}

func (v Version) String() string { return strings.TrimPrefix(releases.Semver(v).String(), "v") }

// Compare orders versions: negative when v is older than w.
func (v Version) Compare(w Version) int { return releases.Semver(v).Compare(releases.Semver(w)) }

// CSVName is the ClusterServiceVersion's name for v, which replaces names.
func (v Version) CSVName() string { return PackageName + ".v" + v.String() }

// CurrentVersion is the newest release of the release record
// (RELEASES.md, read by package version), or FallbackVersion when the file
// does not exist.
func CurrentVersion(releasesMD string) (Version, error) {
	rec, err := releases.ReadRecord(releasesMD)
	if errors.Is(err, fs.ErrNotExist) {
		return ParseVersion(FallbackVersion)
	}
	if err != nil {
		return Version{}, err
	}
	newest, ok := rec.Newest()
	if !ok {
		return Version{}, fmt.Errorf("%s lists no release", releasesMD)
	}
	return Version(newest.Version), nil
}

// Released lists the versions that have a directory under releasesDir,
// oldest first.
func Released(releasesDir string) ([]Version, error) {
	entries, err := os.ReadDir(releasesDir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var out []Version
	for _, e := range entries {
		if !e.IsDir() || !strings.HasPrefix(e.Name(), "v") {
			continue
		}
		v, err := ParseVersion(e.Name())
		if err != nil {
			return nil, fmt.Errorf("%s: %w", filepath.Join(releasesDir, e.Name()), err)
		}
		out = append(out, v)
	}
	slices.SortFunc(out, Version.Compare)
	return out, nil
}

// Upgrade is where a bundle of version v sits in the upgrade graph: the
// newest released version older than v, if any, is what it replaces.
func Upgrade(released []Version, v Version) Graph {
	g := Graph{Version: v}
	for _, r := range released {
		if r.Compare(v) < 0 {
			prev := r
			g.Previous = &prev
		}
	}
	return g
}

// Graph is a bundle's place in the upgrade graph.
type Graph struct {
	Version  Version
	Previous *Version
	// Development: a build of a commit after Previous (a version Describe
	// gives, such as 0.2.0-424-g274aa16), which semver orders before its
	// release; no catalog holds it, so it skips no range.
	Development bool
}

// Replaces is spec.replaces: the previous release's CSV, so that OLM
// upgrades an installed previous release to this one.
func (g Graph) Replaces() string {
	if g.Previous == nil {
		return ""
	}
	return g.Previous.CSVName()
}

// SkipRange is the olm.skipRange annotation ">=previous <this": OLM may
// upgrade any installed version in that range straight to this one,
// including a patch release cut from the previous release's branch, which
// the replaces chain does not hold. It fits because the versions in the
// range are the previous release and its patch releases, which change no
// stored format: the upgrade the e2e suite proves from the previous release
// holds from them too. The first release has nothing to skip.
func (g Graph) SkipRange() string {
	if g.Previous == nil || g.Development {
		return ""
	}
	return fmt.Sprintf(">=%s <%s", g.Previous, g.Version)
}

// WriteCurrent writes bundle/ and bundle.Dockerfile under root for ver
// (empty: the newest release of RELEASES.md), replacing the newest
// released bundle older than it.
func WriteCurrent(root, ver string) (Graph, error) {
	v, err := CurrentVersion(filepath.Join(root, "RELEASES.md"))
	if ver != "" {
		v, err = ParseVersion(ver)
	}
	if err != nil {
		return Graph{}, err
	}
	dir := filepath.Join(root, "bundle")
	released, err := Released(filepath.Join(dir, ReleasesDir))
	if err != nil {
		return Graph{}, err
	}
	g := Upgrade(released, v)
	return g, Generate(dir, Options{Graph: g, Dockerfile: true})
}

// WriteRelease writes the frozen bundle of a new release ver into
// bundle/releases/vX.Y.Z under root, replacing the newest released bundle
// older than it. It refuses a version that already has its directory: a
// released bundle never changes.
func WriteRelease(root, ver string) (Graph, string, error) {
	v, err := ParseVersion(ver)
	if err != nil {
		return Graph{}, "", err
	}
	releases := filepath.Join(root, "bundle", ReleasesDir)
	dir := filepath.Join(releases, "v"+v.String())
	if _, err := os.Stat(dir); err == nil {
		return Graph{}, dir, fmt.Errorf("%s exists: release %s has its bundle already, and a released bundle is never rewritten", dir, v)
	}
	released, err := Released(releases)
	if err != nil {
		return Graph{}, dir, err
	}
	g := Upgrade(released, v)
	return g, dir, Generate(dir, Options{Graph: g})
}

// WriteDevelopment writes the bundle of a development build ver (no
// release: a commit after the newest one, as make dist writes it) into
// dir/manifests and dir/metadata. It replaces the newest released bundle,
// the release its version is counted from, whatever semver says of a
// pre-release of that release's own number.
func WriteDevelopment(root, ver, dir string) (Graph, error) {
	v, err := ParseVersion(ver)
	if err != nil {
		return Graph{}, err
	}
	released, err := Released(filepath.Join(root, "bundle", ReleasesDir))
	if err != nil {
		return Graph{}, err
	}
	g := Graph{Version: v, Development: true}
	if n := len(released); n > 0 {
		if released[n-1] == v {
			return g, fmt.Errorf("%s is a release: its bundle is bundle/%s/v%s", v, ReleasesDir, v)
		}
		g.Previous = &released[n-1]
	}
	return g, Generate(dir, Options{Graph: g})
}
