package olmcheck

import "testing"

// Only operator-sdk's known PDB false positive is ignored: another API in the same warning, an
// error, or another message still counts.
func TestIsPDBRuleFalsePositive(t *testing.T) {
	const prefix = "Value kubeopera-operator.v0.2.0: this bundle is using APIs which were deprecated and removed in v1.25. " +
		"More info: https://kubernetes.io/docs/reference/using-api/deprecation-guide/#v1-25. Migrate the API(s) for "
	const rule = `"ClusterServiceVersion.Spec.InstallStrategy.StrategySpec.Permissions[0].Rules[17]"`
	for _, tc := range []struct {
		name, typ, msg string
		want           bool
	}{
		{"the PDB rule", "warning", prefix + "poddisruptionbudgets: ([" + rule + "])", true},
		{"as operator-sdk prints it", "warning", "Warning: " + prefix + "poddisruptionbudgets: ([" + rule + "])", true},
		{"two PDB rules, cluster-wide", "warning", prefix + `poddisruptionbudgets: ([` + rule + ` "ClusterServiceVersion.Spec.InstallStrategy.StrategySpec.ClusterPermissions[1].Rules[2]"])`, true},
		{"another API too", "warning", prefix + "events: ([" + rule + "]),poddisruptionbudgets: ([" + rule + "])", false},
		{"another API only", "warning", prefix + "cronjobs: ([" + rule + "])", false},
		{"an error", "error", prefix + "poddisruptionbudgets: ([" + rule + "])", false},
		{"a PDB manifest, not a rule", "warning", prefix + `poddisruptionbudgets: (["nats"])`, false},
		{"another warning", "warning", "Value x: csv.Spec.minKubeVersion is not informed.", false},
	} {
		if got := IsPDBRuleFalsePositive(tc.typ, tc.msg); got != tc.want {
			t.Errorf("%s: got %v, want %v", tc.name, got, tc.want)
		}
	}
}
