# Kubernetes binaries and local cluster: included by the Makefile, which defines the versions, paths and
# shared variables these targets use (make help lists every target).

##@ Kubernetes binaries and local cluster

.PHONY: cert-manager
cert-manager: $(CERT_MANAGER) ## Build the launcher of cert-manager's own issuing controllers and cainjector (hack/tools/certmanager, with the tools' module: make tools-module) into bin/cert-manager-<version>/.

.PHONY: k8s-binaries
k8s-binaries: ## Build etcd, kube-apiserver, controller-manager, scheduler, kwok into bin/k8s/<version> (only what is missing).
	KUBE_VERSION=$(KUBE_VERSION) hack/build-k8s.sh $(K8S_BIN)

.PHONY: k8s-binaries-oldest
k8s-binaries-oldest: ## Build the oldest supported Kubernetes' etcd and kube-apiserver (KUBE_OLDEST_VERSION), what the quick matrix and make test-k8s-oldest start, into bin/k8s/<version> (only what is missing).
	KUBE_VERSION=$(KUBE_OLDEST_VERSION) hack/build-k8s.sh $(BIN)/k8s/$(KUBE_OLDEST_VERSION)

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

# make run serves the webhooks on port $(RUN_WEBHOOK_PORT) of the address the
# cluster's API server can reach this host at (hack/runhost chooses it;
# RUN_WEBHOOK_HOST overrides) and its probes on $(RUN_PROBE_ADDR); make
# install-local points the API server at the same address and port, so give
# both the same RUN_WEBHOOK_PORT.
RUN_WEBHOOK_PORT ?= 9443
RUN_PROBE_ADDR ?= 127.0.0.1:8081

.PHONY: install-local
install-local: manifests ## Install what make run needs (make run does it too): CRDs, webhooks called on https://<this host, as the cluster reaches it>:9443 (RUN_WEBHOOK_PORT), namespaces, cert Secret.
	@WHO="make install-local" KUBECTL="$(KUBECTL)" RUN_WEBHOOK_PORT=$(RUN_WEBHOOK_PORT) hack/run-local.sh install

.PHONY: run
run: manifests generate ## Run the manager on this host against the current kubeconfig (after make install, as in the course): chooses the address the API server reaches this host at (kind, minikube, Docker Desktop, this host; RUN_WEBHOOK_HOST), applies config/local, runs the bootstrap (OperatorConfig cluster with defaults when absent), serves its webhooks with its own certificates; refuses when the operator is deployed or the cluster cannot reach this host.
	@KUBECTL="$(KUBECTL)" RUN_WEBHOOK_PORT=$(RUN_WEBHOOK_PORT) RUN_PROBE_ADDR=$(RUN_PROBE_ADDR) hack/run-local.sh run

.PHONY: run-local
run-local: run ## Same as make run (its former name).
