// Package clusterfaults holds tests of the cluster faults that
// need the manager as its own process against a control plane the test
// owns (test/bench): kube-apiserver and etcd stopped and restarted
// while Drinks are written (TestAPIServerRestart), and a cluster full of
// objects that are not the operator's (TestForeignObjectsMemory, behind
// MYOPERATOR_LONG_FAULTS=1). Both run in the network namespace of
// hack/netns.sh, like every test that starts an API server.
package clusterfaults
