package main

import (
	"archive/tar"
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const (
	sumA  = "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
	sumB  = "bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb"
	index = "sha256:cccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccc"
)

// ociArchive writes an OCI archive whose index.json names the digests.
func ociArchive(t *testing.T, path string, digests ...string) {
	t.Helper()
	var manifests []map[string]string
	for _, d := range digests {
		manifests = append(manifests, map[string]string{"digest": d})
	}
	raw, err := json.Marshal(map[string]any{"schemaVersion": 2, "manifests": manifests})
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	w := tar.NewWriter(&b)
	if err := w.WriteHeader(&tar.Header{Name: "oci-layout", Mode: 0o644, Size: 2}); err != nil {
		t.Fatal(err)
	}
	_, _ = w.Write([]byte("{}"))
	if err := w.WriteHeader(&tar.Header{Name: "index.json", Mode: 0o644, Size: int64(len(raw))}); err != nil {
		t.Fatal(err)
	}
	_, _ = w.Write(raw)
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestSubjects(t *testing.T) {
	for _, tc := range []struct {
		name    string
		sums    string
		indexes []string // the digests the archive's index.json names
		want    []string // name@sha256 of each subject
		wantErr string
	}{
		{
			name: "files and the image of an archive, under the repository",
			sums: sumA + "  install.yaml\n" + sumB + "  myoperator_v1.2.3.oci.tar\n", indexes: []string{index},
			want: []string{"install.yaml@" + sumA, "myoperator_v1.2.3.oci.tar@" + sumB, "reg.example/team/myoperator:v1.2.3@" + strings.TrimPrefix(index, "sha256:")},
		},
		{
			name: "an archive of two images is refused", sums: sumB + "  myoperator_v1.2.3.oci.tar\n",
			indexes: []string{index, index}, wantErr: "names 2 images, want one",
		},
		{name: "a line that is no sha256sum's", sums: "abc  install.yaml\n", wantErr: "is not a sha256sum line"},
		{name: "no file", sums: "", wantErr: "lists no file"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dist := t.TempDir()
			if err := os.WriteFile(filepath.Join(dist, "SHA256SUMS"), []byte(tc.sums), 0o644); err != nil {
				t.Fatal(err)
			}
			if tc.indexes != nil {
				ociArchive(t, filepath.Join(dist, "myoperator_v1.2.3.oci.tar"), tc.indexes...)
			}
			got, err := Subjects(dist, "reg.example/team")
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("Subjects: %v, want an error with %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var names []string
			for _, s := range got {
				names = append(names, s.GetName()+"@"+s.GetDigest()["sha256"])
			}
			if strings.Join(names, " ") != strings.Join(tc.want, " ") {
				t.Errorf("subjects %v, want %v", names, tc.want)
			}
		})
	}
}

// TestStatement: the statement written names the commit, the builder and
// the parameters, and is valid in-toto (run validates it before writing).
func TestStatement(t *testing.T) {
	dist := t.TempDir()
	if err := os.WriteFile(filepath.Join(dist, "SHA256SUMS"), []byte(sumA+"  install.yaml\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	commit := strings.Repeat("1", 40)
	st, pred := filepath.Join(dist, "st.json"), filepath.Join(dist, "pred.json")
	err := run([]string{"-dist", dist, "-commit", commit, "-version", "v1.2.3", "-builder", "https://builder.example/ci",
		"-param", "platforms=linux/amd64", "-started", "2026-12-06T10:00:00Z", "-statement", st, "-predicate", pred})
	if err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(st)
	if err != nil {
		t.Fatal(err)
	}
	var got struct {
		Type          string `json:"_type"`
		PredicateType string `json:"predicateType"`
		Predicate     struct {
			BuildDefinition struct {
				ExternalParameters   map[string]string `json:"externalParameters"`
				ResolvedDependencies []struct {
					Digest map[string]string `json:"digest"`
				} `json:"resolvedDependencies"`
			} `json:"buildDefinition"`
			RunDetails struct {
				Builder  struct{ ID string } `json:"builder"`
				Metadata struct {
					StartedOn string `json:"startedOn"`
				} `json:"metadata"`
			} `json:"runDetails"`
		} `json:"predicate"`
	}
	if err := json.Unmarshal(raw, &got); err != nil {
		t.Fatal(err)
	}
	p := got.Predicate
	if got.Type != "https://in-toto.io/Statement/v1" || got.PredicateType != "https://slsa.dev/provenance/v1" ||
		len(p.BuildDefinition.ResolvedDependencies) != 1 || p.BuildDefinition.ResolvedDependencies[0].Digest["gitCommit"] != commit ||
		p.RunDetails.Builder.ID != "https://builder.example/ci" || p.RunDetails.Metadata.StartedOn != "2026-12-06T10:00:00Z" ||
		p.BuildDefinition.ExternalParameters["platforms"] != "linux/amd64" || p.BuildDefinition.ExternalParameters["version"] != "v1.2.3" {
		t.Errorf("statement:\n%s", raw)
	}
	if err := run([]string{"-dist", dist, "-commit", "abc", "-version", "v1", "-builder", "b", "-statement", st, "-predicate", pred}); err == nil {
		t.Error("a commit that is not 40 hex digits was taken")
	}
}
