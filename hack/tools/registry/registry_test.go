package main

import (
	"archive/tar"
	"compress/gzip"
	"errors"
	"io"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/remote"
)

// TestPush: a dist/ with one image archive (a random two-platform index)
// and manifests that name it by digest under ghcr.io/example; after the
// push to a registry on loopback, the registry serves the index by that
// digest, every reference points at the registry, and SHA256SUMS holds.
func TestPush(t *testing.T) {
	srv := httptest.NewServer(registry.New())
	t.Cleanup(srv.Close)
	to := strings.TrimPrefix(srv.URL, "http://") + "/team"

	idx, err := random.Index(256, 1, 2)
	if err != nil {
		t.Fatal(err)
	}
	digest, err := idx.Digest()
	if err != nil {
		t.Fatal(err)
	}
	dist := t.TempDir()
	writeArchive(t, filepath.Join(dist, "myoperator_v9.9.9-rc.1.oci.tar"), func(dir string) {
		p, err := layout.Write(dir, empty.Index)
		if err != nil {
			t.Fatal(err)
		}
		if err := p.AppendIndex(idx); err != nil {
			t.Fatal(err)
		}
	})
	install := "image: ghcr.io/example/myoperator@" + digest.String() + "\nimage: ghcr.io/example/other:v1\n"
	for file, text := range map[string]string{
		"install.yaml": install,
		"images.txt":   "ghcr.io/example/myoperator@" + digest.String() + "\n",
		"SHA256SUMS":   "stale\n",
	} {
		if err := os.WriteFile(filepath.Join(dist, file), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}

	// A chart archive whose values name the image: rewritten inside.
	values := "image:\n  repository: ghcr.io/example/myoperator\n  digest: " + digest.String() + "\n"
	writeTarGz(t, filepath.Join(dist, "myoperator-9.9.9-rc.1.tgz"), map[string]string{"myoperator/values.yaml": values, "myoperator/Chart.yaml": "name: myoperator\n"})

	pushed, err := Push(dist, "ghcr.io/example", to, true)
	if err != nil {
		t.Fatal(err)
	}
	chart := readTarGz(t, filepath.Join(dist, "myoperator-9.9.9-rc.1.tgz"))
	if want := strings.ReplaceAll(values, "ghcr.io/example", to); chart["myoperator/values.yaml"] != want || chart["myoperator/Chart.yaml"] != "name: myoperator\n" {
		t.Errorf("the chart after the push: %q, want values.yaml %q and Chart.yaml unchanged", chart, want)
	}
	want := to + "/myoperator:v9.9.9-rc.1@" + digest.String()
	if len(pushed) != 1 || pushed[0].Reference != want {
		t.Fatalf("pushed %+v, want %s", pushed, want)
	}
	ref, err := name.NewDigest(to+"/myoperator@"+digest.String(), name.Insecure)
	if err != nil {
		t.Fatal(err)
	}
	got, err := remote.Index(ref)
	if err != nil {
		t.Fatal(err)
	}
	if d, _ := got.Digest(); d != digest {
		t.Errorf("the registry serves %s, want %s", d, digest)
	}
	raw, err := os.ReadFile(filepath.Join(dist, "install.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if wantInstall := "image: " + to + "/myoperator@" + digest.String() + "\nimage: ghcr.io/example/other:v1\n"; string(raw) != wantInstall {
		t.Errorf("install.yaml after the push:\n%s\nwant:\n%s", raw, wantInstall)
	}
	cmd := exec.Command("sha256sum", "-c", "SHA256SUMS")
	cmd.Dir = dist
	if out, err := cmd.CombinedOutput(); err != nil || strings.Count(string(out), ": OK") != 4 {
		t.Errorf("sha256sum -c: %v\n%s", err, out)
	}
}

// TestPushRefusesAnotherDigest: manifests that name another digest than
// the archive's are not pointed at the registry.
func TestPushRefusesAnotherDigest(t *testing.T) {
	srv := httptest.NewServer(registry.New())
	t.Cleanup(srv.Close)
	idx, err := random.Index(64, 1, 1)
	if err != nil {
		t.Fatal(err)
	}
	dist := t.TempDir()
	writeArchive(t, filepath.Join(dist, "myoperator_v1.0.0.oci.tar"), func(dir string) {
		p, err := layout.Write(dir, empty.Index)
		if err != nil {
			t.Fatal(err)
		}
		if err := p.AppendIndex(idx); err != nil {
			t.Fatal(err)
		}
	})
	other := "sha256:" + strings.Repeat("0", 64)
	if err := os.WriteFile(filepath.Join(dist, "install.yaml"), []byte("image: ghcr.io/example/myoperator@"+other+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Push(dist, "ghcr.io/example", strings.TrimPrefix(srv.URL, "http://"), true); err == nil || !strings.Contains(err.Error(), "another digest") {
		t.Errorf("Push = %v, want a refusal naming another digest", err)
	}
}

func TestSplitArchive(t *testing.T) {
	for _, tc := range []struct {
		file, name, tag string
		ok              bool
	}{
		{"myoperator_v0.3.0.oci.tar", "myoperator", "v0.3.0", true},
		{"myoperator-guestbook_v1.0.0.oci.tar", "myoperator-guestbook", "v1.0.0", true},
		{"install.yaml", "", "", false},
		{"_v1.oci.tar", "", "", false},
	} {
		n, tag, ok := splitArchive(tc.file)
		if n != tc.name || tag != tc.tag || ok != tc.ok {
			t.Errorf("splitArchive(%q) = %q, %q, %v", tc.file, n, tag, ok)
		}
	}
}

// writeArchive fills an OCI layout with fill and tars it into path, as
// podman's oci-archive transport does.
func writeArchive(t *testing.T, path string, fill func(dir string)) {
	t.Helper()
	dir := t.TempDir()
	fill(dir)
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = f.Close() }()
	tw := tar.NewWriter(f)
	if err := tw.AddFS(os.DirFS(dir)); err != nil {
		t.Fatal(err)
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
}

func writeTarGz(t *testing.T, path string, files map[string]string) {
	t.Helper()
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	zw := gzip.NewWriter(f)
	tw := tar.NewWriter(zw)
	for name, text := range files {
		if err := tw.WriteHeader(&tar.Header{Name: name, Mode: 0o644, Size: int64(len(text)), Typeflag: tar.TypeReg}); err != nil {
			t.Fatal(err)
		}
		if _, err := tw.Write([]byte(text)); err != nil {
			t.Fatal(err)
		}
	}
	for _, c := range []io.Closer{tw, zw, f} {
		if err := c.Close(); err != nil {
			t.Fatal(err)
		}
	}
}

func readTarGz(t *testing.T, path string) map[string]string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = f.Close() }()
	zr, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	files := map[string]string{}
	tr := tar.NewReader(zr)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return files
		}
		if err != nil {
			t.Fatal(err)
		}
		b, err := io.ReadAll(tr)
		if err != nil {
			t.Fatal(err)
		}
		files[h.Name] = string(b)
	}
}
