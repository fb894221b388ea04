package plugin

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/spf13/pflag"
	appsv1 "k8s.io/api/apps/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/example/myoperator/internal/names"
	"github.com/example/myoperator/internal/scheme"
)

// Names of the installation, as config/ writes them.
const (
	// ManagerContainer is the manager's container in names.Deployment.
	ManagerContainer = "manager"
	// PodSelector selects the manager's pods (config/manager).
	PodSelector = names.NameLabel + "=" + names.AppName + ",control-plane=controller-manager"
)

// Connection holds the flags that choose the cluster and how to reach it,
// kubectl's own (client-go's clientcmd defines them for kubectl too):
// --kubeconfig, --context, --cluster, --user, -n/--namespace, --server,
// --token, --as, --as-group, --as-uid, --request-timeout, the TLS and
// client certificate flags. It loads the kubeconfig the way kubectl does:
// --kubeconfig, else $KUBECONFIG, else ~/.kube/config; --context, else
// its current context.
type Connection struct {
	Kubeconfig string
	// Namespace is -n/--namespace, "" when not given (the subcommand then
	// decides: all namespaces, or the kubeconfig context's).
	Namespace string
	// OperatorNamespace is where the operator runs (--operator-namespace).
	OperatorNamespace string

	overrides clientcmd.ConfigOverrides
}

// AddFlags registers the connection flags on fs; namespaceHelp describes
// -n/--namespace for the subcommand ("" leaves the flag out).
func (c *Connection) AddFlags(fs *pflag.FlagSet, namespaceHelp string) {
	fs.StringVar(&c.Kubeconfig, clientcmd.RecommendedConfigPathFlag, "", "Path to the kubeconfig file (default: $KUBECONFIG, else ~/.kube/config).")
	flags := clientcmd.RecommendedConfigOverrideFlags("")
	// -n is the subcommand's scope, not the context's namespace: without
	// it, status and doctor look at every namespace.
	flags.ContextOverrideFlags.Namespace = clientcmd.FlagInfo{}
	clientcmd.BindOverrideFlags(&c.overrides, fs, flags)
	if namespaceHelp != "" {
		fs.StringVarP(&c.Namespace, "namespace", "n", "", namespaceHelp)
	}
	fs.StringVar(&c.OperatorNamespace, "operator-namespace", names.Namespace, "The namespace the operator is installed in.")
}

func (c *Connection) clientConfig() clientcmd.ClientConfig {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	rules.ExplicitPath = c.Kubeconfig
	return clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &c.overrides)
}

// RESTConfig returns the client configuration the flags choose.
func (c *Connection) RESTConfig() (*rest.Config, error) {
	cfg, err := c.clientConfig().ClientConfig()
	if err != nil {
		return nil, fmt.Errorf("loading the kubeconfig: %w", err)
	}
	cfg.UserAgent = "kubectl-myoperator"
	return cfg, nil
}

// Client returns a client with the operator's scheme (every version of
// its APIs).
func (c *Connection) Client() (client.Client, error) {
	cfg, err := c.RESTConfig()
	if err != nil {
		return nil, err
	}
	return client.New(cfg, client.Options{Scheme: scheme.New()})
}

// Install is what the manager Deployment's arguments say about the
// installation: the flags of other releases (or branches) that change what
// the operator is expected to do are read here, so that a check never
// blames the operator for what it was told to leave alone.
type Install struct {
	// Namespace is the operator's namespace.
	Namespace string
	// Found is false when the Deployment is missing.
	Found bool
	// Args are the manager container's arguments.
	Args []string
	// WatchNamespaces are the namespaces of --watch-namespaces=a,b; empty
	// means every namespace.
	WatchNamespaces []string
	// CertSecret is --webhook-cert-secret's Secret, which holds the
	// webhook CA (ca.crt) and serving certificate (tls.crt); "" when the
	// certificates come as files from whoever installed the operator
	// (OLM), who also keeps the caBundles.
	CertSecret string
	// Deployment is the manager's Deployment; nil when not found.
	Deployment *appsv1.Deployment
}

// ReadInstall reads the manager Deployment in namespace.
func ReadInstall(ctx context.Context, r client.Reader, namespace string) (Install, error) {
	in := Install{Namespace: namespace, CertSecret: names.CertSecret}
	d := &appsv1.Deployment{}
	err := r.Get(ctx, client.ObjectKey{Namespace: namespace, Name: names.Deployment}, d)
	if apierrors.IsNotFound(err) {
		return in, nil
	}
	if err != nil {
		return in, fmt.Errorf("reading Deployment %s/%s: %w", namespace, names.Deployment, err)
	}
	in.Found, in.Deployment = true, d
	for _, c := range d.Spec.Template.Spec.Containers {
		if c.Name == ManagerContainer {
			in.Args = slices.Concat(c.Command[min(len(c.Command), 1):], c.Args)
		}
	}
	in.WatchNamespaces = splitList(FlagValue(in.Args, "watch-namespaces"))
	if s, ok := flagValue(in.Args, "webhook-cert-secret"); ok {
		in.CertSecret = s
	}
	return in, nil
}

// InScope reports whether the operator watches namespace.
func (in Install) InScope(namespace string) bool {
	return len(in.WatchNamespaces) == 0 || slices.Contains(in.WatchNamespaces, namespace)
}

// FlagValue is the value of the last --name=value or --name value in args
// (the Go flag package's forms, single dash too); "" when absent.
func FlagValue(args []string, name string) string {
	v, _ := flagValue(args, name)
	return v
}

func flagValue(args []string, name string) (string, bool) {
	var value string
	found := false
	for i, a := range args {
		a = strings.TrimPrefix(strings.TrimPrefix(a, "-"), "-")
		if v, ok := strings.CutPrefix(a, name+"="); ok {
			value, found = v, true
		} else if a == name && i+1 < len(args) {
			value, found = args[i+1], true
		}
	}
	return value, found
}

func splitList(s string) []string {
	var out []string
	for p := range strings.SplitSeq(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

// OutputFormats are the values of status's and doctor's -o/--output,
// besides the default text.
var OutputFormats = []string{"json", "yaml"}

// AddOutputFlag registers -o/--output on fs.
func AddOutputFlag(fs *pflag.FlagSet) *string {
	return fs.StringP("output", "o", "", "Print the report as "+strings.Join(OutputFormats, " or ")+" instead of text, for scripts; the fields are the text's.")
}

// Encode writes v as format, one of OutputFormats.
func Encode(w io.Writer, format string, v any) error {
	switch format {
	case "json":
		e := json.NewEncoder(w)
		e.SetIndent("", "  ")
		return e.Encode(v)
	case "yaml":
		b, err := yaml.Marshal(v)
		if err != nil {
			return err
		}
		_, err = w.Write(b)
		return err
	}
	return fmt.Errorf("--output %q: want one of %s", format, strings.Join(OutputFormats, ", "))
}
