// Command rulecheck validates Prometheus rule files the way `promtool check rules
// --lint=duplicate-rules --lint-fatal` does, without building promtool (promtool links
// Prometheus's whole service-discovery tree, minutes of compile time on a small machine).
//
// What it checks is what promtool's checkRules runs, at the module version pinned in
// go.mod (github.com/prometheus/prometheus v0.316.0, cmd/promtool/main.go: CheckRules,
// checkRules, checkRuleGroups, checkDuplicates):
//
//   - rulefmt.ParseFile with unknown fields refused, UTF-8 metric-name validation (the
//     scheme promtool passes) and the default PromQL parser options: YAML decoding,
//     group names unique and non-empty, every rule has exactly one of record/alert, a
//     non-empty expr that parses as PromQL, valid label and annotation names and
//     templates (rulefmt.RuleGroups.Validate);
//   - no two rules with the same name and the same merged group+rule labels (promtool's
//     "duplicate-rules" lint, which is on by default); here it is always fatal.
//
// Usage: rulecheck FILE...   Exit status 0 when every file passes, 1 otherwise.
package main

import (
	"fmt"
	"log/slog"
	"maps"
	"os"
	"sort"

	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/model/rulefmt"
	"github.com/prometheus/prometheus/promql/parser"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: rulecheck FILE...")
		os.Exit(2)
	}
	logger := slog.New(slog.NewTextHandler(os.Stderr, nil))
	p := parser.NewParser(parser.Options{})
	failed := false
	for _, file := range os.Args[1:] {
		fmt.Println("Checking", file)
		groups, errs := rulefmt.ParseFile(file, false, model.UTF8Validation, p, logger)
		if len(errs) == 0 {
			errs = duplicates(groups.Groups)
		}
		if len(errs) > 0 {
			failed = true
			fmt.Fprintln(os.Stderr, "  FAILED:")
			for _, err := range errs {
				fmt.Fprintln(os.Stderr, err.Error())
			}
			continue
		}
		n := 0
		for _, g := range groups.Groups {
			n += len(g.Rules)
		}
		fmt.Printf("  SUCCESS: %d rules found\n", n)
	}
	if failed {
		os.Exit(1)
	}
}

// duplicates reports rules that share a name (alert or record) and their merged group and
// rule labels: Prometheus would evaluate both into the same series.
func duplicates(groups []rulefmt.RuleGroup) []error {
	type key struct {
		name   string
		labels labels.Labels
	}
	var all []key
	for _, g := range groups {
		for _, r := range g.Rules {
			merged := map[string]string{}
			maps.Copy(merged, g.Labels)
			maps.Copy(merged, r.Labels)
			name := r.Alert
			if name == "" {
				name = r.Record
			}
			all = append(all, key{name, labels.FromMap(merged)})
		}
	}
	sort.Slice(all, func(i, j int) bool {
		if all[i].name != all[j].name {
			return all[i].name < all[j].name
		}
		return labels.Compare(all[i].labels, all[j].labels) < 0
	})
	var errs []error
	for i := 1; i < len(all); i++ {
		if all[i].name == all[i-1].name && labels.Equal(all[i].labels, all[i-1].labels) {
			errs = append(errs, fmt.Errorf("duplicate rule %q with labels %s", all[i].name, all[i].labels))
		}
	}
	return errs
}
