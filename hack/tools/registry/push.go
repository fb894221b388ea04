package main

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/remote"
)

// Pushed is one image now in the registry.
type Pushed struct {
	Name, Tag string
	Digest    v1.Hash
	// Reference is REGISTRY/PATH/<name>:<tag>@<digest>.
	Reference string
}

// rewritten are the files of DIST that name images.
var rewritten = []string{"install.yaml", "install-certmanager.yaml", "images.txt"}

// Push sends every image archive of dist to the registry to, then points
// dist's manifests at it.
func Push(dist, from, to string, insecure bool) ([]Pushed, error) {
	entries, err := os.ReadDir(dist)
	if err != nil {
		return nil, err
	}
	var opts []name.Option
	if insecure {
		opts = append(opts, name.Insecure)
	}
	var pushed []Pushed
	for _, e := range entries {
		imgName, tag, ok := splitArchive(e.Name())
		if !ok {
			continue
		}
		p, err := pushArchive(filepath.Join(dist, e.Name()), imgName, tag, to, opts)
		if err != nil {
			return pushed, fmt.Errorf("%s: %w", e.Name(), err)
		}
		pushed = append(pushed, p)
	}
	if len(pushed) == 0 {
		return nil, fmt.Errorf("no image archive (<name>_<tag>.oci.tar) in %s: make dist with images writes them", dist)
	}
	if err := rewrite(dist, from, to, pushed); err != nil {
		return pushed, err
	}
	return pushed, writeSums(dist)
}

// pushArchive pushes the one image index an OCI archive holds, unchanged.
func pushArchive(archive, imgName, tag, to string, opts []name.Option) (Pushed, error) {
	dir, err := os.MkdirTemp("", "oci-layout-")
	if err != nil {
		return Pushed{}, err
	}
	defer func() { _ = os.RemoveAll(dir) }()
	if err := untar(archive, dir); err != nil {
		return Pushed{}, err
	}
	top, err := layout.ImageIndexFromPath(dir)
	if err != nil {
		return Pushed{}, err
	}
	m, err := top.IndexManifest()
	if err != nil {
		return Pushed{}, err
	}
	if len(m.Manifests) != 1 {
		return Pushed{}, fmt.Errorf("the archive holds %d manifests, want one image index", len(m.Manifests))
	}
	want := m.Manifests[0].Digest
	idx, err := top.ImageIndex(want)
	if err != nil {
		return Pushed{}, fmt.Errorf("reading the image index %s: %w", want, err)
	}
	ref, err := name.NewTag(to+"/"+imgName+":"+tag, opts...)
	if err != nil {
		return Pushed{}, err
	}
	if err := remote.WriteIndex(ref, idx, remote.WithAuthFromKeychain(authn.DefaultKeychain)); err != nil {
		return Pushed{}, fmt.Errorf("pushing to %s: %w", ref, err)
	}
	// The registry must serve the index by the digest the manifests name.
	byDigest, err := name.NewDigest(ref.Context().String()+"@"+want.String(), opts...)
	if err != nil {
		return Pushed{}, err
	}
	desc, err := remote.Head(byDigest, remote.WithAuthFromKeychain(authn.DefaultKeychain))
	if err != nil {
		return Pushed{}, fmt.Errorf("%s after the push: %w", byDigest, err)
	}
	if desc.Digest != want {
		return Pushed{}, fmt.Errorf("%s serves %s, want %s", byDigest, desc.Digest, want)
	}
	return Pushed{Name: imgName, Tag: tag, Digest: want, Reference: ref.String() + "@" + want.String()}, nil
}

