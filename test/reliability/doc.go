// Package reliability keeps the fault suites' figures the way the benchmark
// keeps its own: each suite that backs a row of docs/RELIABILITY.md calls
// Save at its end, which, when RELIABILITY_RESULTS names a folder (make
// reliability sets it to this package's results folder), appends one JSON line
// with the commit, the machine, the command that reproduces the run and
// every figure. docs/RELIABILITY.md is rendered from those files and
// test/reliability/RELIABILITY.md.tmpl (hack/reliabilitydoc, run by make
// verify), so a figure
// in the document is one a run produced, dated with the commit it was
// measured at, and a figure edited by hand is regenerated away and fails
// make verify.
//
// Without RELIABILITY_RESULTS (make test, CI) Save writes nothing: the
// committed results change only when someone measures on purpose.
package reliability
