# Benchmarks: included by the Makefile, which defines the versions, paths and
# shared variables these targets use (make help lists every target).

##@ Benchmarks

# Where make bench-full collects one JSON record per run and size; its table
# of medians goes into docs/BENCHMARKS.md.
BENCH_RESULTS ?= $(ROOT)/test/bench/results/full.jsonl
BENCH_FULL_RUNS ?= 3
# The sizes of make bench-full: 50,000 is the scale the targets are set for; 10,000 to
# 50,000 gives the heap per Drink; 5,000 and 1,000 compare with before.
BENCH_FULL_SIZES ?= 50000 10000 5000 1000
# Where make bench appends its record (commit, machine, command and every
# figure): make release asks for one made at its code (hack/releasegate).
# Empty records nothing.
BENCH_QUICK_RESULTS ?= $(ROOT)/test/bench/results/quick.jsonl
# Further flags for every bench run, for example BENCH_FLAGS="-reconciles 16,32".
BENCH_FLAGS ?=
# make bench-full measures the manager's default concurrency only: a sweep
# of K converges once more per K, 6 to 8 minutes each at 50,000.
BENCH_FULL_FLAGS ?= -reconciles 16
# make bench-full ends with make bench-shards (yes) or not (no).
BENCH_FULL_SHARDS ?= yes
# A lock file each benchmark run holds while it measures (for example
# bin/heavy.lock), so that nothing else sharing it loads the machine or the
# webhook port 9443 meanwhile; empty takes no lock. The runs are root's (a
# network namespace): keep the lock in a folder only you may write, never a
# fixed name in /tmp, where another user could plant it first.
BENCH_LOCK ?=
BENCH_LOCKED := $(if $(BENCH_LOCK),flock $(BENCH_LOCK))

.PHONY: bench
bench: k8s-binaries build ## Quick benchmark (N=1000, one run, about 4 min): API server write ceiling vs the operator, waste, memory, conversion, restart, handover, admission tail; its record is appended to BENCH_QUICK_RESULTS.
	go build -o $(BIN)/bench ./test/bench/cmd/bench
	$(BENCH_LOCKED) $(IN_NETNS) env GOPROXY=off $(BIN)/bench -n 1000 $(if $(BENCH_QUICK_RESULTS),-out $(BENCH_QUICK_RESULTS)) $(BENCH_FLAGS)

.PHONY: bench-full
bench-full: k8s-binaries build ## Full benchmark: BENCH_FULL_RUNS runs at N=BENCH_FULL_SIZES into BENCH_RESULTS, then the table of medians with min and max (about 34 min a run at the default sizes, so about 1 h 45 min), then make bench-shards (BENCH_FULL_SHARDS=no skips it).
	go build -o $(BIN)/bench ./test/bench/cmd/bench
	@mkdir -p $(dir $(BENCH_RESULTS)) && rm -f $(BENCH_RESULTS)
	for run in $$(seq $(BENCH_FULL_RUNS)); do for n in $(BENCH_FULL_SIZES); do \
		$(BENCH_LOCKED) $(IN_NETNS) env GOPROXY=off $(BIN)/bench -n $$n -step 5s $(BENCH_FULL_FLAGS) $(BENCH_FLAGS) -out $(BENCH_RESULTS) >/dev/null || exit 1; \
	done; done
	$(BIN)/bench -report $(BENCH_RESULTS)
	$(if $(filter yes,$(BENCH_FULL_SHARDS)),$(MAKE) bench-shards)

# make bench-config-outage: BENCH_OUTAGE_N Drinks converged, then OperatorConfig
# cluster deleted and recreated as the bootstrap does; every write the API
# server receives meanwhile, one JSON record (with machine, command and commit)
# appended to BENCH_OUTAGE_RESULTS. test/bench/results/config-outage.md reads it.
BENCH_OUTAGE_N ?= 50000
BENCH_OUTAGE_RESULTS ?= $(ROOT)/test/bench/results/config-outage.jsonl

