//go:build tools

// Package tools pins Kyverno's admission controller (issue 36) and its reports controller
// (issue 37: background scans). scripts/kyverno.sh builds the import paths below with
// `go build`; nothing here is linked into mansign. The version
// is the one tests/peers/go.mod pins for the Kyverno CLI, so the CLI and the admission
// controller the tests compare are one Kyverno.
package tools

import (
	_ "github.com/kyverno/kyverno/cmd/kyverno"
	_ "github.com/kyverno/kyverno/cmd/reports-controller"
)
