//go:build tools

// Package tools pins the programs scripts/ops-tools.sh builds for mansign's operations
// tests: helm (renders and lints charts/mansign) and, through ./rulecheck, the Prometheus
// rule-file validation that `promtool check rules` runs.
package tools

import (
	_ "github.com/prometheus/prometheus/model/rulefmt"
	_ "helm.sh/helm/v3/cmd/helm"
)
