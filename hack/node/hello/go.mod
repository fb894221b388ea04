module github.com/example/myoperator/hack/node/hello

// A tiny HTTP server image for the real-node experiment (issue 16): a pod
// whose container really runs and answers on its pod IP and ClusterIP.

go 1.26.0
