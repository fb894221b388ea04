// Command kubectl-myoperator is the kubectl plugin of myoperator: kubectl
// myoperator status, doctor and convert (docs/plugin.md). Its commands are
// cobra's, as kubectl's are, for cobra's shell completion: kubectl (1.26
// and later) completes "kubectl myoperator ..." by running
// kubectl_complete-myoperator, which asks this binary (__complete).
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

	"github.com/spf13/cobra"
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
  kubectl myoperator completion bash|zsh|fish|powershell

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
	default:
		fmt.Fprintln(os.Stderr, "kubectl myoperator:", err)
		os.Exit(2)
	}
}

func run(ctx context.Context, args []string, stdin io.Reader, stdout io.Writer) error {
	root := &cobra.Command{
		// The binary's name, which completion scripts are named after (a
		// root named kubectl would write kubectl's); kubectl's name for
		// it in help and errors.
		Use:         "kubectl-myoperator",
		Annotations: map[string]string{cobra.CommandDisplayNameAnnotation: "kubectl myoperator"},
		Short:       "Look at and fix a myoperator installation",
		Long:        usage,
		Version:     version.String(),
		// The errors are main's to print, with the exit code it chooses.
		SilenceErrors: true,
		SilenceUsage:  true,
		Args:          cobra.NoArgs,
		RunE:          func(cmd *cobra.Command, _ []string) error { return cmd.Help() },
	}
	root.SetArgs(args)
	root.SetIn(stdin)
	root.SetOut(stdout)
	root.SetErr(stdout)
	root.SetHelpTemplate("{{.Long}}{{if not .HasParent}}{{else}}\n{{.UsageString}}{{end}}")
	root.SetVersionTemplate("{{.Version}}\n")
	root.AddCommand(statusCommand(), doctorCommand(), convertCommand(stdin, stdout), &cobra.Command{
		Use:   "version",
		Short: "Print the plugin's version",
		Args:  cobra.NoArgs,
		Run:   func(cmd *cobra.Command, _ []string) { fmt.Fprintln(cmd.OutOrStdout(), version.String()) },
	})
	return root.ExecuteContext(ctx)
}

// connected is a command that reads the cluster: kubectl's connection
// flags, -n and -o.
type connected struct {
	conn   plugin.Connection
	output *string
}

func newConnected(cmd *cobra.Command, namespaceHelp string) *connected {
	c := &connected{}
	c.conn.AddFlags(cmd.Flags(), namespaceHelp)
	c.output = plugin.AddOutputFlag(cmd.Flags())
	_ = cmd.RegisterFlagCompletionFunc("output", cobra.FixedCompletions(plugin.OutputFormats, cobra.ShellCompDirectiveNoFileComp))
	return c
}

// client refuses an -o the commands do not print, before the cluster is
// read, and connects.
func (c *connected) client() (client.Client, error) {
	if *c.output != "" && !slices.Contains(plugin.OutputFormats, *c.output) {
		return nil, fmt.Errorf("--output %q: want one of %s (or none, for text)", *c.output, strings.Join(plugin.OutputFormats, ", "))
	}
	return c.conn.Client()
}

func statusCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "status",
		Short: "The operator's pods and leader, webhooks and certificate, Drinks, Guestbooks and the OperatorConfig",
		Args:  cobra.NoArgs,
	}
	c := newConnected(cmd, "Show only the Drinks of this namespace (default: every namespace).")
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		k8s, err := c.client()
		if err != nil {
			return err
		}
		r, err := status.Read(cmd.Context(), k8s, c.conn.OperatorNamespace, c.conn.Namespace, time.Now())
		if err != nil {
			return err
		}
		if *c.output != "" {
			return plugin.Encode(cmd.OutOrStdout(), *c.output, r)
		}
		status.Text(cmd.OutOrStdout(), r)
		return nil
	}
	return cmd
}

func doctorCommand() *cobra.Command {
	var long strings.Builder
	long.WriteString("Checks the installation's invariants against the live cluster; prints each finding with\nthe command that fixes it and exits 1 on any (2 when the cluster cannot be read).\nChecks:\n")
	for _, c := range doctor.Checks {
		fmt.Fprintf(&long, "  %-20s %s\n", c.Name, c.Invariant)
	}
	fmt.Fprintf(&long, "Not findings: Drinks being deleted, paused (%s: \"true\"), outside the\nmanager's --watch-namespaces, or while the operator is Unmanaged.\n", pause.Annotation)
	cmd := &cobra.Command{
		Use:   "doctor",
		Short: "Check the installation's invariants; each finding with the command that fixes it",
		Long:  long.String(),
		Args:  cobra.NoArgs,
	}
	c := newConnected(cmd, "Check only the Drinks and ConfigMaps of this namespace (default: every namespace); the installation is checked always.")
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		k8s, err := c.client()
		if err != nil {
			return err
		}
		s, err := doctor.Read(cmd.Context(), k8s, c.conn.OperatorNamespace, c.conn.Namespace)
		if err != nil {
			return err
		}
		findings := doctor.Run(s)
		if *c.output != "" {
			if err := plugin.Encode(cmd.OutOrStdout(), *c.output, doctor.NewReport(s, findings)); err != nil {
				return err
			}
		} else {
			doctor.Print(cmd.OutOrStdout(), s, findings)
		}
		if len(findings) > 0 {
			return errFindings
		}
		return nil
	}
	return cmd
}

func convertCommand(stdin io.Reader, stdout io.Writer) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "convert --to VERSION [-f FILE]...",
		Short: "Convert Drink manifests between versions offline",
		Long: fmt.Sprintf(`Converts Drink manifests between versions offline, with the operator's own
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
`, drinksv1.ConversionDataAnnotation),
		Args: cobra.NoArgs,
	}
	files := cmd.Flags().StringArrayP("filename", "f", nil, `A file of Drink manifests (YAML or JSON, several documents); repeatable; "-" or none reads stdin.`)
	to := cmd.Flags().String("to", "", "The version to write: "+fmt.Sprint(convert.Versions())+".")
	_ = cmd.RegisterFlagCompletionFunc("to", cobra.FixedCompletions(convert.Versions(), cobra.ShellCompDirectiveNoFileComp))
	_ = cmd.MarkFlagFilename("filename", "yaml", "yml", "json")
	cmd.RunE = func(*cobra.Command, []string) error {
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
	return cmd
}
