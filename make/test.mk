# Test: included by the Makefile, which defines the versions, paths and
# shared variables these targets use (make help lists every target).

##@ Test

# TEST_PACKAGES: how many test packages run at once. Most of a package's
# time is waiting on its API server, Leases and managers: on 2 cores, go
# test's default (one per core) left the CPU 56% idle and took 781 s; three
# took 538 s at 27% idle, the longest package (internal/app) 516 s both
# times and the others at most 12 s slower.
TEST_PACKAGES ?= 3
# TEST_TIMEOUT: go test's limit per package binary. internal/app, the
# longest, took 674 s alone (532 CPU seconds, 5 Dec 2026) and ran past 20 min
# beside make ci's other suites on 2 cores: a hang still ends the run.
TEST_TIMEOUT ?= 40m

.PHONY: test
test: k8s-binaries $(PROMTOOL) $(CYCLONEDX_GOMOD) $(HELM) $(KREW) $(COSIGN) manifests generate vet ## Run unit and envtest suites against the project-built kube-apiserver; promtool checks and unit-tests the alerts; helm lints and renders the chart.
	@# The modules are downloaded here, outside the namespace (its go has
	@# GOPROXY=off); go test compiles and links each test binary in it,
	@# once: compiling them first outside as well linked every binary twice,
	@# about 125 CPU seconds (5 Dec 2026).
	go mod download
	hack/ensure-nat-tools.sh
	@# test/alerts fails, rather than skips, when PROMTOOL is set and does not run.
	@mkdir -p bin
	@# The manager the tests run as a process, linked once for all of them
	@# (test/framework/testenv/manager.go), from the packages go test
	@# compiles anyway: the same flags, so no package is compiled twice.
	go build -o bin/test-manager .
	@# The whole output goes to bin/test.log as well; on a failure, what
	@# failed is printed again at the end (CI shows only the end).
	$(IN_NETNS) env GOPROXY=off GOFLAGS="$$GOFLAGS -mod=readonly" PROMTOOL=$(PROMTOOL) HELM=$(HELM) MYOPERATOR_TEST_MANAGER=$(BIN)/test-manager go test -p $(TEST_PACKAGES) -count=1 -timeout $(TEST_TIMEOUT) ./... 2>&1 | tee bin/test.log \
		|| { hack/test-failures.sh bin/test.log; exit 1; }

# make fuzz-e2e: the model check (test/modelcheck) with another seed and
# more steps than make test's fixed MODEL_SEED=1, MODEL_STEPS=300.
SEED ?= $(shell date +%s)
STEPS ?= 2000

.PHONY: fuzz-e2e
fuzz-e2e: k8s-binaries ## Random user actions against the operator checked against test/model after each step (SEED=n STEPS=n); a failure prints the shortest failing sequence.
	go mod download  # outside the namespace, where go test then compiles offline
	$(IN_NETNS) env GOPROXY=off GOFLAGS="$$GOFLAGS -mod=readonly" MODEL_SEED=$(SEED) MODEL_STEPS=$(STEPS) MODEL_SHRINK=10m go test -count=1 -timeout 0 -v ./test/modelcheck/ -run TestModel

.PHONY: test-crash-points
test-crash-points: k8s-binaries ## The write-point table: the manager SIGKILLed right after each of its writes in turn, then a fresh one; the final state must equal the fault-free run's (about 14 min; make test runs 8 points).
	go mod download  # outside the namespace, where go test then compiles offline
	$(IN_NETNS) env GOPROXY=off GOFLAGS="$$GOFLAGS -mod=readonly" CRASH_POINTS=all go test -count=1 -timeout 60m -v ./test/faults/ -run TestCrashAtEveryWrite

