package userpaths_test

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/example/myoperator/internal/names"
	"github.com/example/myoperator/test/framework/testenv"
)

// The bridge between the test's network namespace and the cluster's: this
// host is hostIP there, the cluster's node nodeIP, as a kind node container
// is 172.18.0.2 on the kind network and the host 172.18.0.1. remoteIP is an
// address of the cluster's namespace that the test's reaches only through
// nodeIP as a gateway: a cluster on another network.
const (
	hostIP   = "10.250.0.1"
	nodeIP   = "10.250.0.2"
	remoteIP = "10.251.0.2"
)

// TestMakeRunBehindABridge: the course's order (theCourse) on a cluster that
// is kind in all but name. Its API server runs in a network namespace of its
// own and reaches this host only over a veth pair, never at localhost; the
// kubeconfig names 127.0.0.1, a port forward into that namespace, and the
// nodes' InternalIP is the cluster's end of the pair, as kind's are. make
// run must choose this host's end of the pair (hack/runhost), listen there
// and serve a certificate valid for that IP.
//
// Before that, the same cluster shows what make run did before it chose:
// with RUN_WEBHOOK_HOST=localhost the API server calls its own loopback and
// a Drink cannot be written. And make run with a kubeconfig whose server is
// reached through a gateway (a cluster on another network, which cannot call
// this host) exits naming make deploy and changes nothing in the cluster.
func TestMakeRunBehindABridge(t *testing.T) {
	u := setUp(t)
	root, binDir, dir, kubeconfig, env := u.root, u.binDir, u.dir, u.kubeconfig, u.env

	ns := fmt.Sprintf("myoperator-bridge-%d", os.Getpid())
	clusterEnv := append(userEnv(filepath.Join(dir, "cluster.kubeconfig"), binDir), "NETNS="+ns)
	cluster := fmt.Sprintf("myoperator-bridge-%d", os.Getpid())
	start := time.Now()
	bridge(t, root, ns)
	t.Cleanup(func() {
		_, _ = command(root, clusterEnv, "hack/dev-cluster.sh", "down", cluster, filepath.Join(dir, "cluster.kubeconfig"))
	})
	if out, err := command(root, clusterEnv, "hack/dev-cluster.sh", "up", cluster, filepath.Join(dir, "cluster.kubeconfig")); err != nil {
		t.Fatalf("hack/dev-cluster.sh up (namespace %s): %v\n%s", ns, err, out)
	}
	apiPort := forwardAPIServer(t, filepath.Join(dir, "cluster.kubeconfig"), kubeconfig)
	placeNodes(t, root, env)
	t.Logf("kwok cluster %s up behind a bridge in %s (API server %s:%s, port forward at 127.0.0.1)", cluster, time.Since(start).Round(100*time.Millisecond), nodeIP, apiPort)

	theCourse(t, root, env, kubeconfig, dir, func(vars []string) {
		checkUnreachableRefused(t, root, binDir, dir, kubeconfig, apiPort, vars)
		checkLocalhostFails(t, root, env, dir)
	})
}