.PHONY: bench-config-outage
bench-config-outage: k8s-binaries build ## OperatorConfig outage at N=BENCH_OUTAGE_N converged Drinks: every API write while cluster is deleted and recreated by the bootstrap, appended to BENCH_OUTAGE_RESULTS (about 25 min at 50,000).
	go build -o $(BIN)/bench ./test/bench/cmd/bench
	@mkdir -p $(dir $(BENCH_OUTAGE_RESULTS))
	$(BENCH_LOCKED) $(IN_NETNS) env GOPROXY=off $(BIN)/bench -outage -n $(BENCH_OUTAGE_N) -reconciles 16 $(BENCH_FLAGS) -out $(BENCH_OUTAGE_RESULTS)

# make bench-shards: for each N of BENCH_SHARDS_N, N Drinks created while
# 1, 2 and 4 replicas run (BENCH_SHARDS_REPLICAS; one runs as the default
# single leader, more with --shard-drinks and the fence on an API server with
# ShardedListAndWatch), and the largest count again without the feature
# gate; one JSON record per run (machine, command, commit) appended to
# BENCH_SHARDS_RESULTS. Then, at BENCH_SHARDS_FAULTS_N, a SIGKILL of one of 4
# replicas under probe Drinks and a scale 1 -> 4 -> 2 -> 1 under the creates,
# each replayed from the API server's audit log, into
# BENCH_SHARDS_FAULTS_RESULTS. Every replica runs with the memory limit
# BENCH_SHARDS_MEMORY_LIMIT (bytes; 2 GiB fits one leader with 200,000
# Drinks). docs/sharding.md reads both files.
BENCH_SHARDS_N ?= 50000,200000
BENCH_SHARDS_REPLICAS ?= 1,2,4
BENCH_SHARDS_RESULTS ?= $(ROOT)/test/bench/results/shards.jsonl
BENCH_SHARDS_FAULTS_N ?= 200000
BENCH_SHARDS_FAULTS_RESULTS ?= $(ROOT)/test/bench/results/shard-faults.jsonl
BENCH_SHARDS_MEMORY_LIMIT ?= 2147483648

.PHONY: bench-shards
bench-shards: k8s-binaries build ## Replicas that share the Drinks at N=BENCH_SHARDS_N (1, 2, 4 replicas, and without the feature gate: convergence, heap, Drink bytes read, writes after convergence), then a SIGKILL of 1 of 4 and a scale 1 -> 4 -> 2 -> 1 at BENCH_SHARDS_FAULTS_N (here: 34 min at 50,000, 2 h 2 min at 200,000, the kill 45 min; the scale 10 min at 50,000, 49 min at 200,000).
	go build -o $(BIN)/bench ./test/bench/cmd/bench
	hack/ensure-nat-tools.sh
	@mkdir -p $(dir $(BENCH_SHARDS_RESULTS)) $(dir $(BENCH_SHARDS_FAULTS_RESULTS))
	$(BENCH_LOCKED) $(IN_NETNS) env GOPROXY=off $(BIN)/bench -shards $(BENCH_SHARDS_REPLICAS) -shards-gate-off -n $(BENCH_SHARDS_N) -reconciles 16 -shard-memory-limit $(BENCH_SHARDS_MEMORY_LIMIT) $(BENCH_FLAGS) -out $(BENCH_SHARDS_RESULTS)
	$(BENCH_LOCKED) $(IN_NETNS) env GOPROXY=off $(BIN)/bench -shard-kill 4 -shard-scale 1,4,2,1 -n $(BENCH_SHARDS_FAULTS_N) -reconciles 16 -shard-memory-limit $(BENCH_SHARDS_MEMORY_LIMIT) $(BENCH_FLAGS) -out $(BENCH_SHARDS_FAULTS_RESULTS)
