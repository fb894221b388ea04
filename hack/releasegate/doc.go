// Command releasegate tells whether HEAD's code carries the evidence a
// release needs; make release runs it and refuses to cut a release when it
// exits non-zero. Each kind is a results file its own target writes, and
// each must have been recorded at a commit whose code is HEAD's:
//
//   - the version matrix: a make test-k8s-matrix run that passed every
//     version of KUBE_MATRIX_VERSIONS (test/k8s-matrix/results.jsonl);
//   - the reliability suites: a record of every test of RELIABILITY_TESTS
//     (make reliability, test/reliability/results/<test>.jsonl; a test
//     that fails records nothing);
//   - the mutation suite: a full make test-mutations run with its control
//     runs on, in which every patch of test/mutations was caught by the
//     failure it names (test/mutations/results.txt);
//   - the quick benchmark: a make bench run (test/bench/results/quick.jsonl).
//
// A commit's code is HEAD's when the two differ only in Markdown documents,
// in the results files above and what is drawn from them (docs/bench), and
// in the files make release itself writes (RELEASES.md, bundle/,
// bundle.Dockerfile, charts/, the image tag in
// config/manager/kustomization.yaml and the Makefile's IMG line). So the
// four can be recorded one after another, each committed with its results,
// the figures written into the docs, and a candidate and then its final
// release cut, with no second run; a change to anything else needs them all
// again.
//
// It prints a line for each kind and, when any is missing, every missing
// one with the command that records it, so that one reading says all that
// a release still needs.
package main
