// Command demo is make demo's pod runner: a long-running process that plays
// the kubelet for the operator's pods on the demo's kwok cluster (whose
// fake nodes run no containers), with test/podrunner, as the e2e suite
// does. It serves each pod at the pod IP kwok gave it (podrunner.Config
// PodIPs: the address on loopback in the network namespace, its container
// ports forwarded to the pod's host ports), so the API server, with
// aggregator routing, reaches the webhooks through the Service's endpoints
// as in production. hack/demo.sh starts it in the background inside the
// network namespace, as root (it adds the addresses); it runs until
// SIGTERM or SIGINT, then stops the containers with the pods' grace
// period, takes their addresses off loopback and exits.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/example/myoperator/test/podrunner"
)

func main() {
	kubeconfig := flag.String("kubeconfig", "", "Kubeconfig of the demo cluster.")
	namespace := flag.String("namespace", "myoperator-system", "Namespace of the operator's pods.")
	selector := flag.String("selector", "app.kubernetes.io/name=myoperator,control-plane=controller-manager", "Label selector of the operator's pods.")
	dir := flag.String("dir", "bin/demo", "Folder for the pid file, the pod state, the pods' volumes and the container logs (under pods/).")
	hostPortBase := flag.Int("host-port-base", 31000, "First host port for the pods' container ports (the e2e suite uses 30000).")
	prefix := flag.String("container-prefix", "demo-", "Name prefix of the podman containers the runner owns.")
	flag.Parse()
	log.SetFlags(log.Ldate | log.Ltime | log.Lmsgprefix)
	log.SetPrefix("demo pod runner: ")
	if err := run(*kubeconfig, *namespace, *selector, *dir, *hostPortBase, *prefix); err != nil {
		log.Print(err)
		os.Exit(1)
	}
}

func run(kubeconfig, namespace, selector, dir string, hostPortBase int, prefix string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	pidFile := filepath.Join(dir, "podrunner.pid")
	if err := claimPidFile(pidFile); err != nil {
		return err
	}
	defer os.Remove(pidFile)

	rc, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return fmt.Errorf("kubeconfig: %w", err)
	}
	cs, err := kubernetes.NewForConfig(rc)
	if err != nil {
		return err
	}
	runner, err := podrunner.New(podrunner.Config{
		Client: cs, Namespace: namespace, Selector: selector, APIServer: rc.Host,
		Dir: filepath.Join(dir, "pods"), ContainerPrefix: prefix, HostPortBase: hostPortBase, PodIPs: true, Logf: log.Printf,
	})
	if err != nil {
		return err
	}

	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	log.Printf("running the pods %s in namespace %s of %s, each at its pod IP on loopback (host ports from %d); container logs in %s", selector, namespace, rc.Host, hostPortBase, filepath.Join(dir, "pods"))
	done := make(chan struct{})
	go func() {
		defer close(done)
		runner.Run(ctx)
	}()
	state := filepath.Join(dir, "pods.txt")
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			log.Print("stopping: stopping the containers with the pods' grace period")
			<-done
			log.Print("stopped")
			return nil
		case <-tick.C:
			if err := writeState(state, runner.Pods()); err != nil {
				log.Printf("writing %s: %v", state, err)
			}
		}
	}
}

// claimPidFile writes this process's pid, unless a live process already
// holds the file: two runners would fight over the same containers.
func claimPidFile(path string) error {
	if data, err := os.ReadFile(path); err == nil {
		if pid, err := strconv.Atoi(strings.TrimSpace(string(data))); err == nil && pid != os.Getpid() && syscall.Kill(pid, 0) == nil {
			return fmt.Errorf("another pod runner runs already (pid %d, %s)", pid, path)
		}
	} else if !errors.Is(err, os.ErrNotExist) {
		return err
	}
	return os.WriteFile(path, []byte(strconv.Itoa(os.Getpid())+"\n"), 0o644)
}

// writeState replaces the state file with one line per pod, sorted:
// "<pod> ready=<true|false> restarts=<n>"; hack/demo.sh waits on it.
func writeState(path string, pods []podrunner.PodState) error {
	lines := make([]string, 0, len(pods))
	for _, p := range pods {
		lines = append(lines, fmt.Sprintf("%s ready=%t restarts=%d\n", p.Pod, p.Ready, p.Restarts))
	}
	slices.Sort(lines)
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, []byte(strings.Join(lines, "")), 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}
