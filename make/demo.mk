# Demo: included by the Makefile, which defines the versions, paths and
# shared variables these targets use (make help lists every target).

##@ Demo

.PHONY: demo
demo: ## The operator from its image on a local kwok cluster, samples applied, summary printed (as root; a second run reuses it).
	@hack/demo.sh preflight
	@$(MAKE) --no-print-directory k8s-binaries build
	@K8S_BIN=$(K8S_BIN) NETNS=$(NETNS) hack/demo.sh up

.PHONY: demo-down
demo-down: ## Remove everything make demo started: pod runner, containers, cluster, bin/demo.
	@K8S_BIN=$(K8S_BIN) NETNS=$(NETNS) hack/demo.sh down

.PHONY: test-demo
test-demo: ## make demo twice (the second reuses everything), its printed kubectl commands, a rolling restart and a node drain under load (the e2e disruption features on it), make demo-down leaving nothing behind.
	MAKE="$(MAKE)" NETNS=$(NETNS) hack/test-demo.sh
