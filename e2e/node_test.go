//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/e2e-framework/pkg/envconf"

	operatorv1alpha1 "github.com/example/myoperator/apis/operator/v1alpha1"
	"github.com/example/myoperator/test/podrunner"
)

// The real node (E2E_NODE=real) is hack/node/node.sh's: the suite drives
// it through that script, so that the node a developer starts by hand and
// the one the suite tests are the same (docs/REAL-NODE.md).

// nodeWork is node.sh's state folder: its kubeconfig, configs and the
// logs of containerd, the kubelet and kube-proxy.
func nodeWork() string {
	if w := os.Getenv("NODE_WORK"); w != "" {
		return w
	}
	return filepath.Join(root, "bin", "node-work")
}

// nodeScript runs hack/node/node.sh in the network namespace the suite runs
// in (E2E_NODE_NETNS, set by make test-e2e), so that the suite reaches the
// node's pod IPs and ClusterIPs as the node itself does.
func nodeScript(args ...string) (string, error) {
	cmd := exec.Command(filepath.Join(root, "hack", "node", "node.sh"), args...)
	netns := os.Getenv("E2E_NODE_NETNS")
	if netns == "" {
		netns = "myoperator-node"
	}
	// KEEP_NETNS: down must not delete the namespace the suite runs in.
	cmd.Env = append(os.Environ(), "NETNS="+netns, "NODE_WORK="+nodeWork(), "KEEP_NETNS=1")
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// startNode starts the cluster and its real node and points the suite's
// configuration at its kubeconfig.
func startNode(ctx context.Context, cfg *envconf.Config) (context.Context, error) {
	// A node left by an interrupted run would hold the socket and the
	// cluster's name.
	if out, err := nodeScript("down"); err != nil {
		return ctx, fmt.Errorf("node.sh down before up: %w: %s", err, out)
	}
	out, err := nodeScript("up")
	if err != nil {
		return ctx, fmt.Errorf("node.sh up (make k8s-binaries node-binaries build what it needs): %w\n%s", err, out)
	}
	fmt.Print(indent(out))
	cfg.WithKubeconfigFile(filepath.Join(nodeWork(), "kubeconfig"))
	return ctx, nil
}

// stopNode stops the node's daemons, unmounts what they mounted and
// deletes the cluster.
func stopNode(ctx context.Context, _ *envconf.Config) (context.Context, error) {
	out, err := nodeScript("down")
	fmt.Print(indent(out))
	if err != nil {
		return ctx, fmt.Errorf("node.sh down: %w", err)
	}
	return ctx, nil
}

// importImages copies images from podman's store into the node's
// containerd, where the kubelet finds them without a pull.
func importImages(images ...string) error {
	out, err := nodeScript(append([]string{"import"}, images...)...)
	if err != nil {
		return fmt.Errorf("node.sh import %s: %w: %s", strings.Join(images, " "), err, out)
	}
	return nil
}

// buildGuestbookImage builds the Guestbook server's image under the
// default guestbook.image name (guestbook.Dockerfile, the binary make build
// wrote) and, on the real node, imports it into the node: the Guestbook
// pods run it (on kwok nodes, those of pulledGuestbook, under the pod
// runner), and their readiness comes from its /readyz.
func buildGuestbookImage(ctx context.Context, _ *envconf.Config) (context.Context, error) {
	bin := filepath.Join(root, "bin", "linux_"+runtime.GOARCH, "guestbook-server")
	if _, err := os.Stat(bin); err != nil {
		return ctx, fmt.Errorf("%s missing: run make build", bin)
	}
	img := operatorv1alpha1.DefaultGuestbookImage
	const base = "localhost/myoperator-guestbook:e2e-base"
	args := podrunner.Podman("build", "-q", "-f", filepath.Join(root, "guestbook.Dockerfile"), "-t", base, root)
	out, err := exec.Command(args[0], args[1:]...).CombinedOutput()
	if err != nil {
		return ctx, fmt.Errorf("podman build -f guestbook.Dockerfile: %w: %s", err, out)
	}
	// The shipped image with the failover drill on, which the probe
	// failover feature calls (the server refuses it by default); also as
	// the image a user chooses in the helm upgrade feature.
	empty, err := os.MkdirTemp("", "e2e-guestbook-image-")
	if err != nil {
		return ctx, err
	}
	defer func() { _ = os.RemoveAll(empty) }()
	args = podrunner.Podman("build", "-q", "-f", "-", "-t", img, "-t", userGuestbookImage, empty)
	build := exec.Command(args[0], args[1:]...)
	build.Stdin = strings.NewReader("FROM " + base + "\nENV GUESTBOOK_FAILOVER_DRILL=enabled\n")
	if out, err := build.CombinedOutput(); err != nil {
		return ctx, fmt.Errorf("podman build of the e2e Guestbook image (the drill on): %w: %s", err, out)
	}
	fmt.Printf("e2e: image %s\n", img)
	if !mode.realNode {
		return ctx, nil // the pod runner runs it from podman's store
	}
	return ctx, importImages(img, userGuestbookImage)
}

// userGuestbookImage is the spec.guestbook.image a user sets in the helm
// upgrade feature: another name than any default, so that the test tells
// a kept choice from a default.
const userGuestbookImage = "ghcr.io/example/myoperator-guestbook:user-chosen"

// printNode prints what the suite runs on: the node as kubectl shows it and
// the operator's containers as containerd names them.
func printNode(ctx context.Context, cfg *envconf.Config) (context.Context, error) {
	out, err := kubectl(cfg, "get", "node", "-o", "wide")
	if err != nil {
		return ctx, fmt.Errorf("kubectl get node: %w: %s", err, out)
	}
	fmt.Printf("e2e: kubectl get node -o wide\n%s", indent(out))
	ids, err := operatorContainerIDs(ctx)
	if err != nil {
		return ctx, err
	}
	for _, id := range ids {
		fmt.Printf("e2e: operator container %s\n", id)
	}
	return ctx, nil
}

// operatorContainerIDs are pod/container: ID of every container of the
// operator's pods, init containers included, as the kubelet reports them.
func operatorContainerIDs(ctx context.Context) ([]string, error) {
	items, err := listOperatorPods(ctx)
	if err != nil {
		return nil, err
	}
	var ids []string
	for i := range items {
		p := &items[i]
		for _, cs := range append(append([]corev1.ContainerStatus{}, p.Status.InitContainerStatuses...), p.Status.ContainerStatuses...) {
			ids = append(ids, fmt.Sprintf("%s/%s (node %s, ready %t): %s", p.Name, cs.Name, p.Spec.NodeName, cs.Ready, cs.ContainerID))
		}
	}
	return ids, nil
}

// containerID is the runtime's ID of a pod's container, without the
// containerd:// prefix.
func containerID(ctx context.Context, pod, container string) (string, error) {
	p := &corev1.Pod{}
	if err := kc.Get(ctx, client.ObjectKey{Namespace: operatorNS, Name: pod}, p); err != nil {
		return "", err
	}
	for _, cs := range p.Status.ContainerStatuses {
		if cs.Name == container && cs.ContainerID != "" {
			_, id, ok := strings.Cut(cs.ContainerID, "://")
			if !ok {
				return "", fmt.Errorf("pod %s container %s: container ID %q", pod, container, cs.ContainerID)
			}
			return id, nil
		}
	}
	return "", fmt.Errorf("pod %s has no running container %s", pod, container)
}

// killContainer SIGKILLs a container of an operator pod through the
// runtime (ctr tasks kill), as a crash or an OOM kill would: the kubelet
// restarts it in the same pod.
func killContainer(pod, container string) error {
	id, err := containerID(context.Background(), pod, container)
	if err != nil {
		return err
	}
	if out, err := nodeScript("kill", id); err != nil {
		return fmt.Errorf("node.sh kill %s: %w: %s", id, err, out)
	}
	fmt.Printf("e2e: killed %s/%s through the CRI: containerd://%s\n", pod, container, id)
	return nil
}

// containerLog is what a container of an operator pod logged, as the
// kubelet keeps it (kubectl logs: API server -> kubelet).
func containerLog(pod, container string) (string, error) {
	cmd := exec.Command("kubectl", "--kubeconfig", filepath.Join(nodeWork(), "kubeconfig"), "logs", "-n", operatorNS, pod, "-c", container)
	out, err := cmd.Output()
	return string(out), err
}

// printNodeLogs, after a failure, prints the end of every operator
// container's log and where the node's own logs are.
func printNodeLogs(ctx context.Context, _ *envconf.Config) {
	pods, err := operatorPodList(ctx)
	if err != nil {
		fmt.Printf("e2e: operator pods: %v\n", err)
	}
	for _, p := range pods {
		out, err := containerLog(p.name, "manager")
		if err != nil {
			fmt.Printf("e2e: kubectl logs %s: %v\n", p.name, err)
			continue
		}
		lines := strings.Split(strings.TrimSpace(out), "\n")
		fmt.Printf("----- %s/manager (last %d of %d lines)\n", p.name, min(40, len(lines)), len(lines))
		fmt.Println(strings.Join(lines[max(0, len(lines)-40):], "\n"))
	}
	fmt.Printf("e2e: the node's logs: %s/{containerd,kubelet,kube-proxy}.log, the control plane's under %s/kwok\n", nodeWork(), nodeWork())
}

// indent prefixes every line of s for the suite's log.
func indent(s string) string {
	var b strings.Builder
	for line := range strings.Lines(s) {
		b.WriteString("    " + line)
	}
	return b.String()
}
