// Command pause is the sandbox ("infra") container of each pod on the
// project's real node: it holds the pod's namespaces and does nothing else.
// No image can be pulled where the project builds, so this replaces
// registry.k8s.io/pause with a static Go binary in a FROM scratch image.
//
// It sleeps until SIGTERM or SIGINT and exits 0, which is all the kubelet and
// containerd ask of a sandbox. As PID 1 of its PID namespace it would also
// have to reap orphans when pods share that namespace; Go's runtime does not,
// so it reaps them here on SIGCHLD.
package main

import (
	"os"
	"os/signal"
	"syscall"
)

func main() {
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT, syscall.SIGCHLD)
	for sig := range sigs {
		if sig != syscall.SIGCHLD {
			return
		}
		reap()
	}
}

// reap collects every exited child without blocking, so that zombies of a
// shared PID namespace do not pile up under the sandbox.
func reap() {
	for {
		var status syscall.WaitStatus
		pid, err := syscall.Wait4(-1, &status, syscall.WNOHANG, nil)
		if pid <= 0 || err != nil {
			return
		}
	}
}
