// Command provenance writes the SLSA provenance of a release's files: an
// in-toto Statement (https://in-toto.io/Statement/v1) whose subjects are
// every file dist/SHA256SUMS lists and every image of dist/'s OCI archives
// by the digest of its index, and whose predicate
// (https://slsa.dev/provenance/v1) names the commit the files were built
// from, the builder, and the parameters of the build:
//
//	provenance -dist dist -commit SHA -version V -repo ghcr.io/example \
//	  -builder ID [-param key=value ...] -statement OUT -predicate OUT
//
// hack/sign.sh signs the statement for the files (cosign attest-blob
// --statement) and attaches the predicate to each image (cosign attest
// --type slsaprovenance1), whose subject cosign makes the image itself.
// The types and their validation are in-toto's own
// (github.com/in-toto/attestation), so that the statement is one any
// in-toto or SLSA verifier reads.
package main

import (
	"archive/tar"
	"bufio"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"runtime/debug"
	"sort"
	"strings"
	"time"

	provenancev1 "github.com/in-toto/attestation/go/predicates/provenance/v1"
	intotov1 "github.com/in-toto/attestation/go/v1"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/structpb"
	"google.golang.org/protobuf/types/known/timestamppb"
)

var commitRE = regexp.MustCompile(`^[0-9a-f]{40}$`)

// buildType names how the files were made: hack/dist.sh of the commit the
// statement names, whose externalParameters are the make variables below.
const buildType = "https://github.com/example/myoperator/hack/dist.sh@v1"

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "provenance:", err)
		os.Exit(1)
	}
}

type params map[string]string

func (p params) String() string { return fmt.Sprint(map[string]string(p)) }

func (p params) Set(s string) error {
	k, v, ok := strings.Cut(s, "=")
	if !ok || k == "" {
		return fmt.Errorf("%q is not key=value", s)
	}
	p[k] = v
	return nil
}

func run(args []string) error {
	fs := flag.NewFlagSet("provenance", flag.ContinueOnError)
	dist := fs.String("dist", "dist", "The release's folder: its SHA256SUMS and OCI archives.")
	commit := fs.String("commit", "", "The git commit the files were built from (40 hex digits).")
	version := fs.String("version", "", "The version the files were written as.")
	repo := fs.String("repo", "ghcr.io/example", "Where the images are: <repo>/<name>:<tag> for dist/<name>_<tag>.oci.tar.")
	builder := fs.String("builder", "", "The builder's id, a URI naming who ran the build and where.")
	started := fs.String("started", "", "When the build started (RFC 3339); now when empty.")
	statement := fs.String("statement", "", "Write the in-toto statement here.")
	predicate := fs.String("predicate", "", "Write the SLSA provenance predicate alone here (cosign attest --predicate).")
	external := params{}
	fs.Var(external, "param", "An external parameter of the build, key=value (repeated).")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if !commitRE.MatchString(*commit) || *version == "" || *builder == "" || *statement == "" || *predicate == "" {
		return errors.New("-commit (40 hex digits), -version, -builder, -statement and -predicate are required")
	}
	subjects, err := Subjects(*dist, *repo)
	if err != nil {
		return err
	}
	start := time.Now().UTC()
	if *started != "" {
		if start, err = time.Parse(time.RFC3339, *started); err != nil {
			return fmt.Errorf("-started: %w", err)
		}
	}
	external["version"] = *version
	pred, err := Predicate(*commit, *builder, external, start, time.Now().UTC())
	if err != nil {
		return err
	}
	st := &intotov1.Statement{
		Type:          intotov1.StatementTypeUri,
		Subject:       subjects,
		PredicateType: "https://slsa.dev/provenance/v1",
		Predicate:     pred,
	}
	if err := st.Validate(); err != nil {
		return fmt.Errorf("the statement is not valid in-toto: %w", err)
	}
	if err := write(*statement, st); err != nil {
		return err
	}
	return write(*predicate, pred)
}

