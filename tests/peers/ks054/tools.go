//go:build tools

// Package tools pins the last tagged release of kubectl-sigstore, v0.5.4, next to the
// version Kyverno v1.19.0 pins (../tools.go). The two cannot share one module graph, so this
// is its own module; scripts/peers.sh builds it as `kubectl-sigstore-v0.5.4`.
package tools

import (
	_ "github.com/sigstore/k8s-manifest-sigstore/cmd/kubectl-sigstore"
)