.PHONY: test-faults-long
test-faults-long: k8s-binaries ## The long forms of the cluster faults: 27,000 objects that are not the operator's against its memory and requests (about 3.5 min), a tenant's 188 MiB of labelled ConfigMaps, ConfigMaps labelled as Drinks' with large layouts and annotated Drinks against its heap, and the heap again once they are deleted (about 1 min; make test runs 30 of each), and 20 trials of the paused-leader fence (about 4 min).
	go mod download  # outside the namespace, where go test then compiles offline
	$(IN_NETNS) env GOPROXY=off GOFLAGS="$$GOFLAGS -mod=readonly" MYOPERATOR_LONG_FAULTS=1 go test -count=1 -timeout 30m -v ./test/clusterfaults/ -run 'TestForeignObjectsMemory|TestTenantCannotFillCache'
	$(IN_NETNS) env GOPROXY=off GOFLAGS="$$GOFLAGS -mod=readonly" FENCE_TRIALS=20 go test -count=1 -timeout 30m -v ./internal/app/ -run TestPausedLeaderIsFenced

# make reliability measures the runs behind docs/RELIABILITY.md's rows
# (RELIABILITY_TESTS chooses some), appends a JSON line per test to
# test/reliability/results (RELIABILITY_RESULTS) and renders the document
# again. One package at a time (-p 1): the figures are times and heaps,
# which a neighbour's load would move. It refuses a tree with uncommitted
# changes, whose figures no commit could be dated with.
RELIABILITY_RESULTS ?= $(ROOT)/test/reliability/results
RELIABILITY_TESTS ?= TestCrashAtEveryWrite|TestStaleAndDroppedEvents|TestModel|TestCreateDeleteRaces|TestReconcilePanic|TestLeaseUnderAPFSqueeze|TestAPIServerRestart|TestManagerWaitsForItsCRDs|TestForeignObjectsMemory|TestTenantCannotFillCache|TestPausedLeaderIsFenced|TestConfigOutageNeverDestroys|TestStorageMigration|TestStorageMigrationFinishes
RELIABILITY_PACKAGES ?= ./test/faults/ ./test/modelcheck/ ./reconcile/ ./internal/app/ ./test/clusterfaults/

.PHONY: reliability
reliability: k8s-binaries ## Measure the fault suites behind docs/RELIABILITY.md (about 25 min; RELIABILITY_TESTS='TestA|TestB' for some), append their results to test/reliability/results and render the document.
	go mod download  # outside the namespace, where go test then compiles offline
	$(IN_NETNS) env GOPROXY=off GOFLAGS="$$GOFLAGS -mod=readonly" RELIABILITY_RESULTS=$(RELIABILITY_RESULTS) MYOPERATOR_LONG_FAULTS=1 \
		go test -p 1 -count=1 -timeout 90m -v $(RELIABILITY_PACKAGES) -run '^($(RELIABILITY_TESTS))$$' 2>&1 | tee $(BIN)/reliability.log | grep -E '^(=== RUN|--- |ok|FAIL|PASS)|reliability: saved'
	@$(MAKE) --no-print-directory reliability-doc

.PHONY: rbac-doc
rbac-doc: manifests ## Write docs/SECURITY.md's tables of the operator's rights from config/rbac, with hack/rbacdoc/why.yaml's reasons (make verify checks they are current).
	go run ./hack/rbacdoc

.PHONY: flag-doc
flag-doc: ## Write the manager's flags into docs/configuration.md's table, from internal/managerflags (make verify checks it is current).
	go run ./hack/flagdoc

.PHONY: reliability-doc
reliability-doc: ## Render docs/RELIABILITY.md from test/reliability/RELIABILITY.md.tmpl and the results files (make verify checks it is current).
	go run ./hack/reliabilitydoc

.PHONY: test-mutations
test-mutations: k8s-binaries ## The mutation suite: each test/mutations/*.patch removes a fix from a scratch copy of HEAD and the test it names must fail (MUTATIONS='a b' for some).
	NETNS_RUN="$(IN_NETNS)" hack/mutations.sh $(MUTATIONS)

# MUTATION_ROTATION: make ci's share of the mutation suite is one in this
# many of the patches, a different group each commit (hack/mutations.sh).
MUTATION_ROTATION ?= 10

.PHONY: test-mutations-rotation
test-mutations-rotation: k8s-binaries ## make ci's share of the mutation suite: this commit's group of 1 in MUTATION_ROTATION patches, each caught by its named failure; every patch runs within that many commits.
	NETNS_RUN="$(IN_NETNS)" hack/mutations.sh --rotation $(MUTATION_ROTATION)

