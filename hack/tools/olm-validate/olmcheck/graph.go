package olmcheck

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/blang/semver/v4"
	apimanifests "github.com/operator-framework/api/pkg/manifests"
)

// SkipRangeAnnotation is the CSV annotation OLM reads skipRange from.
const SkipRangeAnnotation = "olm.skipRange"

// Node is one ClusterServiceVersion of the upgrade graph.
type Node struct {
	Name      string
	Version   semver.Version
	Replaces  string
	SkipRange string
	// Dir is the bundle directory it was read from (the first one, when
	// bundle/ and a release directory hold the same CSV).
	Dir string
}

// Edge says that From upgrades an installed To, by Kind "replaces" or
// "skipRange '<range>'".
type Edge struct {
	From, To, Kind string
}

func (e Edge) String() string { return fmt.Sprintf("%s -%s-> %s", e.From, e.Kind, e.To) }

// Graph is the upgrade graph of a channel: what OLM builds from the
// bundles' replaces and skipRange.
type Graph struct {
	Nodes map[string]Node
	Edges []Edge
	Head  string
}

// NodeOf reads a loaded bundle's place in the graph.
func NodeOf(dir string, b *apimanifests.Bundle) Node {
	return Node{
		Name: b.CSV.GetName(), Version: b.CSV.Spec.Version.Version, Replaces: b.CSV.Spec.Replaces,
		SkipRange: b.CSV.GetAnnotations()[SkipRangeAnnotation], Dir: dir,
	}
}

// BuildGraph joins the nodes into a graph and checks it the way a catalog
// needs it: two bundles with one name agree, every replaces names a known
// CSV, every skipRange parses, there is exactly one head (a CSV nothing
// upgrades from), no cycle, and every CSV is reachable from the head, so
// that an install of any release upgrades to the head.
func BuildGraph(nodes []Node) (*Graph, error) {
	g := &Graph{Nodes: map[string]Node{}}
	var errs []error
	for _, n := range nodes {
		if prev, ok := g.Nodes[n.Name]; ok {
			if prev.Replaces != n.Replaces || prev.SkipRange != n.SkipRange || !prev.Version.EQ(n.Version) {
				errs = append(errs, fmt.Errorf("%s and %s both hold %s but differ in version, replaces or skipRange", prev.Dir, n.Dir, n.Name))
			}
			continue
		}
		g.Nodes[n.Name] = n
	}
	names := make([]string, 0, len(g.Nodes))
	for name := range g.Nodes {
		names = append(names, name)
	}
	slices.Sort(names)
	incoming := map[string]int{}
	for _, name := range names {
		n := g.Nodes[name]
		if n.Replaces != "" {
			if _, ok := g.Nodes[n.Replaces]; !ok {
				errs = append(errs, fmt.Errorf("%s replaces %s, which no bundle holds", n.Name, n.Replaces))
			} else {
				g.Edges = append(g.Edges, Edge{From: n.Name, To: n.Replaces, Kind: "replaces"})
				incoming[n.Replaces]++
			}
		}
		if n.SkipRange == "" {
			continue
		}
		r, err := semver.ParseRange(n.SkipRange)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: skipRange %q: %w", n.Name, n.SkipRange, err))
			continue
		}
		for _, other := range names {
			if other != n.Name && r(g.Nodes[other].Version) {
				g.Edges = append(g.Edges, Edge{From: n.Name, To: other, Kind: fmt.Sprintf("skipRange '%s'", n.SkipRange)})
				incoming[other]++
			}
		}
	}
	var heads []string
	for _, name := range names {
		if incoming[name] == 0 {
			heads = append(heads, name)
		}
	}
	switch {
	case len(heads) == 1:
		g.Head = heads[0]
	case len(heads) == 0:
		errs = append(errs, errors.New("no head: every CSV is upgraded from by another (a cycle)"))
	default:
		errs = append(errs, fmt.Errorf("%d heads %v: a catalog's channel has one", len(heads), heads))
	}
	if cycle := g.cycle(); cycle != nil {
		errs = append(errs, fmt.Errorf("cycle: %s", strings.Join(cycle, " -> ")))
	}
	if g.Head != "" {
		seen := g.reachable(g.Head)
		for _, name := range names {
			if !seen[name] {
				errs = append(errs, fmt.Errorf("%s is not reachable from the head %s: its installs would never upgrade", name, g.Head))
			}
		}
	}
	return g, errors.Join(errs...)
}

func (g *Graph) out(name string) []string {
	var to []string
	for _, e := range g.Edges {
		if e.From == name {
			to = append(to, e.To)
		}
	}
	return to
}

func (g *Graph) reachable(from string) map[string]bool {
	seen := map[string]bool{from: true}
	stack := []string{from}
	for len(stack) > 0 {
		n := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		for _, to := range g.out(n) {
			if !seen[to] {
				seen[to] = true
				stack = append(stack, to)
			}
		}
	}
	return seen
}

// cycle returns one cycle of the graph as the path that closes it, or nil.
func (g *Graph) cycle() []string {
	const (
		unseen = iota
		onPath
		done
	)
	state := map[string]int{}
	var path, found []string
	var visit func(string) bool
	visit = func(n string) bool {
		state[n] = onPath
		path = append(path, n)
		for _, to := range g.out(n) {
			switch state[to] {
			case onPath:
				found = append(slices.Clone(path[slices.Index(path, to):]), to)
				return true
			case unseen:
				if visit(to) {
					return true
				}
			}
		}
		path = path[:len(path)-1]
		state[n] = done
		return false
	}
	names := make([]string, 0, len(g.Nodes))
	for name := range g.Nodes {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, n := range names {
		if state[n] == unseen && visit(n) {
			return found
		}
	}
	return nil
}

// Lines prints the graph from the head, one edge a line, newest first.
func (g *Graph) Lines() []string {
	edges := slices.Clone(g.Edges)
	slices.SortFunc(edges, func(a, b Edge) int {
		if c := g.Nodes[b.From].Version.Compare(g.Nodes[a.From].Version); c != 0 {
			return c
		}
		return strings.Compare(a.Kind, b.Kind)
	})
	lines := []string{"head: " + g.Head}
	for _, e := range edges {
		lines = append(lines, e.String())
	}
	return lines
}
