package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"

	rbacv1 "k8s.io/api/rbac/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"

	"github.com/kubeopera/kubeopera-operator/internal/olmscope"
)

// A CSV's `permissions` become Roles in the operator's namespace and in every target namespace;
// its `clusterPermissions` become ClusterRoles. The manager role generated from the RBAC markers
// is one ClusterRole, so it is split here: rules on namespaced resources go to the namespaced
// role, rules on cluster-scoped resources (and on resources named with -cluster-wide) go to the
// cluster role. A resource whose scope is not known is an error, never a guess.

// scopeTable answers "is group/resource granted cluster-wide?".
type scopeTable struct {
	cluster     map[string]bool // "group/resource" -> cluster-scoped
	clusterWide map[string]bool // namespaced, but granted cluster-wide on purpose
}

func newScopeTable(crdDirs, clusterWide []string) (*scopeTable, error) {
	t := &scopeTable{cluster: olmscope.Builtins(), clusterWide: map[string]bool{}}
	for _, dir := range crdDirs {
		files, err := filepath.Glob(filepath.Join(dir, "*.yaml"))
		if err != nil {
			return nil, err
		}
		for _, f := range files {
			docs, err := readDocuments(f)
			if err != nil {
				return nil, err
			}
			for _, d := range docs {
				if d["kind"] != "CustomResourceDefinition" {
					continue
				}
				var crd apiextensionsv1.CustomResourceDefinition
				if err := convert(d, &crd); err != nil {
					return nil, fmt.Errorf("%s: %w", f, err)
				}
				t.cluster[crd.Spec.Group+"/"+crd.Spec.Names.Plural] = crd.Spec.Scope == apiextensionsv1.ClusterScoped
			}
		}
	}
	for _, gr := range clusterWide {
		if _, known := t.cluster[gr]; !known {
			return nil, fmt.Errorf("-cluster-wide %s: unknown resource (want group/resource, e.g. kubeopera.io/tenants)", gr)
		}
		t.clusterWide[gr] = true
	}
	return t, nil
}

// isCluster reports whether a rule on group/resource (a subresource counts as its resource) belongs
// in the cluster role.
func (t *scopeTable) isCluster(group, resource string) (bool, error) {
	gr := group + "/" + strings.SplitN(resource, "/", 2)[0]
	cluster, known := t.cluster[gr]
	if !known {
		return false, fmt.Errorf("cannot tell whether %q is namespaced: add its CRD with -crds or the resource to the tables in internal/olmscope", gr)
	}
	return cluster || t.clusterWide[gr], nil
}

// splitRules divides rules between the namespaced and the cluster role. A rule whose resources fall
// on both sides is split by resource; wildcards are refused.
func splitRules(rules []rbacv1.PolicyRule, t *scopeTable) (namespaced, cluster []rbacv1.PolicyRule, err error) {
	for _, r := range rules {
		if slices.Contains(r.Verbs, "*") || slices.Contains(r.APIGroups, "*") || slices.Contains(r.Resources, "*") ||
			slices.Contains(r.NonResourceURLs, "*") {
			return nil, nil, fmt.Errorf("wildcard in rule %s: grant explicit groups, resources and verbs", ruleString(r))
		}
		if len(r.NonResourceURLs) > 0 {
			cluster = append(cluster, r)
			continue
		}
		var ns, cl []string
		for _, res := range r.Resources {
			var inCluster []bool
			for _, g := range r.APIGroups {
				c, err := t.isCluster(g, res)
				if err != nil {
					return nil, nil, err
				}
				inCluster = append(inCluster, c)
			}
			if slices.Contains(inCluster, true) && slices.Contains(inCluster, false) {
				return nil, nil, fmt.Errorf("rule %s mixes API groups of different scopes for %q: write one rule per group", ruleString(r), res)
			}
			if len(inCluster) > 0 && inCluster[0] {
				cl = append(cl, res)
			} else {
				ns = append(ns, res)
			}
		}
		if len(ns) > 0 {
			rr := *r.DeepCopy()
			rr.Resources = ns
			namespaced = append(namespaced, rr)
		}
		if len(cl) > 0 {
			rr := *r.DeepCopy()
			rr.Resources = cl
			cluster = append(cluster, rr)
		}
	}
	return namespaced, cluster, nil
}

func ruleString(r rbacv1.PolicyRule) string {
	return fmt.Sprintf("{groups %q, resources %q, verbs %q}", r.APIGroups, r.Resources, r.Verbs)
}

func runRBAC(args []string, _ io.Writer) error {
	fs := flag.NewFlagSet("rbac", flag.ContinueOnError)
	in := fs.String("in", "", "the role generated from the RBAC markers (config/rbac/role.yaml)")
	out := fs.String("out", "", "file to write the two ClusterRoles to")
	nsName := fs.String("namespaced-name", "", "name of the ClusterRole with the namespaced rules")
	clName := fs.String("cluster-name", "", "name of the ClusterRole with the cluster-wide rules")
	var crdDirs, clusterWide listFlag
	fs.Var(&crdDirs, "crds", "directory of CRD manifests whose scope is looked up (repeatable)")
	fs.Var(&clusterWide, "cluster-wide", "group/resource of a namespaced resource granted cluster-wide (repeatable)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if err := required(fs, "in", "out", "namespaced-name", "cluster-name"); err != nil {
		return err
	}
	table, err := newScopeTable(crdDirs, clusterWide)
	if err != nil {
		return err
	}
	docs, err := readDocuments(*in)
	if err != nil {
		return err
	}
	var rules []rbacv1.PolicyRule
	for _, d := range docs {
		if d["kind"] != "ClusterRole" && d["kind"] != "Role" {
			return fmt.Errorf("%s: unexpected %v: want the ClusterRole (or Roles) generated from RBAC markers", *in, d["kind"])
		}
		var role rbacv1.ClusterRole
		if err := convert(d, &role); err != nil {
			return fmt.Errorf("%s: %w", *in, err)
		}
		rules = append(rules, role.Rules...)
	}
	if len(rules) == 0 {
		return errors.New(*in + ": no rules")
	}
	nsRules, clRules, err := splitRules(rules, table)
	if err != nil {
		return err
	}
	header := fmt.Sprintf("# Code generated by hack/olmtool rbac from %s. DO NOT EDIT.\n"+
		"# %s: namespaced rules (CSV permissions); %s: cluster-wide rules (CSV clusterPermissions).\n",
		filepath.ToSlash(*in), *nsName, *clName)
	if err := os.MkdirAll(filepath.Dir(*out), 0o750); err != nil {
		return err
	}
	return writeDocuments(*out, header, clusterRole(*nsName, nsRules), clusterRole(*clName, clRules))
}

func clusterRole(name string, rules []rbacv1.PolicyRule) map[string]any {
	if rules == nil {
		rules = []rbacv1.PolicyRule{}
	}
	return map[string]any{
		"apiVersion": rbacv1.SchemeGroupVersion.String(),
		"kind":       "ClusterRole",
		"metadata":   map[string]any{"name": name},
		"rules":      rules,
	}
}