// bridge makes the cluster's network namespace (hack/netns.sh: no route off
// the machine) and a veth pair from this one into it; ends of earlier runs
// go first.
func bridge(t *testing.T, root, ns string) {
	t.Helper()
	here := fmt.Sprintf("mrb%da", os.Getpid()%1000000)
	there := strings.TrimSuffix(here, "a") + "b"
	run := func(args ...string) {
		t.Helper()
		if out, err := exec.Command(args[0], args[1:]...).CombinedOutput(); err != nil {
			t.Fatalf("%s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
	_ = exec.Command("ip", "link", "del", here).Run()
	_ = exec.Command("ip", "netns", "del", ns).Run()
	t.Cleanup(func() {
		_ = exec.Command("ip", "link", "del", here).Run()
		_ = exec.Command("ip", "netns", "del", ns).Run()
	})
	run(filepath.Join(root, "hack", "netns.sh"), ns, "true")
	run("ip", "link", "add", here, "type", "veth", "peer", "name", there, "netns", ns)
	run("ip", "addr", "add", hostIP+"/29", "dev", here)
	run("ip", "link", "set", here, "up")
	run("ip", "-n", ns, "addr", "add", nodeIP+"/29", "dev", there)
	run("ip", "-n", ns, "link", "set", there, "up")
	// Another network behind the cluster's end: reached through it.
	run("ip", "-n", ns, "addr", "add", remoteIP+"/32", "dev", "lo")
	run("ip", "route", "add", remoteIP+"/32", "via", nodeIP)
}

// forwardAPIServer serves a port forward on 127.0.0.1 to the API server
// across the bridge, as kind publishes its node's 6443 on the host's
// loopback, and writes the user's kubeconfig naming it. It returns the API
// server's port.
func forwardAPIServer(t *testing.T, clusterKubeconfig, kubeconfig string) string {
	t.Helper()
	cfg, err := clientcmd.LoadFromFile(clusterKubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	cl := cfg.Clusters[cfg.Contexts[cfg.CurrentContext].Cluster]
	u, err := url.Parse(cl.Server)
	if err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = l.Close() })
	target := net.JoinHostPort(nodeIP, u.Port())
	go func() {
		for {
			in, err := l.Accept()
			if err != nil {
				return
			}
			go func() {
				defer func() { _ = in.Close() }()
				out, err := net.DialTimeout("tcp", target, 5*time.Second)
				if err != nil {
					return
				}
				defer func() { _ = out.Close() }()
				go func() { _, _ = io.Copy(out, in); _ = out.(*net.TCPConn).CloseWrite() }()
				_, _ = io.Copy(in, out)
			}()
		}
	}()
	cl.Server = "https://" + l.Addr().String()
	if err := clientcmd.WriteToFile(*cfg, kubeconfig); err != nil {
		t.Fatal(err)
	}
	return u.Port()
}

// placeNodes gives each node the cluster's end of the bridge as its
// InternalIP, as a kind node's is its container's address (kwok keeps an
// InternalIP a node has).
func placeNodes(t *testing.T, root string, env []string) {
	t.Helper()
	out, err := command(root, env, "kubectl", "get", "nodes", "-o", "name")
	if err != nil {
		t.Fatalf("kubectl get nodes through the port forward: %v\n%s", err, out)
	}
	for _, n := range strings.Fields(string(out)) {
		name := strings.TrimPrefix(n, "node/")
		patch := fmt.Sprintf(`{"status":{"addresses":[{"type":"InternalIP","address":%q},{"type":"Hostname","address":%q}]}}`, nodeIP, name)
		if out, err := command(root, env, "kubectl", "patch", n, "--subresource=status", "--type=merge", "-p", patch); err != nil {
			t.Fatalf("%v\n%s", err, out)
		}
	}
}

// checkUnreachableRefused: make run with a kubeconfig whose server is
// reached through a gateway exits non-zero, says why and names make
// deploy, and the cluster (the same one, which a make run that went on
// would change) is as make install left it.
func checkUnreachableRefused(t *testing.T, root, binDir, dir, kubeconfig, apiPort string, vars []string) {
	t.Helper()
	cfg, err := clientcmd.LoadFromFile(kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	for _, cl := range cfg.Clusters {
		cl.Server = "https://" + net.JoinHostPort(remoteIP, apiPort)
		cl.TLSServerName = "localhost"
	}
	remote := filepath.Join(dir, "remote.kubeconfig")
	if err := clientcmd.WriteToFile(*cfg, remote); err != nil {
		t.Fatal(err)
	}
	renv := userEnv(remote, binDir)
	// The server answers at that address: only the route makes it remote.
	if out, err := command(root, renv, "kubectl", "get", "--raw", "/readyz"); err != nil {
		t.Fatalf("the API server at %s: %v\n%s", remoteIP, err, out)
	}
	out, err := command(root, renv, "make", append([]string{"--no-print-directory", "run"}, vars...)...)
	for _, want := range []string{"cannot call a manager on this host", "reached through the gateway " + nodeIP, "make deploy IMG="} {
		if err == nil || !strings.Contains(string(out), want) {
			t.Fatalf("make run with the server at %s through %s: %v, want a refusal saying %q:\n%s", remoteIP, nodeIP, err, want, out)
		}
	}
	t.Logf("make run with a server reached through a gateway: %v\n%s", err, out)

	ctx := context.Background()
	c := newClient(t, kubeconfig)
	crd := &apiextensionsv1.CustomResourceDefinition{}
	if err := c.Get(ctx, client.ObjectKey{Name: names.DrinkCRD}, crd); err != nil {
		t.Fatal(err)
	}
	if cc := crd.Spec.Conversion.Webhook.ClientConfig; cc.URL != nil || cc.Service == nil || cc.Service.Name != names.WebhookService {
		t.Fatalf("the Drink conversion after the refused make run: %+v, want make install's Service", cc)
	}
	for _, o := range []client.Object{
		&admissionregistrationv1.MutatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: names.MutatingWebhookConfig}},
		&admissionregistrationv1.ValidatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: names.ValidatingWebhookConfig}},
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: names.Namespace, Name: names.CertSecret}},
	} {
		if err := c.Get(ctx, client.ObjectKeyFromObject(o), o); !apierrors.IsNotFound(err) {
			t.Fatalf("%T %s after the refused make run: %v, want not found (config/local not applied)", o, o.GetName(), err)
		}
	}
}

// checkLocalhostFails: make run told to use localhost, as it did before it
// chose, starts, but the API server calls its own loopback, so a Drink
// cannot be written. It is stopped before the real make run.
func checkLocalhostFails(t *testing.T, root string, env []string, dir string) {
	t.Helper()
	vars, webhookPort, probePort := runPorts(t)
	run := startMakeRun(t, root, append(env, "RUN_WEBHOOK_HOST=localhost"), filepath.Join(dir, "make-run-localhost.log"), vars)
	defer run.stop(t)
	waitReady(t, run, probePort, 5*time.Minute)
	apply := exec.Command("kubectl", "apply", "-f", "-")
	apply.Dir, apply.Env, apply.Stdin = root, env, strings.NewReader(testenv.CourseDrink(t))
	out, err := apply.CombinedOutput()
	if err == nil || !strings.Contains(string(out), fmt.Sprintf("https://localhost:%d/", webhookPort)) {
		run.fail(t, "kubectl apply of the course's Drink with the webhooks at localhost: %v, want a failed webhook call to localhost:\n%s", err, out)
	}
	t.Logf("with RUN_WEBHOOK_HOST=localhost (what make run did before): %v\n%s", err, strings.TrimSpace(string(out)))
}
