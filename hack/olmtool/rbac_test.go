package main

import (
	"testing"

	. "github.com/onsi/gomega"
	rbacv1 "k8s.io/api/rbac/v1"
)

func TestSplitRules(t *testing.T) {
	table, err := newScopeTable([]string{"../../config/crd/bases", "../../test/crds"}, []string{"kubeopera.io/tenants"})
	if err != nil {
		t.Fatal(err)
	}
	rule := func(group string, verbs []string, resources ...string) rbacv1.PolicyRule {
		return rbacv1.PolicyRule{APIGroups: []string{group}, Resources: resources, Verbs: verbs}
	}
	read := []string{"get", "list", "watch"}

	for _, tc := range []struct {
		name          string
		in            []rbacv1.PolicyRule
		wantNS, wantC []rbacv1.PolicyRule
		wantErr       string
	}{{
		name:   "namespaced built-ins and owned CRDs with subresources",
		in:     []rbacv1.PolicyRule{rule("", read, "secrets", "pods/log"), rule("datasance.com", []string{"update"}, "controlplanes/status")},
		wantNS: []rbacv1.PolicyRule{rule("", read, "secrets", "pods/log"), rule("datasance.com", []string{"update"}, "controlplanes/status")},
	}, {
		name:  "cluster-scoped resources and the cluster-wide Tenant reads",
		in:    []rbacv1.PolicyRule{rule("", read, "namespaces"), rule("kubeopera.io", read, "tenants")},
		wantC: []rbacv1.PolicyRule{rule("", read, "namespaces"), rule("kubeopera.io", read, "tenants")},
	}, {
		name:   "a rule mixing scopes is split by resource",
		in:     []rbacv1.PolicyRule{rule("", read, "nodes", "services")},
		wantNS: []rbacv1.PolicyRule{rule("", read, "services")},
		wantC:  []rbacv1.PolicyRule{rule("", read, "nodes")},
	}, {
		name:  "non-resource URLs are cluster-wide",
		in:    []rbacv1.PolicyRule{{NonResourceURLs: []string{"/metrics"}, Verbs: []string{"get"}}},
		wantC: []rbacv1.PolicyRule{{NonResourceURLs: []string{"/metrics"}, Verbs: []string{"get"}}},
	}, {
		name:    "unknown scope",
		in:      []rbacv1.PolicyRule{rule("example.com", read, "widgets")},
		wantErr: `cannot tell whether "example.com/widgets" is namespaced`,
	}, {
		name:    "wildcard verb",
		in:      []rbacv1.PolicyRule{rule("", []string{"*"}, "secrets")},
		wantErr: "wildcard",
	}, {
		name:    "wildcard resource",
		in:      []rbacv1.PolicyRule{rule("apps", read, "*")},
		wantErr: "wildcard",
	}} {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			ns, cl, err := splitRules(tc.in, table)
			if tc.wantErr != "" {
				g.Expect(err).To(MatchError(ContainSubstring(tc.wantErr)))
				return
			}
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(ns).To(Equal(tc.wantNS))
			g.Expect(cl).To(Equal(tc.wantC))
		})
	}
}
