# Deployment: included by the Makefile, which defines the versions, paths and
# shared variables these targets use (make help lists every target).

##@ Deployment

# What deploy installs (the CRDs, the Guestbook operand namespace and the
# operator; another kustomization, for example an overlay with config/certmanager) and
# what undeploy removes (the operator alone: users' data stays).
DEPLOY_CONFIG ?= config/default
UNDEPLOY_CONFIG ?= config/operator
# make uninstall deletes only with CONFIRM=yes.
CONFIRM ?=

.PHONY: install
install: manifests ## Install the CRDs into the cluster of the current kubeconfig.
	$(KUBECTL) apply --server-side -k config/crd

.PHONY: uninstall
uninstall: ## Delete the CRDs and every Drink, Guestbook, OperatorConfig: prints what and where, deletes only with CONFIRM=yes.
	@KUBECTL="$(KUBECTL)" CONFIRM="$(CONFIRM)" hack/uninstall.sh

.PHONY: deploy
deploy: manifests ## Deploy the operator with image IMG (config/default: CRDs, operand namespace, operator; or DEPLOY_CONFIG).
	hack/render-default.sh $(IMG) $(DEPLOY_CONFIG) | $(KUBECTL) apply --server-side -f -

.PHONY: undeploy
undeploy: ## Remove the operator (config/operator); CRDs, custom resources and operands stay.
	KUBECTL="$(KUBECTL)" hack/undeploy.sh $(UNDEPLOY_CONFIG)