// Subjects lists every file of dist's SHA256SUMS by its sha256, and each
// image of an OCI archive in dist by the digest of its index, named as
// the registry holds it.
func Subjects(dist, repo string) ([]*intotov1.ResourceDescriptor, error) {
	f, err := os.Open(filepath.Join(dist, "SHA256SUMS"))
	if err != nil {
		return nil, err
	}
	defer func() { _ = f.Close() }()
	var out []*intotov1.ResourceDescriptor
	lines := bufio.NewScanner(f)
	for lines.Scan() {
		sum, name, ok := strings.Cut(lines.Text(), "  ")
		if !ok || len(sum) != 64 {
			return nil, fmt.Errorf("SHA256SUMS: %q is not a sha256sum line", lines.Text())
		}
		out = append(out, &intotov1.ResourceDescriptor{Name: name, Digest: map[string]string{"sha256": sum}})
		if !strings.HasSuffix(name, ".oci.tar") {
			continue
		}
		image, digest, err := archiveImage(filepath.Join(dist, name), repo)
		if err != nil {
			return nil, err
		}
		out = append(out, &intotov1.ResourceDescriptor{Name: image, Digest: map[string]string{"sha256": strings.TrimPrefix(digest, "sha256:")}})
	}
	if err := lines.Err(); err != nil {
		return nil, err
	}
	if len(out) == 0 {
		return nil, errors.New("SHA256SUMS lists no file")
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

// archiveImage names the image of dist/<name>_<tag>.oci.tar as
// <repo>/<name>:<tag> (hack/tools/registry pushes it there) and reads the
// digest of its one index.
func archiveImage(path, repo string) (string, string, error) {
	base := strings.TrimSuffix(filepath.Base(path), ".oci.tar")
	i := strings.LastIndex(base, "_")
	name, tag := base[:max(i, 0)], base[i+1:]
	if i <= 0 || tag == "" {
		return "", "", fmt.Errorf("%s is not <name>_<tag>.oci.tar", path)
	}
	f, err := os.Open(path)
	if err != nil {
		return "", "", err
	}
	defer func() { _ = f.Close() }()
	r := tar.NewReader(f)
	for {
		h, err := r.Next()
		if err == io.EOF {
			return "", "", fmt.Errorf("%s holds no index.json", path)
		}
		if err != nil {
			return "", "", fmt.Errorf("%s: %w", path, err)
		}
		if h.Name != "index.json" {
			continue
		}
		var index struct {
			Manifests []struct {
				Digest string `json:"digest"`
			} `json:"manifests"`
		}
		if err := json.NewDecoder(io.LimitReader(r, 1<<20)).Decode(&index); err != nil {
			return "", "", fmt.Errorf("%s: index.json: %w", path, err)
		}
		if len(index.Manifests) != 1 || !strings.HasPrefix(index.Manifests[0].Digest, "sha256:") {
			return "", "", fmt.Errorf("%s: index.json names %d images, want one by sha256", path, len(index.Manifests))
		}
		return repo + "/" + name + ":" + tag, index.Manifests[0].Digest, nil
	}
}

// Predicate is the SLSA v1 provenance of a build of commit by builder.
func Predicate(commit, builder string, external map[string]string, started, finished time.Time) (*structpb.Struct, error) {
	ext := map[string]any{}
	for k, v := range external {
		ext[k] = v
	}
	extStruct, err := structpb.NewStruct(ext)
	if err != nil {
		return nil, err
	}
	versions := map[string]string{}
	if bi, ok := debug.ReadBuildInfo(); ok {
		versions["go"] = bi.GoVersion
	}
	p := &provenancev1.Provenance{
		BuildDefinition: &provenancev1.BuildDefinition{
			BuildType:          buildType,
			ExternalParameters: extStruct,
			ResolvedDependencies: []*intotov1.ResourceDescriptor{{
				Uri:    "git+https://github.com/example/myoperator",
				Digest: map[string]string{"gitCommit": commit},
			}},
		},
		RunDetails: &provenancev1.RunDetails{
			Builder: &provenancev1.Builder{Id: builder, Version: versions},
			Metadata: &provenancev1.BuildMetadata{
				InvocationId: fmt.Sprintf("%s/%d", builder, started.Unix()),
				StartedOn:    timestamppb.New(started),
				FinishedOn:   timestamppb.New(finished),
			},
		},
	}
	if err := p.Validate(); err != nil {
		return nil, fmt.Errorf("the provenance is not valid SLSA v1: %w", err)
	}
	b, err := protojson.Marshal(p)
	if err != nil {
		return nil, err
	}
	out := &structpb.Struct{}
	return out, protojson.Unmarshal(b, out)
}

func write(path string, m proto.Message) error {
	b, err := protojson.MarshalOptions{Multiline: true, Indent: "  "}.Marshal(m)
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(b, '\n'), 0o644)
}
