package bench

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"time"
)

// profileCPU records CPU profiles of the API server (its /debug/pprof, on
// by default and open to the administrator) and of the manager for d,
// into dir, while the caller's phase runs. It is for finding what limits a
// missed target, so records made with it are not mixed with the others.
func profileCPU(ctx context.Context, cp *ControlPlane, m *Manager, dir string, d time.Duration) func() error {
	return profileCPUAs(ctx, cp, m, dir, "", d)
}

// profileCPUAs is profileCPU with prefix before the files' names.
func profileCPUAs(ctx context.Context, cp *ControlPlane, m *Manager, dir, prefix string, d time.Duration) func() error {
	return profileCPUOf(ctx, cp, map[string]*Manager{"manager": m}, dir, prefix, d)
}

// profileCPUOf records CPU profiles of the API server and of each of ms
// for d, into dir: prefix+"apiserver-cpu.pb.gz" and prefix+name+"-cpu.pb.gz"
// for each name of ms.
func profileCPUOf(ctx context.Context, cp *ControlPlane, ms map[string]*Manager, dir, prefix string, d time.Duration) func() error {
	var (
		wg   sync.WaitGroup
		mu   sync.Mutex
		errs []error
	)
	secs := strconv.Itoa(int(d.Seconds()))
	fetch := func(name string, get func() ([]byte, error)) {
		defer wg.Done()
		body, err := get()
		if err == nil {
			err = os.WriteFile(filepath.Join(dir, name), body, 0o644)
		}
		if err != nil {
			mu.Lock()
			errs = append(errs, fmt.Errorf("%s: %w", name, err))
			mu.Unlock()
		}
	}
	wg.Add(1 + len(ms))
	go fetch(prefix+"apiserver-cpu.pb.gz", func() ([]byte, error) {
		return cp.Clientset.RESTClient().Get().AbsPath("/debug/pprof/profile").Param("seconds", secs).DoRaw(ctx)
	})
	for name, m := range ms {
		go fetch(prefix+name+"-cpu.pb.gz", func() ([]byte, error) {
			// Not m.get: its client gives up after 30 s, and a
			// profile's answer comes after d.
			code, body, err := getWith(ctx, &http.Client{Timeout: d + 30*time.Second},
				"http://"+loopback(m.opts.PprofPort)+"/debug/pprof/profile?seconds="+secs)
			if err == nil && code != http.StatusOK {
				err = fmt.Errorf("HTTP %d", code)
			}
			return body, err
		})
	}
	return func() error {
		wg.Wait()
		if len(errs) > 0 {
			return errs[0]
		}
		return nil
	}
}