// rewrite points every reference to an image of pushed under from at the
// registry, in the manifests and in the files of the chart and bundle
// archives (.tgz, .tar.gz); a reference by digest must name the pushed
// digest.
func rewrite(dist, from, to string, pushed []Pushed) error {
	replace := func(file, text string) (string, error) {
		for _, p := range pushed {
			old, now := from+"/"+p.Name, to+"/"+p.Name
			// By tag, by digest, or bare at the end of a line (a
			// chart's image.repository).
			for _, suffix := range []string{"@", ":", "\n"} {
				text = strings.ReplaceAll(text, old+suffix, now+suffix)
			}
			if strings.Contains(text, now+"@") && !strings.Contains(text, "@"+p.Digest.String()) {
				return "", fmt.Errorf("%s names %s by another digest than the pushed %s", file, now, p.Digest)
			}
		}
		return text, nil
	}
	for _, file := range rewritten {
		path := filepath.Join(dist, file)
		raw, err := os.ReadFile(path)
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err != nil {
			return err
		}
		text, err := replace(file, string(raw))
		if err != nil {
			return err
		}
		if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
			return err
		}
	}
	archives, err := filepath.Glob(filepath.Join(dist, "*.tgz"))
	if err != nil {
		return err
	}
	more, err := filepath.Glob(filepath.Join(dist, "*.tar.gz"))
	if err != nil {
		return err
	}
	for _, a := range append(archives, more...) {
		if err := rewriteArchive(a, replace); err != nil {
			return fmt.Errorf("%s: %w", filepath.Base(a), err)
		}
	}
	return nil
}

// rewriteArchive applies replace to every regular file of a gzipped tar,
// keeping the entries' order, names and modes.
func rewriteArchive(path string, replace func(file, text string) (string, error)) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer func() { _ = f.Close() }()
	zr, err := gzip.NewReader(f)
	if err != nil {
		return err
	}
	var out bytes.Buffer
	zw := gzip.NewWriter(&out)
	tw := tar.NewWriter(zw)
	tr := tar.NewReader(zr)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return err
		}
		var body []byte
		if h.Typeflag == tar.TypeReg {
			raw, err := io.ReadAll(tr)
			if err != nil {
				return err
			}
			text, err := replace(h.Name, string(raw))
			if err != nil {
				return err
			}
			body = []byte(text)
			h.Size = int64(len(body))
		}
		if err := tw.WriteHeader(h); err != nil {
			return err
		}
		if _, err := tw.Write(body); err != nil {
			return err
		}
	}
	if err := tw.Close(); err != nil {
		return err
	}
	if err := zw.Close(); err != nil {
		return err
	}
	return os.WriteFile(path, out.Bytes(), 0o644)
}

// writeSums writes SHA256SUMS for every other file of dist, as make dist
// does: all but signatures/, which holds what proves them (hack/sign.sh
// signs them again after the push).
func writeSums(dist string) error {
	var files []string
	err := filepath.WalkDir(dist, func(path string, d os.DirEntry, err error) error {
		if err == nil && d.IsDir() && path == filepath.Join(dist, "signatures") {
			return filepath.SkipDir
		}
		if err == nil && !d.IsDir() && d.Name() != "SHA256SUMS" {
			rel, _ := filepath.Rel(dist, path)
			files = append(files, rel)
		}
		return err
	})
	if err != nil {
		return err
	}
	slices.Sort(files)
	var b strings.Builder
	for _, f := range files {
		sum, err := fileSum(filepath.Join(dist, f))
		if err != nil {
			return err
		}
		fmt.Fprintf(&b, "%s  %s\n", sum, f)
	}
	return os.WriteFile(filepath.Join(dist, "SHA256SUMS"), []byte(b.String()), 0o644)
}

func fileSum(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer func() { _ = f.Close() }()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// untar unpacks an OCI archive (a tar of an OCI layout) into dir, refusing
// entries that would leave it.
func untar(archive, dir string) error {
	f, err := os.Open(archive)
	if err != nil {
		return err
	}
	defer func() { _ = f.Close() }()
	tr := tar.NewReader(f)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		target := filepath.Join(dir, h.Name)
		if !strings.HasPrefix(target, filepath.Clean(dir)+string(filepath.Separator)) {
			return fmt.Errorf("entry %q leaves the archive", h.Name)
		}
		switch h.Typeflag {
		case tar.TypeDir:
			if err := os.MkdirAll(target, 0o755); err != nil {
				return err
			}
		case tar.TypeReg:
			if err := os.MkdirAll(filepath.Dir(target), 0o755); err != nil {
				return err
			}
			out, err := os.Create(target)
			if err != nil {
				return err
			}
			_, err = io.Copy(out, tr)
			if cerr := out.Close(); err == nil {
				err = cerr
			}
			if err != nil {
				return err
			}
		}
	}
}
