// Command etcd is the etcd server of go.etcd.io/etcd/server/v3, built from the
// module pinned in go.mod (upstream's own main is a one-line call to etcdmain.Main).
package main

import (
	"os"

	"go.etcd.io/etcd/server/v3/etcdmain"
)

func main() {
	etcdmain.Main(os.Args)
}
