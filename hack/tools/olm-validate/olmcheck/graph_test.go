package olmcheck_test

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/blang/semver/v4"

	"github.com/example/myoperator/hack/tools/olm-validate/olmcheck"
)

// TestUpgradeGraph reads the CSV of bundle/ and of every released bundle
// under bundle/releases, builds the graph their replaces and skipRange
// form, and asserts one head, no cycle and every release reachable from
// the head. It prints the graph (go test -v).
func TestUpgradeGraph(t *testing.T) {
	root := repoRoot(t)
	releases, err := filepath.Glob(filepath.Join(root, "bundle", "releases", "v*"))
	if err != nil {
		t.Fatal(err)
	}
	if len(releases) == 0 {
		t.Fatal("no released bundle under bundle/releases")
	}
	var nodes []olmcheck.Node
	for _, dir := range append([]string{filepath.Join(root, "bundle")}, releases...) {
		b, err := olmcheck.Load(dir)
		if err != nil {
			t.Fatal(err)
		}
		nodes = append(nodes, olmcheck.NodeOf(dir, b))
	}
	g, err := olmcheck.BuildGraph(nodes)
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range g.Lines() {
		t.Log(line)
	}
	// The head is bundle/'s CSV: the current tree upgrades every release.
	if g.Head != nodes[0].Name {
		t.Errorf("head %s, want bundle/'s %s", g.Head, nodes[0].Name)
	}
	for _, n := range nodes[1:] {
		if _, ok := g.Nodes[n.Name]; !ok {
			t.Errorf("release %s missing from the graph", n.Name)
		}
	}
}

func node(name, version, replaces, skipRange string) olmcheck.Node {
	return olmcheck.Node{Name: name, Version: semver.MustParse(version), Replaces: replaces, SkipRange: skipRange, Dir: name}
}

// TestBuildGraph: the checks of BuildGraph on graphs a wrong generator or
// a hand edit could produce.
func TestBuildGraph(t *testing.T) {
	v1 := node("op.v0.1.0", "0.1.0", "", "")
	cases := []struct {
		name    string
		nodes   []olmcheck.Node
		head    string
		edges   []string
		wantErr string
	}{
		{
			name:  "one release",
			nodes: []olmcheck.Node{v1},
			head:  "op.v0.1.0",
		},
		{
			name:  "replaces chain with skipRange",
			nodes: []olmcheck.Node{v1, node("op.v0.2.0", "0.2.0", "op.v0.1.0", ">=0.1.0 <0.2.0"), node("op.v0.3.0", "0.3.0", "op.v0.2.0", ">=0.2.0 <0.3.0")},
			head:  "op.v0.3.0",
			edges: []string{
				"op.v0.3.0 -replaces-> op.v0.2.0", "op.v0.3.0 -skipRange '>=0.2.0 <0.3.0'-> op.v0.2.0",
				"op.v0.2.0 -replaces-> op.v0.1.0", "op.v0.2.0 -skipRange '>=0.1.0 <0.2.0'-> op.v0.1.0",
			},
		},
		{
			name:  "a patch release reached by skipRange only",
			nodes: []olmcheck.Node{v1, node("op.v0.1.1", "0.1.1", "op.v0.1.0", ""), node("op.v0.2.0", "0.2.0", "op.v0.1.0", ">=0.1.0 <0.2.0")},
			head:  "op.v0.2.0",
			edges: []string{"op.v0.2.0 -skipRange '>=0.1.0 <0.2.0'-> op.v0.1.1"},
		},
		{
			name:    "two heads",
			nodes:   []olmcheck.Node{v1, node("op.v0.2.0", "0.2.0", "", "")},
			wantErr: "2 heads",
		},
		{
			name:    "a cycle",
			nodes:   []olmcheck.Node{node("op.v0.1.0", "0.1.0", "op.v0.2.0", ""), node("op.v0.2.0", "0.2.0", "op.v0.1.0", ""), node("op.v0.3.0", "0.3.0", "op.v0.2.0", "")},
			wantErr: "cycle: op.v0.1.0 -> op.v0.2.0 -> op.v0.1.0",
		},
		{
			name:    "replaces an unknown CSV",
			nodes:   []olmcheck.Node{v1, node("op.v0.2.0", "0.2.0", "op.v0.1.5", "")},
			wantErr: "op.v0.2.0 replaces op.v0.1.5, which no bundle holds",
		},
		{
			name:    "a bad skipRange",
			nodes:   []olmcheck.Node{v1, node("op.v0.2.0", "0.2.0", "op.v0.1.0", ">=zero")},
			wantErr: `skipRange ">=zero"`,
		},
		{
			name:    "bundle/ disagrees with its release",
			nodes:   []olmcheck.Node{node("op.v0.2.0", "0.2.0", "op.v0.1.0", ""), v1, node("op.v0.2.0", "0.2.0", "", "")},
			wantErr: "both hold op.v0.2.0",
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g, err := olmcheck.BuildGraph(tc.nodes)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error %v, want one containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if g.Head != tc.head {
				t.Errorf("head %s, want %s", g.Head, tc.head)
			}
			lines := strings.Join(g.Lines(), "\n")
			for _, e := range tc.edges {
				if !strings.Contains(lines, e) {
					t.Errorf("no edge %q in\n%s", e, lines)
				}
			}
		})
	}
}
