package plugin

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

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
// --namespace set the namespace; kubectl's other flags (clientcmd's) reach
// the client: --server, --token, --as, --as-group, --request-timeout.
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
		as, token  string
		groups     []string
		timeout    time.Duration
	}{
		{name: "KUBECONFIG, current context", env: file, host: "https://127.0.0.1:1001", token: "t"},
		{name: "--context", env: file, args: []string{"--context", "b", "-n", "cafe"}, host: "https://127.0.0.1:1002", nsIs: "cafe", token: "t"},
		{name: "--kubeconfig over KUBECONFIG", env: "/nonexistent", args: []string{"--kubeconfig", file, "--namespace=bar"}, host: "https://127.0.0.1:1001", nsIs: "bar", token: "t"},
		{name: "--as, --as-group, --request-timeout", env: file, args: []string{"--as", "jane", "--as-group", "tenants", "--as-group=auditors", "--request-timeout", "5s"},
			host: "https://127.0.0.1:1001", token: "t", as: "jane", groups: []string{"tenants", "auditors"}, timeout: 5 * time.Second},
		{name: "--server, --token", env: file, args: []string{"--server", "https://127.0.0.1:1003", "--token", "other"}, host: "https://127.0.0.1:1003", token: "other"},
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
			if cfg.BearerToken != tc.token || cfg.Impersonate.UserName != tc.as || !slices.Equal(cfg.Impersonate.Groups, tc.groups) || cfg.Timeout != tc.timeout {
				t.Errorf("token %q, as %q %v, timeout %s; want %q, %q %v, %s", cfg.BearerToken, cfg.Impersonate.UserName, cfg.Impersonate.Groups, cfg.Timeout,
					tc.token, tc.as, tc.groups, tc.timeout)
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
