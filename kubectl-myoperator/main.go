// Command kubectl-myoperator is the kubectl plugin of myoperator: kubectl
// myoperator status, doctor and convert (docs/plugin.md).
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/spf13/pflag"
	"sigs.k8s.io/controller-runtime/pkg/client"

	drinksv1 "github.com/example/myoperator/apis/drinks/v1"
	"github.com/example/myoperator/internal/pause"
	"github.com/example/myoperator/internal/plugin"
	"github.com/example/myoperator/internal/plugin/convert"
	"github.com/example/myoperator/internal/plugin/doctor"
	"github.com/example/myoperator/internal/plugin/status"
	"github.com/example/myoperator/internal/version"
)

const usage = `kubectl myoperator: look at and fix a myoperator installation.

Usage:
  kubectl myoperator status  [-n NAMESPACE] [-o json|yaml] [kubectl's flags]
  kubectl myoperator doctor  [-n NAMESPACE] [-o json|yaml] [kubectl's flags]
  kubectl myoperator convert --to VERSION [-f FILE]...
  kubectl myoperator version

status   the operator's pods and leader, webhooks and certificate, Drinks,
         Guestbooks and the OperatorConfig cluster.
doctor   checks the installation's invariants; prints each finding with the
         command that fixes it; exits 1 on any finding, whatever -o says.
convert  converts Drink manifests between versions offline.

"kubectl myoperator COMMAND --help" describes each.
`

// errFindings makes doctor exit 1 without printing more.
var errFindings = errors.New("findings")

func main() {
	err := run(context.Background(), os.Args[1:], os.Stdin, os.Stdout)
	switch {
	case err == nil:
	case errors.Is(err, errFindings):
		os.Exit(1)
	case errors.Is(err, pflag.ErrHelp):
	default:
		fmt.Fprintln(os.Stderr, "kubectl myoperator:", err)
		os.Exit(2)
	}
}

func run(ctx context.Context, args []string, stdin io.Reader, stdout io.Writer) error {
	if len(args) == 0 {
		fmt.Fprint(stdout, usage)
		return nil
	}
	cmd, args := args[0], args[1:]
	fs := pflag.NewFlagSet("kubectl myoperator "+cmd, pflag.ContinueOnError)
	fs.SetOutput(stdout)
	var conn plugin.Connection
	// connect parses the flags of a command that reads the cluster.
	connect := func(namespaceHelp string) (client.Client, error) {
		conn.AddFlags(fs, namespaceHelp)
		if err := fs.Parse(args); err != nil {
			return nil, err
		}
		return conn.Client()
	}
	var output *string
	// checkOutput refuses an -o the commands do not print, before the
	// cluster is read.
	checkOutput := func() error {
		if *output != "" && !slices.Contains(plugin.OutputFormats, *output) {
			return fmt.Errorf("--output %q: want one of %s (or none, for text)", *output, strings.Join(plugin.OutputFormats, ", "))
		}
		return nil
	}
	switch cmd {
	case "status":
		output = plugin.AddOutputFlag(fs)
		c, err := connect("Show only the Drinks of this namespace (default: every namespace).")
		if err != nil {
			return err
		}
		if err := checkOutput(); err != nil {
			return err
		}
		r, err := status.Read(ctx, c, conn.OperatorNamespace, conn.Namespace, time.Now())
		if err != nil {
			return err
		}
		if *output != "" {
			return plugin.Encode(stdout, *output, r)
		}
		status.Text(stdout, r)
		return nil
	case "doctor":
		output = plugin.AddOutputFlag(fs)
		fs.Usage = func() {
			fmt.Fprintln(fs.Output(), "Checks the installation's invariants against the live cluster; prints each finding with\nthe command that fixes it and exits 1 on any (2 when the cluster cannot be read).\nChecks:")
			for _, c := range doctor.Checks {
				fmt.Fprintf(fs.Output(), "  %-20s %s\n", c.Name, c.Invariant)
			}
			fmt.Fprintf(fs.Output(), "Not findings: Drinks being deleted, paused (%s: \"true\"), outside the\nmanager's --watch-namespaces, or while the operator is Unmanaged.\n\nUsage: kubectl myoperator doctor [flags]\n\n", pause.Annotation)
			fs.PrintDefaults()
		}
		c, err := connect("Check only the Drinks and ConfigMaps of this namespace (default: every namespace); the installation is checked always.")
		if err != nil {
			return err
		}
		if err := checkOutput(); err != nil {
			return err
		}
		s, err := doctor.Read(ctx, c, conn.OperatorNamespace, conn.Namespace)
		if err != nil {
			return err
		}
		findings := doctor.Run(s)
		if *output != "" {
			if err := plugin.Encode(stdout, *output, doctor.NewReport(s, findings)); err != nil {
				return err
			}
		} else {
			doctor.Print(stdout, s, findings)
		}
		if len(findings) > 0 {
			return errFindings
		}
		return nil
	case "convert":
		return runConvert(fs, args, stdin, stdout)
	case "version", "--version":
		fmt.Fprintln(stdout, version.String())
		return nil
	case "help", "-h", "--help":
		fmt.Fprint(stdout, usage)
		return nil
	}
	return fmt.Errorf("unknown command %q; commands: status, doctor, convert, version", cmd)
}

func runConvert(fs *pflag.FlagSet, args []string, stdin io.Reader, stdout io.Writer) error {
	files := fs.StringArrayP("filename", "f", nil, `A file of Drink manifests (YAML or JSON, several documents); repeatable; "-" or none reads stdin.`)
	to := fs.String("to", "", "The version to write: "+fmt.Sprint(convert.Versions())+".")
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), `Converts Drink manifests between versions offline, with the operator's own
conversion code, as the API server converts them: through the v1 hub.
Writes YAML, one document per Drink, in the order read; a List (kubectl get
-o yaml) stays a List of converted items.

Lossless: what the target version cannot hold (v1alpha1 has no size,
sugarCubes or extras; v1beta1 no extras; neither has the course's fields
beside their own) is kept in the annotation %s, and converting back
restores it. Keep that annotation when you edit the output. A field the
input's version does not have is refused, not dropped.

Bounded: a document of more than 3 MiB (the API server's request limit) is
refused, but a List that large converts item by item when given as JSON
(kubectl get drinks -A -o json).

Usage: kubectl myoperator convert --to VERSION [-f FILE]...

`, drinksv1.ConversionDataAnnotation)
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *to == "" {
		return fmt.Errorf("--to is required: one of %v", convert.Versions())
	}
	if len(*files) == 0 {
		*files = []string{"-"}
	}
	first := true
	for _, name := range *files {
		r, display := stdin, "stdin"
		if name != "-" {
			f, err := os.Open(name)
			if err != nil {
				return err
			}
			defer func() { _ = f.Close() }()
			r, display = f, name
		}
		if err := convert.Stream(stdout, r, display, *to, &first); err != nil {
			return err
		}
	}
	return nil
}
