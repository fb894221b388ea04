// Package krew pins krew, the kubectl plugin manager, in a module of its
// own: krew v0.4.3 requires k8s.io/client-go v11.0.0+incompatible, which
// the tools' module (hack/tools) cannot hold beside the client-go its
// other tools need. make dist checks the plugin's krew manifest with
// krew's own validate-krew-manifest, and make test-dist installs the
// plugin with krew from that manifest and the archive, offline.
package krew
