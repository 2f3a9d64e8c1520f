//go:build tools

// Package tools pins the peer commands mansign's tests run (issue 22). scripts/peers.sh
// builds each import path below with `go build`; nothing here is linked into mansign.
package tools

import (
	_ "github.com/kyverno/kyverno/cmd/cli/kubectl-kyverno"
	_ "github.com/sigstore/k8s-manifest-sigstore/cmd/kubectl-sigstore"
)
