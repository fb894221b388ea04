// Command registry publishes a release's images and serves a registry for
// tests, with go-containerregistry (no container engine, no daemon):
//
//	registry push -to REGISTRY/PATH [-insecure] [-from ghcr.io/example] DIST
//	registry serve -addr 127.0.0.1:5000
//
// push sends each image archive of DIST (make dist's <name>_<tag>.oci.tar,
// an OCI image index of every platform) to REGISTRY/PATH/<name>:<tag> as it
// is, so that its digest stays the one the manifests name; then it
// rewrites every reference to -from/<name> in DIST's manifests and
// images.txt to the registry, and SHA256SUMS with them.
//
// serve runs a registry in memory on a loopback address, for tests that
// pull a release by digest.
package main

import (
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/registry"
)

func main() {
	if len(os.Args) < 2 {
		usage()
	}
	var err error
	switch os.Args[1] {
	case "push":
		fs := flag.NewFlagSet("push", flag.ExitOnError)
		to := fs.String("to", "", "Registry and path to push to, for example registry.example.com/team.")
		from := fs.String("from", "ghcr.io/example", "Repository prefix the manifests name the images under.")
		insecure := fs.Bool("insecure", false, "Speak plain HTTP to the registry (a test registry on loopback).")
		_ = fs.Parse(os.Args[2:])
		if *to == "" || fs.NArg() != 1 {
			usage()
		}
		var pushed []Pushed
		pushed, err = Push(fs.Arg(0), *from, *to, *insecure)
		for _, p := range pushed {
			fmt.Printf("registry: pushed %s\n", p.Reference)
		}
	case "serve":
		fs := flag.NewFlagSet("serve", flag.ExitOnError)
		addr := fs.String("addr", "127.0.0.1:5000", "Loopback address to serve on.")
		_ = fs.Parse(os.Args[2:])
		err = serve(*addr)
	default:
		usage()
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "registry:", err)
		os.Exit(1)
	}
}

func usage() {
	fmt.Fprintln(os.Stderr, "usage: registry push -to REGISTRY/PATH [-insecure] [-from PREFIX] DIST | registry serve -addr 127.0.0.1:PORT")
	os.Exit(2)
}

// serve refuses anything but a loopback address: the registry is for tests
// on this machine.
func serve(addr string) error {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return err
	}
	if ip := net.ParseIP(host); host != "localhost" && (ip == nil || !ip.IsLoopback()) {
		return fmt.Errorf("%s is not a loopback address", addr)
	}
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	fmt.Printf("registry: serving on %s\n", l.Addr())
	// The referrers API (OCI 1.1), where cosign keeps signatures and
	// attestations when a registry offers it, as most do.
	srv := &http.Server{Handler: registry.New(registry.WithReferrersSupport(true)), ReadHeaderTimeout: 10 * time.Second}
	return srv.Serve(l)
}

// splitArchive reads <name>_<tag>.oci.tar.
func splitArchive(file string) (name, tag string, ok bool) {
	base, found := strings.CutSuffix(file, ".oci.tar")
	if !found {
		return "", "", false
	}
	i := strings.LastIndex(base, "_")
	if i <= 0 || i == len(base)-1 {
		return "", "", false
	}
	return base[:i], base[i+1:], true
}
