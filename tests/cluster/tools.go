//go:build tools

// Package tools pins the programs scripts/cluster.sh builds: the API server and
// kubectl of one Kubernetes release and the etcd server module it was tested with.
package tools

import (
	_ "go.etcd.io/etcd/server/v3/etcdmain"
	_ "k8s.io/kubernetes/cmd/kube-apiserver"
	_ "k8s.io/kubernetes/cmd/kubectl"
)
