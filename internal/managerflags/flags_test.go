package managerflags_test

import (
	"flag"
	"io"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/example/myoperator/internal/app"
	"github.com/example/myoperator/internal/managerflags"
	"github.com/example/myoperator/internal/names"
)

func parse(t *testing.T, args ...string) *managerflags.Flags {
	t.Helper()
	for _, env := range []string{"POD_NAMESPACE", "POD_NAME", "GUESTBOOK_IMAGE"} {
		t.Setenv(env, "")
	}
	var f managerflags.Flags
	fs := flag.NewFlagSet("manager", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	f.Register(fs)
	if err := fs.Parse(args); err != nil {
		t.Fatal(err)
	}
	return &f
}

// TestOptions: what the flags become, and each rule Validate keeps, named
// by its flag; errors of several flags are all reported.
func TestOptions(t *testing.T) {
	for _, tc := range []struct {
		name    string
		args    []string
		check   func(t *testing.T, o app.Options)
		wantErr []string
	}{
		{
			name: "defaults",
			check: func(t *testing.T, o app.Options) {
				if o.Namespace != names.Namespace || o.WebhookPort != 9443 || o.MaxConcurrentReconciles != 16 || o.LeaderElection {
					t.Errorf("namespace %q, webhook port %d, reconciles %d, leader election %v", o.Namespace, o.WebhookPort, o.MaxConcurrentReconciles, o.LeaderElection)
				}
				if o.Certs == nil || o.Certs.SecretName != names.CertSecret || o.IssuedCertSecret != "" {
					t.Errorf("certificates %+v, issued secret %q: want the rotator on %s", o.Certs, o.IssuedCertSecret, names.CertSecret)
				}
				if o.Sharding != nil || o.WatchNamespaces != nil {
					t.Errorf("sharding %+v, watched %v: want neither", o.Sharding, o.WatchNamespaces)
				}
				// Over HTTP/1.1 the API server opens a TLS connection
				// for most webhook calls under load (internal/app's
				// Options.EnableHTTP2 says what that cost).
				if !o.EnableHTTP2 {
					t.Error("HTTP/2 off by default, want on")
				}
			},
		},
		{
			name: "HTTP/1.1 only",
			args: []string{"--enable-http2=false"},
			check: func(t *testing.T, o app.Options) {
				if o.EnableHTTP2 {
					t.Error("HTTP/2 on after --enable-http2=false")
				}
			},
		},
		{
			name: "cert-manager's Secret",
			args: []string{"--manage-webhook-certs=false", "--webhook-cert-secret=issued"},
			check: func(t *testing.T, o app.Options) {
				if o.Certs != nil || o.IssuedCertSecret != "issued" {
					t.Errorf("certificates %+v, issued secret %q", o.Certs, o.IssuedCertSecret)
				}
			},
		},
		{
			name: "extra DNS names",
			args: []string{"--webhook-extra-dns-names=localhost,op.example"},
			check: func(t *testing.T, o app.Options) {
				if diff := cmp.Diff([]string{"localhost", "op.example"}, o.Certs.ExtraDNSNames); diff != "" {
					t.Error(diff)
				}
			},
		},
		{
			name: "extra IP addresses",
			args: []string{"--webhook-extra-ip-addresses=172.18.0.1, fd00::1"},
			check: func(t *testing.T, o app.Options) {
				if diff := cmp.Diff([]net.IP{net.ParseIP("172.18.0.1"), net.ParseIP("fd00::1")}, o.Certs.ExtraIPs); diff != "" {
					t.Error(diff)
				}
			},
		},
		{
			name:    "an extra IP address that is none",
			args:    []string{"--webhook-extra-ip-addresses=172.18.0.1,kind"},
			wantErr: []string{`--webhook-extra-ip-addresses: entry 2 "kind" is not an IP address`},
		},
		{
			name:    "extra IP addresses with cert-manager's Secret",
			args:    []string{"--manage-webhook-certs=false", "--webhook-extra-ip-addresses=172.18.0.1"},
			wantErr: []string{"--webhook-extra-ip-addresses needs --manage-webhook-certs"},
		},
		{
			name: "sharing the Drinks",
			args: []string{"--shard-drinks", "--shard-renew-period=2s"},
			check: func(t *testing.T, o app.Options) {
				if diff := cmp.Diff(&app.ShardingOptions{Duration: 15 * time.Second, Renew: 2 * time.Second}, o.Sharding); diff != "" {
					t.Error(diff)
				}
			},
		},
		{
			name: "watched namespaces",
			args: []string{"--watch-namespaces= a, b"},
			check: func(t *testing.T, o app.Options) {
				if diff := cmp.Diff([]string{"a", "b"}, o.WatchNamespaces); diff != "" {
					t.Error(diff)
				}
			},
		},
		{
			name:    "a member Lease shorter than two renewals",
			args:    []string{"--shard-drinks", "--shard-renew-period=10s"},
			wantErr: []string{"--shard-member-lease-duration (15s) must be at least twice --shard-renew-period (10s)"},
		},
		{
			name:    "a namespace that is no name",
			args:    []string{"--watch-namespaces=Bad_NS"},
			wantErr: []string{`--watch-namespaces: entry 1 "Bad_NS" is not a namespace name`},
		},
		{
			name:    "an object bound beyond the request bound",
			args:    []string{"--conversion-max-object-bytes=10", "--conversion-max-request-bytes=5"},
			wantErr: []string{"--conversion-max-object-bytes: 10: must not exceed --conversion-max-request-bytes (5)"},
		},
		{
			name:    "several at once",
			args:    []string{"--guestbook-image=not an image", "--watch-namespaces=,"},
			wantErr: []string{"--guestbook-image: guestbookImage: Invalid value", "--watch-namespaces: entry 1 is empty"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o, err := parse(t, tc.args...).Options()
			if len(tc.wantErr) == 0 {
				if err != nil {
					t.Fatal(err)
				}
				tc.check(t, o)
				return
			}
			if err == nil {
				t.Fatalf("no error, want %q", tc.wantErr)
			}
			for _, want := range tc.wantErr {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error %q does not say %q", err, want)
				}
			}
		})
	}
}
