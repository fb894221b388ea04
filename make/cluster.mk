# Kubernetes binaries and local cluster: included by the Makefile, which defines the versions, paths and
# shared variables these targets use (make help lists every target).

##@ Kubernetes binaries and local cluster

.PHONY: cert-manager
cert-manager: $(CERT_MANAGER) ## Build the launcher of cert-manager's own issuing controllers and cainjector (hack/tools/certmanager, in the tools module) into bin/cert-manager-<version>/.
# Built with the flags every target shares (the Makefile's GOFLAGS and
# CGO_ENABLED), as make lint compiles the same module: the build reuses
# lint's compiled packages (other flags compiled them all again: 133 s on a
# fresh machine).
$(CERT_MANAGER): hack/tools/go.mod hack/tools/go.sum hack/tools/certmanager/main.go
	cd hack/tools/certmanager && go build -o $@ .

.PHONY: k8s-binaries
k8s-binaries: ## Build etcd, kube-apiserver, controller-manager, scheduler, kwok into bin/k8s/<version> (only what is missing).
	KUBE_VERSION=$(KUBE_VERSION) KWOK_VERSION=$(KWOK_VERSION) hack/build-k8s.sh $(K8S_BIN)

.PHONY: node-binaries
node-binaries: ## Build a real node (not in make ci): kubelet, kube-proxy, containerd, ctr, CNI plugins, pause image into bin/node/<version> (docs/REAL-NODE.md).
	KUBE_VERSION=$(KUBE_VERSION) hack/build-node.sh $(BIN)/node/$(KUBE_VERSION)

DEV_CLUSTER ?= myoperator-dev
DEV_KUBECONFIG ?= $(BIN)/dev-cluster.kubeconfig

.PHONY: dev-cluster
dev-cluster: k8s-binaries ## Start a local kwok cluster (real control plane, fake nodes) on the project-built binaries.
	K8S_BIN=$(K8S_BIN) NETNS=$(NETNS) hack/dev-cluster.sh up $(DEV_CLUSTER) $(DEV_KUBECONFIG)

.PHONY: dev-cluster-down
dev-cluster-down: ## Delete the local kwok cluster.
	K8S_BIN=$(K8S_BIN) NETNS=$(NETNS) hack/dev-cluster.sh down $(DEV_CLUSTER) $(DEV_KUBECONFIG)

# make run serves the webhooks on https://localhost:$(RUN_WEBHOOK_PORT) and its
# probes on $(RUN_PROBE_ADDR); make install-local points the API server at the
# same port, so give both the same RUN_WEBHOOK_PORT.
RUN_WEBHOOK_PORT ?= 9443
RUN_PROBE_ADDR ?= 127.0.0.1:8081

.PHONY: install-local
install-local: manifests ## Install what make run needs (make run does it too): CRDs, webhooks called on https://localhost:9443 (RUN_WEBHOOK_PORT), namespaces, cert Secret.
	@WHO="make install-local" KUBECTL="$(KUBECTL)" RUN_WEBHOOK_PORT=$(RUN_WEBHOOK_PORT) hack/run-local.sh

.PHONY: run
run: manifests generate ## Run the manager on this host against the current kubeconfig (after make install, as in the course): applies config/local, runs the bootstrap (OperatorConfig cluster with defaults when absent), serves its webhooks with its own certificates; refuses when the operator is deployed.
	@KUBECTL="$(KUBECTL)" RUN_WEBHOOK_PORT=$(RUN_WEBHOOK_PORT) hack/run-local.sh
	@# What the initContainer does in the cluster: OperatorConfig cluster, with defaults, when it is absent.
	go run ./initcontainer --zap-devel
	go run . --namespace=myoperator-system --webhook-host=127.0.0.1 --webhook-port=$(RUN_WEBHOOK_PORT) \
		--webhook-extra-dns-names=localhost --metrics-bind-address=0 --health-probe-bind-address=$(RUN_PROBE_ADDR) --zap-devel

.PHONY: run-local
run-local: run ## Same as make run (its former name).