.PHONY: test-k8s-oldest
test-k8s-oldest: ## make test on the oldest supported Kubernetes: KUBE_OLDEST_VERSION's etcd and kube-apiserver, built into bin/k8s/<version>.
	@# The same recipe with the other version: its binaries are built outside
	@# the namespace, then KUBEBUILDER_ASSETS names their folder.
	$(MAKE) --no-print-directory test KUBE_VERSION=$(KUBE_OLDEST_VERSION)

# The quick matrix: the tests that ask the API server about its own
# behaviour, which is what changes from one Kubernetes minor to another
# (the operator's code does not): the schemas, CEL rules and ratcheting
# (apis, internal/webhook), conversion through the API server
# (internal/webhook), managedFields and storage versions (internal/migrate,
# the storage migration and the v1alpha1 managedFields retirement), the
# admission policies that fence the operator's own writes, the shard fence
# and the sharded list and watch (internal/shard, the sharded replicas).
# make test runs them on KUBE_VERSION, the newest; make ci runs them on
# KUBE_OLDEST_VERSION as well, each commit, with this target. The whole
# suites on every version (make test-k8s-matrix) stay the release's gate.
QUICK_MATRIX_PACKAGES ?= ./apis/ ./internal/webhook/ ./internal/migrate/ ./internal/shard/
QUICK_MATRIX_APP_TESTS ?= TestStorageMigration|TestStorageMigrationFailureDegrades|TestStorageMigrationFinishes|TestRetireV1alpha1ManagedFields|TestOperatorWritesFenced|TestFenceFrozenByReinstall|TestShardedReplicas
QUICK_MATRIX_ENV = GOPROXY=off GOFLAGS="$$GOFLAGS -mod=readonly" KUBEBUILDER_ASSETS=$(BIN)/k8s/$(KUBE_OLDEST_VERSION)

.PHONY: test-k8s-quick
test-k8s-quick: k8s-binaries-oldest ## The quick matrix: the tests of what the API server decides (schemas, CEL and ratcheting, conversion, managedFields, storage migration, the fence's policies, sharding) on the oldest supported Kubernetes, KUBE_OLDEST_VERSION (make test runs them on the newest).
	go mod download  # outside the namespace, where go test then compiles offline
	@mkdir -p bin && rm -f bin/test-k8s-quick.log
	@# The whole packages, then internal/app's tests of that kind; their
	@# output (the managers' logs too) goes to bin/test-k8s-quick.log.
	$(IN_NETNS) env $(QUICK_MATRIX_ENV) go test -p $(TEST_PACKAGES) -count=1 -timeout $(TEST_TIMEOUT) -v $(QUICK_MATRIX_PACKAGES) >>bin/test-k8s-quick.log 2>&1 \
		&& $(IN_NETNS) env $(QUICK_MATRIX_ENV) go test -count=1 -timeout $(TEST_TIMEOUT) -v ./internal/app/ -run '^($(QUICK_MATRIX_APP_TESTS))$$' >>bin/test-k8s-quick.log 2>&1 \
		|| { hack/test-failures.sh bin/test-k8s-quick.log; exit 1; }
	@# What ran, and each test that skipped for a feature the version lacks, with why.
	@grep -E '^ok|^\s*--- SKIP|lacks the feature gates' bin/test-k8s-quick.log
	@echo "test-k8s-quick: passed on $$($(BIN)/k8s/$(KUBE_OLDEST_VERSION)/kube-apiserver --version)"

.PHONY: test-k8s-matrix
test-k8s-matrix: ## make test on every supported Kubernetes in turn (KUBE_MATRIX_VERSIONS), going on past a failing one; a line per version says passed or failed and how long it took; a run on a clean tree is recorded in test/k8s-matrix/results.jsonl, which make release requires.
	hack/k8s-matrix.sh $(KUBE_MATRIX_VERSIONS)

