module github.com/example/myoperator/hack/node/pause

// The pause program: the sandbox container of every pod on the real node.
// Its own module, standard library only, so that the image builds
// without the operator's dependencies.

go 1.26.0
