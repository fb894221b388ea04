package plugin

import (
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/spf13/pflag"

	"github.com/example/myoperator/internal/names"
)

const kubeconfig = `apiVersion: v1
kind: Config
current-context: a
clusters:
- name: a
  cluster: {server: "https://127.0.0.1:1001"}
- name: b
  cluster: {server: "https://127.0.0.1:1002"}
users:
- name: u
  user: {token: t}
contexts:
- name: a
  context: {cluster: a, user: u}
- name: b
  context: {cluster: b, user: u}
`

// TestConnection: the kubeconfig comes from --kubeconfig, else
// $KUBECONFIG; the context from --context, else the current one; -n and
// --namespace set the namespace.
func TestConnection(t *testing.T) {
	file := filepath.Join(t.TempDir(), "config")
	if err := os.WriteFile(file, []byte(kubeconfig), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name       string
		env        string
		args       []string
		host, nsIs string
	}{
		{"KUBECONFIG, current context", file, nil, "https://127.0.0.1:1001", ""},
		{"--context", file, []string{"--context", "b", "-n", "cafe"}, "https://127.0.0.1:1002", "cafe"},
		{"--kubeconfig over KUBECONFIG", "/nonexistent", []string{"--kubeconfig", file, "--namespace=bar"}, "https://127.0.0.1:1001", "bar"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv("KUBECONFIG", tc.env)
			var c Connection
			fs := pflag.NewFlagSet("x", pflag.ContinueOnError)
			c.AddFlags(fs, "namespace")
			if err := fs.Parse(tc.args); err != nil {
				t.Fatal(err)
			}
			cfg, err := c.RESTConfig()
			if err != nil {
				t.Fatal(err)
			}
			if cfg.Host != tc.host || c.Namespace != tc.nsIs || c.OperatorNamespace != names.Namespace {
				t.Errorf("host %s, namespace %q, operator namespace %q; want %s, %q, %q", cfg.Host, c.Namespace, c.OperatorNamespace, tc.host, tc.nsIs, names.Namespace)
			}
		})
	}
}

func TestFlagValue(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want []string
	}{
		{nil, nil},
		{[]string{"--leader-elect", "--watch-namespaces=a,b"}, []string{"a", "b"}},
		{[]string{"--watch-namespaces", "a, b,"}, []string{"a", "b"}},
		{[]string{"-watch-namespaces=a", "--watch-namespaces=c"}, []string{"c"}},
	} {
		got := splitList(FlagValue(tc.args, "watch-namespaces"))
		if !slices.Equal(got, tc.want) {
			t.Errorf("%q: %q, want %q", tc.args, got, tc.want)
		}
		in := Install{WatchNamespaces: got}
		if in.InScope("z") != (len(tc.want) == 0) {
			t.Errorf("%q: InScope(z) = %v", tc.args, in.InScope("z"))
		}
	}
}

// TestCertSecretArg: --webhook-cert-secret="" (OLM's certificates from
// files) is told from no flag at all (the default Secret).
func TestCertSecretArg(t *testing.T) {
	if v, ok := flagValue([]string{"--manage-webhook-certs=false", `--webhook-cert-secret=`}, "webhook-cert-secret"); !ok || v != "" {
		t.Errorf("empty --webhook-cert-secret read as %q, %v", v, ok)
	}
	if _, ok := flagValue([]string{"--leader-elect"}, "webhook-cert-secret"); ok {
		t.Error("no --webhook-cert-secret read as set")
	}
}