.PHONY: test-dev-cluster
test-dev-cluster: k8s-binaries ## Bring up the dev cluster, check that a Deployment's pods reach Running, tear it down.
	K8S_BIN=$(K8S_BIN) NETNS=$(NETNS) hack/dev-cluster.sh down $(DEV_CLUSTER)-smoke $(BIN)/smoke.kubeconfig >/dev/null
	K8S_BIN=$(K8S_BIN) NETNS=$(NETNS) hack/dev-cluster.sh up $(DEV_CLUSTER)-smoke $(BIN)/smoke.kubeconfig
	K8S_BIN=$(K8S_BIN) NETNS=$(NETNS) hack/dev-cluster.sh smoke $(DEV_CLUSTER)-smoke $(BIN)/smoke.kubeconfig; rc=$$?; \
	K8S_BIN=$(K8S_BIN) NETNS=$(NETNS) hack/dev-cluster.sh down $(DEV_CLUSTER)-smoke $(BIN)/smoke.kubeconfig; exit $$rc

.PHONY: test-pod-security
test-pod-security: k8s-binaries ## In a kwok cluster, the operator's pods pass Pod Security restricted; a broken pod spec does not.
	K8S_BIN=$(K8S_BIN) NETNS=$(NETNS) hack/test-pod-security.sh

.PHONY: test-make-run
test-make-run: k8s-binaries manifests generate ## On a kwok cluster: make install, make run (refused while a Deployment of the operator exists), kubectl apply -k config/samples/ and the course's Drink; the samples, the course's Drink and the OperatorConfig the bootstrap created Ready, Drink ConfigMaps in their layouts.
	go mod download  # outside the namespace, where go test then compiles offline
	go build -o /dev/null .  # make run's go run then only links
	$(IN_NETNS) env GOPROXY=off GOFLAGS="$$GOFLAGS -mod=readonly" MYOPERATOR_TEST_MAKE_RUN=1 go test -count=1 -timeout 15m -v ./test/userpaths/ -run TestMakeRun

E2E_ARGS ?=
# An existing cluster for the e2e suite instead of the kwok cluster it
# creates (CONTRIBUTING.md: "e2e suites"); with it the suite needs
# neither the Kubernetes binaries nor podman. E2E_NETNS is the network
# namespace the suite runs in (make demo's cluster lives in $(NETNS));
# empty runs it on the host, for a cluster reached over the network.
E2E_KUBECONFIG ?=
# E2E_NODE=real: the cluster the suite creates gets one real node
# (hack/node/node.sh: containerd, kubelet, kube-proxy, built by make
# node-binaries) instead of kwok nodes, and the suite installs the
# production config/default; it runs in a namespace of its own, since
# kube-proxy rewrites the namespace's iptables (docs/REAL-NODE.md).
E2E_NODE ?= kwok
E2E_NETNS ?= $(if $(filter real,$(E2E_NODE)),myoperator-node,$(NETNS))
# The whole kwok suite runs beside the other suites in make ci on 2 cores:
# at 70ef6d7 it was cut at 20 min in its third-last feature, every feature
# before it passed (1,241 s; the release upgrade 504 s of it), so 30m. At
# e23c708 it took 1,636 s in one warm make ci and passed 30m in the next,
# with the CPU 96 % busy (19 features, 1,554 s of them), so 45m.
E2E_TIMEOUT ?= $(if $(filter real,$(E2E_NODE)),60m,45m)
# How the suite installs the operator on the cluster it creates: kustomize
# (kubectl apply -k config/default, the image built from the tree), or from
# make dist's files: manifest (kubectl apply -f install.yaml) or helm (helm
# install of the chart), their images pushed to a registry on loopback and
# pulled from it by digest; those two run the install features only.
E2E_INSTALL ?= kustomize
# The oldest release the upgrade feature starts from, besides the newest
# one: the last whose bootstrap wrote its defaults into the OperatorConfig's
# spec (bootstrap.EarlierDefaults), which this tree's bootstrap releases; a
# user who skipped the releases since upgrades from there (bootstrap's
# TestE2EUpgradesFromTheLastReleaseThatWroteDefaults keeps the two in
# step). Empty: the newest only.
E2E_UPGRADE_FROM ?= v0.2.0
# The releases make test-e2e builds before it enters the network namespace
# (hack/previous-release.sh; "newest" is the newest release, the others
# are named), so that their modules download where the proxy is reachable
# and the features that start from them (area=upgrade, and area=helm with
# E2E_INSTALL=helm) find them built. A run that skips those features names
# fewer: make ci's e2e steps each name only what theirs start from.
E2E_PREBUILD ?= newest $(E2E_UPGRADE_FROM)
# The stable window after each helm upgrade of make test-e2e-install-ways.
E2E_HELM_STABLE_FOR ?= 30s
# How the API server of the kwok cluster the suite creates reaches the
# webhook Service: clusterip (its ClusterIP, which the suite routes to the
# ready endpoints as kube-proxy does, test/kubeproxy: the path of a real
# cluster) or aggregator (it calls the endpoints itself, as make demo's
# cluster does; make test-demo runs the disruption features there).
E2E_SERVICE_PATH ?= clusterip
# The suite's kwok cluster, when it creates one (not E2E_KUBECONFIG, not
# E2E_NODE=real): only there is the Service path the suite's to choose.
E2E_KWOK = $(if $(or $(E2E_KUBECONFIG),$(filter real,$(E2E_NODE))),,yes)
# E2E_NAME names a run's cluster, its folders under bin/ (<name>-logs,
# kwok-<name>, the output in <name>.log) and its containers, so that two
# runs share the machine. make test-e2e-install-ways runs as
# e2e-install-ways in a network namespace of its own
# (INSTALL_WAYS_NETNS), beside make test-e2e in make ci.
E2E_NAME ?= e2e
INSTALL_WAYS_NETNS ?= myoperator-install-ways

