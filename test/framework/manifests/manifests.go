package manifests

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"path/filepath"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"

	"github.com/example/myoperator/test/framework/testutil"
)

// Render renders a kustomization under config/ into objects, in order.
func Render(dir string) ([]*unstructured.Unstructured, error) {
	docs, err := Kustomize(dir)
	if err != nil {
		return nil, err
	}
	return decode(dir, docs)
}

// decode parses rendered documents into objects, in order.
func decode(dir string, docs [][]byte) ([]*unstructured.Unstructured, error) {
	objs := make([]*unstructured.Unstructured, 0, len(docs))
	for _, doc := range docs {
		u := &unstructured.Unstructured{}
		if err := yaml.Unmarshal(doc, &u.Object); err != nil {
			return nil, fmt.Errorf("%s: %w", dir, err)
		}
		objs = append(objs, u)
	}
	return objs, nil
}

// OfKind returns the objects of one kind.
func OfKind(objs []*unstructured.Unstructured, kind string) []*unstructured.Unstructured {
	var out []*unstructured.Unstructured
	for _, o := range objs {
		if o.GetKind() == kind {
			out = append(out, o)
		}
	}
	return out
}

// Kustomize renders a kustomization under config/ (for example "config/crd")
// with kubectl's built-in kustomize and returns its documents.
func Kustomize(dir string) ([][]byte, error) {
	root, err := testutil.FindRepoRoot()
	if err != nil {
		return nil, err
	}
	return kustomize(filepath.Join(root, dir), dir)
}

// kustomize renders the kustomization in path; name is how errors call it.
func kustomize(path, name string) ([][]byte, error) {
	var stdout, stderr bytes.Buffer
	cmd := exec.Command("kubectl", "kustomize", path)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("kubectl kustomize %s: %w: %s", name, err, stderr.String())
	}
	return SplitYAML(stdout.Bytes())
}

// SplitYAML splits a multi-document YAML stream into its documents.
func SplitYAML(data []byte) ([][]byte, error) {
	r := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
	var docs [][]byte
	for {
		doc, err := r.Read()
		if errors.Is(err, io.EOF) {
			return docs, nil
		}
		if err != nil {
			return nil, err
		}
		if len(bytes.TrimSpace(doc)) > 0 && !bytes.Equal(bytes.TrimSpace(doc), []byte("---")) {
			docs = append(docs, doc)
		}
	}
}
