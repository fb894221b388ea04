// Command etcd is the upstream etcd server, built from Go modules so that the
// project's tests run against a pinned, real etcd without downloads.
package main

import (
	"os"

	"go.etcd.io/etcd/server/v3/etcdmain"
)

func main() {
	etcdmain.Main(os.Args)
}
