// Package olmcheck holds what the project knows about the OLM validators' findings: the one
// warning of operator-sdk v1.34's validators (operator-framework/api) that is known to be wrong.
// hack/olmtool (make bundle) and test/olm use it, so both ignore exactly the same message.
package olmcheck

import (
	"regexp"
	"strings"
)

// pdbRuleFalsePositive: an RBAC rule on policy/poddisruptionbudgets is reported as a use of
// policy/v1beta1, removed in Kubernetes 1.25, although RBAC rules carry no version and the
// operator uses policy/v1 only (operator-framework/api#378; the validator's fix, #496, is in no
// release this repository builds). Only that message, naming poddisruptionbudgets alone and CSV
// permission rules only, matches; any other API in it still counts.
var pdbRuleFalsePositive = regexp.MustCompile(`^Value [^:]+: this bundle is using APIs which were deprecated and removed in v1\.25\. ` +
	`More info: https://kubernetes\.io/docs/reference/using-api/deprecation-guide/#v1-25\. ` +
	`Migrate the API\(s\) for poddisruptionbudgets: \((\["ClusterServiceVersion\.Spec\.InstallStrategy\.StrategySpec\.(Cluster)?Permissions\[\d+\]\.Rules\[\d+\]"( "ClusterServiceVersion\.Spec\.InstallStrategy\.StrategySpec\.(Cluster)?Permissions\[\d+\]\.Rules\[\d+\]")*\])\),?$`)

// IsPDBRuleFalsePositive reports whether a validator finding (its type, "warning" or "error",
// and its message, with or without the "Warning: " prefix) is that false positive.
func IsPDBRuleFalsePositive(typ, message string) bool {
	return strings.EqualFold(typ, "warning") && pdbRuleFalsePositive.MatchString(strings.TrimPrefix(message, "Warning: "))
}
