// Command benchdoc renders docs/BENCHMARKS.md from
// test/bench/BENCHMARKS.md.tmpl and the results files of
// test/bench/results, and draws the plots it shows into docs/bench, as
// hack/reliabilitydoc renders docs/RELIABILITY.md: every figure of the
// document, and its date, commit, command and machine where the record
// holds them, is read from the newest run of its kind (package benchfig
// says which), so the document cannot quote a run nobody saved or keep a
// figure its records no longer give. make bench-doc runs it, and make
// verify runs it again and fails when the document or a plot changed: a
// hand edit does not survive.
//
// Each figure is written with a <!-- fig bench:name --> marker, the form
// hand-written documents use to quote the same records
// (hack/reliabilitydoc/figures.go), so make verify's figure check reads
// this document too and names the figure that differs.
//
// A template that names a record that is not there fails the rendering
// and names it. The plots are SVG without a date or embedded fonts, the
// same bytes for the same records.
package main
