// Package benchfig names the figures of test/bench's results files, so
// that the document rendered from them (hack/benchdoc) and the figures
// hand-written documents quote (hack/reliabilitydoc -figures) are read by
// the same code, from the same records, the way bin/bench -report reads
// them (test/bench/records.go): a figure is computed once, not once per
// document.
//
// A figure's name is kind.selector.field, with an optional .stat:
//
//	run.n50000.heapMiB         median over the newest runs at N = 50,000 (make bench-full)
//	run.n50000.tailAddMs.max   the largest of those runs' values
//	run.n10000to50000.heapSlopeKiB
//	shards.n200000r4.heapMiB.max   newest -shards run: 200,000 Drinks, 4 replicas, the busiest
//	shards.n50000r4-gateoff.readMiB.min
//	kill.n200000.keptP99S      newest -shard-kill run at 200,000
//	rescale.n50000.rebalance1S newest -shard-scale run at 50,000
//	outage.n50000.unpaginatedPeakMiB newest -outage run at 50,000
//	outage.n50000@3b60724.writes  newest -outage run at 50,000 of that commit
//	growth.n50000to200000.heapKiB  from bench-full's runs at 50,000 to -shards' one replica at 200,000
//
// "Newest" is chosen per kind and selector: for run, every record at N in
// the results file whose record at N is the latest of all files (a set of
// runs is made by one invocation into one file); for the others, the
// latest record that matches. Fields are the names in the tables of
// figures.go.
package benchfig
