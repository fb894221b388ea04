package app

import (
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"
	"sigs.k8s.io/controller-runtime/pkg/cache"
)

// ParseWatchNamespaces reads the value of --watch-namespaces: namespace
// names separated by commas, spaces around them ignored; empty is every
// namespace (nil). The list is validated (ValidateWatchNamespaces).
func ParseWatchNamespaces(value string) ([]string, error) {
	if strings.TrimSpace(value) == "" {
		return nil, nil
	}
	list := strings.Split(value, ",")
	for i := range list {
		list[i] = strings.TrimSpace(list[i])
	}
	return list, ValidateWatchNamespaces(list)
}

// ValidateWatchNamespaces checks the served namespaces: each a namespace
// name (an RFC 1123 DNS label), none twice. The error names the flag, the
// entry and the rule, so that a typo stops the manager at start rather
// than leaving a namespace unserved in silence.
func ValidateWatchNamespaces(list []string) error {
	seen := make(map[string]int, len(list))
	for i, ns := range list {
		if ns == "" {
			return fmt.Errorf("--watch-namespaces: entry %d is empty: give namespace names separated by commas, or nothing to serve every namespace", i+1)
		}
		if errs := validation.IsDNS1123Label(ns); len(errs) > 0 {
			return fmt.Errorf("--watch-namespaces: entry %d %q is not a namespace name: %s", i+1, ns, strings.Join(errs, "; "))
		}
		if j, dup := seen[ns]; dup {
			return fmt.Errorf("--watch-namespaces: entry %d %q repeats entry %d: name each namespace once", i+1, ns, j+1)
		}
		seen[ns] = i
	}
	return nil
}

// servedNamespaces are the manager cache's namespaces: nil (every
// namespace) when the list is empty. Each namespaced kind the manager's
// cache holds (Drinks, their ConfigMaps) is then listed and watched in each
// served namespace alone, which is what the namespaced install's
// RoleBindings allow; the cluster-scoped kinds (Guestbook, OperatorConfig)
// are not affected, and the certificate Secret keeps its own namespace.
func servedNamespaces(list []string) map[string]cache.Config {
	if len(list) == 0 {
		return nil
	}
	m := make(map[string]cache.Config, len(list))
	for _, ns := range list {
		m[ns] = cache.Config{}
	}
	return m
}
