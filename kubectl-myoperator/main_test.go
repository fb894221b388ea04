package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestRun: the commands as typed, those that need no cluster.
func TestRun(t *testing.T) {
	kubeconfig := filepath.Join(t.TempDir(), "config")
	if err := os.WriteFile(kubeconfig, []byte("apiVersion: v1\nkind: Config\ncurrent-context: a\nclusters: [{name: a, cluster: {server: \"https://127.0.0.1:1\"}}]\ncontexts: [{name: a, context: {cluster: a, user: u}}]\nusers: [{name: u, user: {token: t}}]\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("KUBECONFIG", kubeconfig)
	drink := "apiVersion: example.com/v1beta1\nkind: Drink\nmetadata: {name: d}\nspec: {name: D, drink: tea, size: Small}\n"
	for _, tc := range []struct {
		args      []string
		stdin     string
		want, err string
	}{
		{[]string{"convert", "--to", "v1"}, drink, "apiVersion: example.com/v1\nkind: Drink\nmetadata:\n  name: d\nspec:\n  beverage: tea\n  displayName: D\n  size: Small\n", ""},
		{[]string{"convert", "-f", "-", "--to=v1alpha1"}, drink, `example.com/conversion-data: '{"size":"Small"}'`, ""},
		{[]string{"convert", "--help"}, "", "Lossless: what the target version cannot hold", ""},
		{[]string{"convert"}, drink, "", "--to is required"},
		{[]string{"convert", "--to", "v1", "-f", "/nonexistent"}, "", "", "no such file"},
		{[]string{"doctor", "--help"}, "", "accepted-config", ""},
		{[]string{"frobnicate"}, "", "", `unknown command "frobnicate"`},
		{nil, "", "kubectl myoperator doctor", ""},
		{[]string{"version"}, "", "myoperator ", ""},
		{[]string{"--version"}, "", "myoperator ", ""},
		// Shell completion, as kubectl_complete-myoperator asks for it.
		{[]string{"__complete", ""}, "", "convert\tConvert Drink manifests", ""},
		{[]string{"__complete", "convert", "--to", ""}, "", "v1alpha1\nv1beta1\nv1\n:4\n", ""},
		{[]string{"__complete", "status", "-o", ""}, "", "json\nyaml\n:4\n", ""},
		{[]string{"__complete", "doctor", "--as-"}, "", "--as-group\t", ""},
		{[]string{"completion", "bash"}, "", "__start_kubectl-myoperator", ""},
		// Refused before the cluster is read (the kubeconfig's server does not exist).
		{[]string{"status", "-o", "wide"}, "", "", `--output "wide": want one of json, yaml`},
		{[]string{"doctor", "--output=table"}, "", "", `--output "table": want one of json, yaml`},
		{[]string{"status", "--help"}, "", "--as-group", ""},
		{[]string{"doctor", "--help"}, "", "--request-timeout", ""},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			var out bytes.Buffer
			err := run(t.Context(), tc.args, strings.NewReader(tc.stdin), &out)
			if (err == nil) != (tc.err == "") || (err != nil && !strings.Contains(err.Error(), tc.err)) {
				t.Fatalf("error %v, want %q", err, tc.err)
			}
			if !strings.Contains(out.String(), tc.want) {
				t.Errorf("output:\n%s\nwant it to contain %q", out.String(), tc.want)
			}
		})
	}
}