.PHONY: test-e2e
test-e2e: $(if $(E2E_KUBECONFIG),,k8s-binaries cert-manager) $(if $(filter real,$(E2E_NODE)),node-binaries) build $(CONTROLLER_GEN) $(HELM) ## End-to-end suites (e2e-framework) on a kwok cluster they create (E2E_NODE=real: on a real node, make test-e2e-real), or E2E_KUBECONFIG=<file> an existing one; E2E_ARGS="--labels area=drinks" runs one.
	$(if $(E2E_KUBECONFIG),,hack/ensure-podman.sh)
	$(if $(and $(E2E_KWOK),$(filter clusterip,$(E2E_SERVICE_PATH))),hack/ensure-nat-tools.sh)
	@# controller-gen is installed here, outside the namespace: the suite runs make deploy, undeploy and uninstall (area=lifecycle), which regenerate the manifests with it.
	@# The upgrade feature builds the releases it starts from at their commits (git worktrees under bin/releases); their modules download here, outside the namespace.
	$(if $(E2E_KUBECONFIG),,$(if $(and $(wildcard RELEASES.md),$(strip $(E2E_PREBUILD))),$(foreach r,$(E2E_PREBUILD),hack/previous-release.sh $(filter-out newest,$(r)) >/dev/null &&) true))
	@# The loopback registry of E2E_INSTALL=manifest and helm (hack/tools/registry), built here, outside the namespace.
	$(if $(filter-out kustomize,$(E2E_INSTALL)),go -C hack/tools/registry build -o $(BIN)/registry .)
	@# E2E_INSTALL=helm upgrades from the chart hack/helmchart makes from the previous release's tree.
	$(if $(filter helm,$(E2E_INSTALL)),go build -o $(BIN)/helmchart ./hack/helmchart)
	go mod download  # outside the namespace, where go test then compiles offline
	@# The whole output also goes to bin/$(E2E_NAME).log; on a failure the failed checks' messages are printed again last, where a CI log's tail shows them.
	$(if $(E2E_NETNS),$(ROOT)/hack/netns.sh $(E2E_NETNS)) env GOPROXY=off GOFLAGS="$$GOFLAGS -mod=readonly" E2E_NAME=$(E2E_NAME) E2E_NODE=$(E2E_NODE) E2E_NODE_NETNS=$(E2E_NETNS) E2E_UPGRADE_FROM=$(E2E_UPGRADE_FROM) $(if $(E2E_KWOK),E2E_SERVICE_PATH=$(E2E_SERVICE_PATH)) E2E_INSTALL=$(E2E_INSTALL) HELM=$(HELM) go test -tags e2e -count=1 -timeout $(E2E_TIMEOUT) -v ./e2e/ -args $(E2E_ARGS) 2>&1 | tee $(BIN)/$(E2E_NAME).log || \
	  { echo "e2e: the failed checks' messages (whole output in bin/$(E2E_NAME).log):"; awk '/^=== RUN   [^\/]+$$/ {b=""} /^ +[a-z_]+_test\.go:[0-9]+: / {b=b $$0 "\n"; m=1; next} m && /^        / {b=b $$0 "\n"; next} {m=0} /^--- FAIL: / {printf "%s", b; b=""} /^panic: test timed out/ {t=1} /^goroutine / {t=0} t {print}' $(BIN)/$(E2E_NAME).log | tail -n 120; exit 1; }

