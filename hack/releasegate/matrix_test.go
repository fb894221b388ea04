package main

import (
	"errors"
	"strings"
	"testing"
)

// TestCovering: which recorded run, if any, lets make release cut HEAD.
func TestCovering(t *testing.T) {
	all := []string{"v1.33.13", "v1.37.2"}
	passed := func(commit string) Run {
		return Run{Commit: commit, Versions: []Version{{Kubernetes: "v1.33.13", Result: "passed"}, {Kubernetes: "v1.37.2", Result: "passed"}}}
	}
	failedOld := Run{Commit: "c3", Versions: []Version{{Kubernetes: "v1.33.13", Result: "failed"}, {Kubernetes: "v1.37.2", Result: "passed"}}}
	type diff struct {
		paths, makefile []string
		err             error
	}
	for _, tc := range []struct {
		name    string
		runs    []Run
		diffs   map[string]diff // by commit; HEAD's own commit has none
		want    string          // the covering run's commit, or ""
		wantWhy string
	}{
		{name: "no run recorded", wantWhy: "none is recorded"},
		{name: "a run at HEAD", runs: []Run{passed("head")}, want: "head"},
		{name: "a failed version", runs: []Run{failedOld}, wantWhy: "did not pass v1.33.13"},
		{name: "a version not run", runs: []Run{{Commit: "c4", Versions: []Version{{Kubernetes: "v1.37.2", Result: "passed"}}}}, wantWhy: "did not pass v1.33.13"},
		{name: "the newest passing run is the one read", runs: []Run{passed("c1"), failedOld}, diffs: map[string]diff{"c1": {}}, want: "c1"},
		{
			name: "only docs and what make release writes changed since",
			runs: []Run{passed("c1")},
			diffs: map[string]diff{"c1": {
				paths: []string{"CONTRIBUTING.md", "docs/install.md", "RELEASES.md", "bundle/manifests/myoperator.clusterserviceversion.yaml", "bundle.Dockerfile", "charts/myoperator/Chart.yaml", "test/k8s-matrix/results.jsonl",
					"test/reliability/results/TestModel.jsonl", "test/mutations/results.txt", "test/bench/results/quick.jsonl", "docs/bench/heap.svg"},
				makefile: []string{"-IMG ?= $(IMAGE_REPO):v0.2.0", "+IMG ?= $(IMAGE_REPO):v0.3.0"},
			}},
			want: "c1",
		},
		{name: "code changed since", runs: []Run{passed("c1")}, diffs: map[string]diff{"c1": {paths: []string{"reconcile/drink.go", "README.md"}}}, wantWhy: "code changed since: reconcile/drink.go"},
		{name: "a mutation patch is code", runs: []Run{passed("c1")}, diffs: map[string]diff{"c1": {paths: []string{"test/mutations/fence-admits-non-holders.patch"}}}, wantWhy: "changed since: test/mutations/fence-admits-non-holders.patch"},
		{name: "what records the results is code", runs: []Run{passed("c1")}, diffs: map[string]diff{"c1": {paths: []string{"test/reliability/record.go", "test/bench/results.go"}}}, wantWhy: "changed since: test/reliability/record.go, test/bench/results.go"},
		{name: "a Makefile line other than IMG", runs: []Run{passed("c1")}, diffs: map[string]diff{"c1": {makefile: []string{"+KUBE_MATRIX_VERSIONS ?= v1.37.2"}}}, wantWhy: "Makefile (+KUBE_MATRIX_VERSIONS"},
		{name: "a kustomization line other than the tag", runs: []Run{passed("c1")}, diffs: map[string]diff{"c1": {paths: []string{"config/manager/kustomization.yaml (+  newName: evil)"}}}, wantWhy: "kustomization.yaml (+  newName: evil)"},
		{name: "a commit this repository lacks", runs: []Run{passed("gone")}, diffs: map[string]diff{"gone": {err: errors.New("commit not in this repository")}}, wantWhy: "commit not in this repository"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			changed := func(commit string) ([]string, []string, error) {
				if commit == "head" {
					return nil, nil, nil
				}
				d, ok := tc.diffs[commit]
				if !ok {
					t.Fatalf("asked for the diff from %s, which the case does not expect", commit)
				}
				return d.paths, d.makefile, d.err
			}
			run, why := Covering(tc.runs, all, changed)
			got := ""
			if run != nil {
				got = run.Commit
			}
			if got != tc.want || !strings.Contains(why, tc.wantWhy) {
				t.Errorf("Covering = %q, %q; want %q and a reason containing %q", got, why, tc.want, tc.wantWhy)
			}
		})
	}
}
