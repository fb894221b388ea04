package app_test

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/example/myoperator/internal/app"
	"github.com/example/myoperator/test/framework/testenv"
	"github.com/example/myoperator/test/framework/testutil"
)

// TestServingProtocols: the webhook and secure metrics servers of the
// manager that app.New builds answer a client that prefers HTTP/2 in
// HTTP/2 when EnableHTTP2 (--enable-http2, the flag's default) is set and
// in HTTP/1.1 when it is not (--enable-http2=false), and refuse TLS 1.1
// even where Go's own default would accept it (GODEBUG tls10server=1, up
// to Go 1.26), so that the minimum holds because the manager sets it.
//
// The setting is made after the API server started: Go 1.27 removed it,
// and a program built with Go 1.27 (the test cluster's etcd and
// kube-apiserver are) refuses to start with it in its environment.
func TestServingProtocols(t *testing.T) {
	cases := []struct {
		name        string
		enableHTTP2 bool
		wantALPN    string
		wantProto   string
	}{
		{name: "enable-http2", enableHTTP2: true, wantALPN: "h2", wantProto: "HTTP/2.0"},
		{name: "enable-http2=false", enableHTTP2: false, wantALPN: "http/1.1", wantProto: "HTTP/1.1"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			env, cfg, _ := testenv.Start(t, testenv.Options{Webhooks: true})
			t.Setenv("GODEBUG", "tls10server=1")
			ctx, cancel := context.WithCancel(context.Background())
			t.Cleanup(cancel)
			metrics := testutil.FreeAddr(t, env.WebhookInstallOptions.LocalServingPort)
			if err := testenv.StartManager(ctx, env, cfg, app.InProcess(app.Options{
				EnableHTTP2: c.enableHTTP2, MetricsAddr: metrics, SecureMetrics: true,
			})); err != nil {
				t.Fatal(err)
			}
			wo := env.WebhookInstallOptions
			servers := map[string]string{
				"webhook": net.JoinHostPort(wo.LocalServingHost, strconv.Itoa(wo.LocalServingPort)),
				"metrics": metrics,
			}
			for server, addr := range servers {
				var alpn, proto string
				testenv.Eventually(t, 20*time.Second, func() string {
					var err error
					alpn, proto, err = requestPreferringHTTP2(ctx, "https://"+addr+"/")
					if err != nil {
						return fmt.Sprintf("%s server: %v", server, err)
					}
					return ""
				})
				if alpn != c.wantALPN || proto != c.wantProto {
					t.Errorf("%s server: ALPN %q, %s; want %q, %s", server, alpn, proto, c.wantALPN, c.wantProto)
				}
				if v, err := handshakeTLS11(addr); err == nil {
					t.Errorf("%s server accepted TLS version %#x, want 1.2 at least", server, v)
				}
			}
		})
	}
}

// requestPreferringHTTP2 sends one GET through a client that offers h2
// before http/1.1, as Go's and most clients do, and returns the protocol
// the server chose in ALPN and the one the answer came in.
func requestPreferringHTTP2(ctx context.Context, url string) (alpn, proto string, err error) {
	tr := &http.Transport{
		TLSClientConfig:   &tls.Config{InsecureSkipVerify: true, NextProtos: []string{"h2", "http/1.1"}}, //nolint:gosec // test servers with self-issued certificates; only the protocol matters.
		ForceAttemptHTTP2: true,
	}
	defer tr.CloseIdleConnections()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return "", "", err
	}
	resp, err := (&http.Client{Transport: tr, Timeout: 5 * time.Second}).Do(req)
	if err != nil {
		return "", "", err
	}
	defer func() { _ = resp.Body.Close() }()
	return resp.TLS.NegotiatedProtocol, resp.Proto, nil
}

// handshakeTLS11 tries a TLS 1.0-1.1 handshake and returns the version
// agreed on, if the server accepts one.
func handshakeTLS11(addr string) (uint16, error) {
	conn, err := tls.Dial("tcp", addr, &tls.Config{InsecureSkipVerify: true, MinVersion: tls.VersionTLS10, MaxVersion: tls.VersionTLS11}) //nolint:gosec // the point is to offer an old version.
	if err != nil {
		return 0, err
	}
	defer func() { _ = conn.Close() }()
	return conn.ConnectionState().Version, nil
}