.PHONY: test-e2e-install-ways
test-e2e-install-ways: $(CYCLONEDX_GOMOD) $(HELM) $(KREW) $(COSIGN) ## make dist of this tree, then the e2e install features installing its files: E2E_INSTALL=manifest (install.yaml) and E2E_INSTALL=helm (the chart; upgrade, uninstall, install again; upgrade from the previous release's chart and from its kustomize install, under load).
	@# make ci ran make test-dist first: its dist/ of this very tree is restored (hack/dist-snapshot.sh) instead of built again.
	v=$$(go run ./hack/version -dist); hack/dist-snapshot.sh restore $$v && echo "dist/ for $$v restored from make test-dist's (same tree)" || \
	  $(MAKE) --no-print-directory dist RELEASE_IMAGES=1 >$(BIN)/e2e-dist.log 2>&1 || { tail -20 $(BIN)/e2e-dist.log; exit 1; }
	@# The manifest run starts from no release; the helm run upgrades from the newest release's chart.
	$(MAKE) --no-print-directory test-e2e E2E_INSTALL=manifest E2E_NAME=e2e-install-ways E2E_NETNS=$(INSTALL_WAYS_NETNS) E2E_PREBUILD=
	@# The helm run's two upgrades keep their stable window short: area=upgrade holds the same operator still for two minutes.
	E2E_STABLE_FOR=$(E2E_HELM_STABLE_FOR) $(MAKE) --no-print-directory test-e2e E2E_INSTALL=helm E2E_NAME=e2e-install-ways E2E_NETNS=$(INSTALL_WAYS_NETNS) E2E_PREBUILD=newest

.PHONY: test-e2e-real
test-e2e-real: ## The whole e2e suite on a real node (containerd, kubelet, kube-proxy) with the production config/default, then make dist's install.yaml pulled by containerd from a loopback registry; not in make ci (docs/REAL-NODE.md).
	$(MAKE) test-e2e E2E_NODE=real; rc=$$?; ip netns del myoperator-node 2>/dev/null; [ $$rc = 0 ] || exit $$rc
	$(MAKE) --no-print-directory dist RELEASE_IMAGES=1 >$(BIN)/e2e-dist.log 2>&1 || { tail -20 $(BIN)/e2e-dist.log; exit 1; }
	$(MAKE) test-e2e E2E_NODE=real E2E_INSTALL=manifest; rc=$$?; ip netns del myoperator-node 2>/dev/null; exit $$rc

.PHONY: ci
# hack/ci.sh holds the steps and what each needs; they run side by side.
ci: ## Everything CI runs: verify, lint, kube-score, every test suite, the quick matrix on the oldest Kubernetes, the dev-cluster, image, release files, demo and e2e checks (the whole suites on every version, make test-k8s-matrix, run apart). Prints each step's time.
	@MAKE="$(MAKE)" hack/ci.sh

# ci-prep: make ci's first step. The Debian packages its steps need
# (podman, the NAT tools) and the main module's dependencies, once, before
# the steps run side by side (apt and dpkg hold one lock at a time).
.PHONY: ci-prep
ci-prep:
	hack/ensure-podman.sh
	hack/ensure-nat-tools.sh
	go mod download
