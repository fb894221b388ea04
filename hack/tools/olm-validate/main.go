// Command olm-validate runs OLM's own bundle validators (the library behind
// `operator-sdk bundle validate`, with its OperatorHub and good-practices
// suites) over each bundle directory it is given, then builds and checks
// the upgrade graph their CSVs form and prints it. It fails on any error,
// on any warning not explained in docs/olm.md (olmcheck.KnownWarnings) and
// on a broken graph. make verify runs it on bundle/ and every
// bundle/releases/vX.Y.Z.
package main

import (
	"flag"
	"fmt"
	"os"

	valerrors "github.com/operator-framework/api/pkg/validation/errors"

	"github.com/example/myoperator/hack/tools/olm-validate/olmcheck"
)

func main() {
	k8s := flag.String("k8s-version", "", "Kubernetes version the manifests are judged against (the validators' k8s-version).")
	flag.Parse()
	if !run(*k8s, flag.Args()) {
		os.Exit(1)
	}
}

func run(k8sVersion string, dirs []string) bool {
	ok := true
	var nodes []olmcheck.Node
	for _, dir := range dirs {
		b, err := olmcheck.Load(dir)
		if err != nil {
			fmt.Fprintln(os.Stderr, "olm-validate:", err)
			ok = false
			continue
		}
		nodes = append(nodes, olmcheck.NodeOf(dir, b))
		errs, explained, unexplained := 0, 0, 0
		for _, f := range olmcheck.Validate(b, k8sVersion) {
			switch {
			case f.Level == valerrors.LevelError:
				errs++
				fmt.Printf("olm-validate: %s: ERROR %s\n", dir, f)
			case olmcheck.Explained(dir, f):
				explained++
			default:
				unexplained++
				fmt.Printf("olm-validate: %s: WARNING (not explained in docs/olm.md) %s\n", dir, f)
			}
		}
		fmt.Printf("olm-validate: %s (%s): %d errors, %d warnings explained in docs/olm.md, %d unexplained\n",
			dir, b.Name, errs, explained, unexplained)
		ok = ok && errs == 0 && unexplained == 0
	}
	g, err := olmcheck.BuildGraph(nodes)
	for _, line := range g.Lines() {
		fmt.Println("olm-validate: upgrade graph:", line)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "olm-validate: upgrade graph:", err)
		ok = false
	}
	return ok
}
