// Command bundle writes the OLM bundle from the manifests under config/:
// bundle/ and bundle.Dockerfile for the current tree (make bundle), or with
// --release the frozen bundle of a new release under bundle/releases (make
// bundle-release), or with --out the bundle of a development build (make
// dist of a tree no release was cut from). Run it from the repository's
// root.
package main

import (
	"flag"
	"fmt"
	"os"

	"github.com/example/myoperator/hack/olmbundle"
)

func main() {
	version := flag.String("version", "", "Version of bundle/'s ClusterServiceVersion; empty: the newest release in RELEASES.md ("+olmbundle.FallbackVersion+" without it).")
	release := flag.String("release", "", "Write bundle/releases/vX.Y.Z for this new release X.Y.Z instead of bundle/.")
	out := flag.String("out", "", "With --version: write the bundle of that development build (no release; make dist) into this folder instead of bundle/.")
	flag.Parse()
	if err := run(*version, *release, *out); err != nil {
		fmt.Fprintln(os.Stderr, "bundle:", err)
		os.Exit(1)
	}
}

func run(version, release, out string) error {
	if out != "" {
		if version == "" {
			return fmt.Errorf("--out needs --version")
		}
		g, err := olmbundle.WriteDevelopment(".", version, out)
		if err != nil {
			return err
		}
		fmt.Printf("bundle: wrote %s/ (%s%s)\n", out, g.Version.CSVName(), describe(g))
		return nil
	}
	if release != "" {
		g, dir, err := olmbundle.WriteRelease(".", release)
		if err != nil {
			return err
		}
		fmt.Printf("bundle: wrote %s/ (%s%s)\n", dir, g.Version.CSVName(), describe(g))
		return nil
	}
	g, err := olmbundle.WriteCurrent(".", version)
	if err != nil {
		return err
	}
	fmt.Printf("bundle: wrote bundle/ and bundle.Dockerfile (%s%s)\n", g.Version.CSVName(), describe(g))
	return nil
}

func describe(g olmbundle.Graph) string {
	if g.Previous == nil {
		return ", the first release: replaces nothing"
	}
	return fmt.Sprintf(", replaces %s, skipRange '%s'", g.Replaces(), g.SkipRange())
}
