// Command bundle writes the OLM bundle (bundle/, bundle.Dockerfile) from
// the manifests under config/. Run it through `make bundle`.
package main

import (
	"flag"
	"fmt"
	"os"

	"github.com/example/myoperator/internal/bundle"
)

func main() {
	version := flag.String("version", "0.1.0", "Version of the bundle's ClusterServiceVersion.")
	dir := flag.String("dir", "bundle", "Output directory.")
	flag.Parse()
	if err := bundle.Generate(*dir, *version); err != nil {
		fmt.Fprintln(os.Stderr, "bundle:", err)
		os.Exit(1)
	}
	fmt.Printf("bundle: wrote %s/ and bundle.Dockerfile (version %s)\n", *dir, *version)
}
