package olm

import (
	"bytes"
	"os"
	"slices"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/util/yaml"
	sigsyaml "sigs.k8s.io/yaml"
)

// unnamedDeletes are the only resources the operator may delete whatever their name, each with
// the reason no resourceNames can narrow it (docs/olm.md, "Least privilege, proven").
var unnamedDeletes = map[string]string{
	"/configmaps": "the Controller's operand Role grants every verb on ConfigMaps (it writes them for its " +
		"microservices), and Kubernetes lets the operator create that Role only if it holds them; leader election too",
	"/services": "the Controller's operand Role grants every verb on Services (it exposes microservices)",
	"coordination.k8s.io/leases": "the router's operand Role grants every verb on Leases (its leader election); " +
		"the operator's own leader election",
	"/pods": "taking over from the Datasance operator retires its pods, whose names its ReplicaSets and " +
		"StatefulSet generated; only pods with that operator's labels for the ControlPlane, under a UID precondition",
	"apps/replicasets": "taking over from the Datasance operator retires the ReplicaSets its Deployments left " +
		"(generated names); only those with its labels for the ControlPlane, under a UID precondition",
}

// namedDeletes are the deletes granted by name only, and the names: the objects the operator
// writes with those fixed names (or, for the Datasance operator's, replaces).
var namedDeletes = map[string][]string{
	"/secrets": {"controller-db-credentials", "controller-auth-credentials", "controller-vault-credentials",
		"router-site-ca", "default-router-local-ca", "nats-site-ca", "default-nats-local-ca"},
	"/persistentvolumeclaims":                {"controller-sqlite"},
	"apps/deployments":                       {"controller", "router"},
	"apps/statefulsets":                      {"nats"},
	"networking.k8s.io/ingresses":            {"controller", "pot-controller"},
	"policy/poddisruptionbudgets":            {"controller", "nats"},
	"rbac.authorization.k8s.io/roles":        nil,
	"/serviceaccounts":                       nil,
	"rbac.authorization.k8s.io/clusterroles": nil,
}

// Every install form (the OLM bundle, the plain installer, the Helm chart) grants delete on a
// Secret, PVC, Deployment, StatefulSet, Ingress or PodDisruptionBudget by name only, and deletes
// whatever the name only the resources unnamedDeletes lists, for its reason.
func TestDeletesAreGrantedByNameWhereNamesAreFixed(t *testing.T) {
	spec := loadBundle(t).CSV.Spec.InstallStrategy.StrategySpec
	forms := map[string][]rbacv1.PolicyRule{}
	for _, p := range append(spec.Permissions, spec.ClusterPermissions...) {
		forms["bundle"] = append(forms["bundle"], p.Rules...)
	}
	forms["installer"] = installerRules(t)
	forms["chart"] = chartRules(t)
	for form, rules := range forms {
		t.Run(form, func(t *testing.T) {
			g := NewWithT(t)
			g.Expect(rules).NotTo(BeEmpty())
			named := map[string][]string{}
			for _, r := range rules {
				if !hasVerb(r, "delete") && !hasVerb(r, "deletecollection") {
					continue
				}
				g.Expect(hasVerb(r, "deletecollection")).To(BeFalse(), "deletecollection is never granted: %+v", r)
				for _, grp := range r.APIGroups {
					for _, res := range r.Resources {
						gr := grp + "/" + res
						if len(r.ResourceNames) == 0 {
							g.Expect(unnamedDeletes).To(HaveKey(gr), "delete on every %s (%s)", gr, form)
							continue
						}
						named[gr] = append(named[gr], r.ResourceNames...)
					}
				}
			}
			for gr, want := range namedDeletes {
				if want == nil {
					g.Expect(named).NotTo(HaveKey(gr), "%s is never deleted", gr)
					continue
				}
				g.Expect(named[gr]).To(ContainElements(want), "delete on %s by name", gr)
			}
		})
	}
}

func hasVerb(r rbacv1.PolicyRule, verb string) bool { return slices.Contains(r.Verbs, verb) }

// installerRules are the rules of the manager's Roles and ClusterRoles in dist/install.yaml (its
// own and leader election's; not the aggregated editor and viewer roles for people).
func installerRules(t *testing.T) []rbacv1.PolicyRule {
	t.Helper()
	data, err := os.ReadFile(repoPath("dist", "install.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var out []rbacv1.PolicyRule
	for doc := range strings.SplitSeq(string(data), "\n---\n") {
		var head struct {
			Kind     string
			Metadata struct{ Name string }
		}
		if err := sigsyaml.Unmarshal([]byte(doc), &head); err != nil {
			t.Fatal(err)
		}
		if head.Kind != "Role" && head.Kind != "ClusterRole" ||
			!strings.HasSuffix(head.Metadata.Name, "-manager-role") && !strings.HasSuffix(head.Metadata.Name, "-leader-election-role") {
			continue
		}
		var role rbacv1.ClusterRole
		if err := yaml.NewYAMLOrJSONDecoder(bytes.NewReader([]byte(doc)), 4096).Decode(&role); err != nil {
			t.Fatal(err)
		}
		out = append(out, role.Rules...)
	}
	return out
}

// chartRules are the manager's rules the Helm chart renders (both scopes).
func chartRules(t *testing.T) []rbacv1.PolicyRule {
	t.Helper()
	data, err := os.ReadFile(repoPath("dist", "chart", "files", "manager-rules.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var rules struct {
		Cluster    []rbacv1.PolicyRule `json:"cluster"`
		Namespaced []rbacv1.PolicyRule `json:"namespaced"`
	}
	if err := sigsyaml.Unmarshal(data, &rules); err != nil {
		t.Fatal(err)
	}
	return append(rules.Cluster, rules.Namespaced...)
}
