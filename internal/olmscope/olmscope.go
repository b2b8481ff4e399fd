// Package olmscope knows the scope of the resources of Kubernetes' built-in API groups: which
// are cluster-scoped and which namespaced. hack/olmtool uses it to split the manager's RBAC into
// the CSV's clusterPermissions and permissions, and test/olm to check the bundle it wrote. Our own
// and other CRDs are not here: their scope is read from the CRD.
//
// The tables are checked against a real kube-apiserver (olmscope_test.go): every resource it
// serves must be listed, with its scope. An API that is alpha, and so off by default, may be
// listed without being served.
package olmscope

// clusterScoped lists the cluster-scoped resources of the built-in API groups.
var clusterScoped = map[string][]string{
	"":                             {"componentstatuses", "namespaces", "nodes", "persistentvolumes"},
	"admissionregistration.k8s.io": {"mutatingadmissionpolicies", "mutatingadmissionpolicybindings", "mutatingwebhookconfigurations", "validatingadmissionpolicies", "validatingadmissionpolicybindings", "validatingwebhookconfigurations"},
	"apiextensions.k8s.io":         {"customresourcedefinitions"},
	"apiregistration.k8s.io":       {"apiservices"},
	"authentication.k8s.io":        {"selfsubjectreviews", "tokenreviews"},
	"authorization.k8s.io":         {"selfsubjectaccessreviews", "selfsubjectrulesreviews", "subjectaccessreviews"},
	"certificates.k8s.io":          {"certificatesigningrequests", "clustertrustbundles"},
	"flowcontrol.apiserver.k8s.io": {"flowschemas", "prioritylevelconfigurations"},
	"internal.apiserver.k8s.io":    {"storageversions"},
	"networking.k8s.io":            {"ingressclasses", "ipaddresses", "servicecidrs"},
	"node.k8s.io":                  {"runtimeclasses"},
	"rbac.authorization.k8s.io":    {"clusterrolebindings", "clusterroles"},
	"resource.k8s.io":              {"deviceclasses", "devicetaintrules", "resourceslices"},
	"scheduling.k8s.io":            {"priorityclasses"},
	"storage.k8s.io":               {"csidrivers", "csinodes", "storageclasses", "volumeattachments", "volumeattributesclasses"},
	"storagemigration.k8s.io":      {"storageversionmigrations"},
}

// namespaced lists the namespaced resources of the built-in API groups.
var namespaced = map[string][]string{
	"":                          {"bindings", "configmaps", "endpoints", "events", "limitranges", "persistentvolumeclaims", "pods", "podtemplates", "replicationcontrollers", "resourcequotas", "secrets", "serviceaccounts", "services"},
	"apps":                      {"controllerrevisions", "daemonsets", "deployments", "replicasets", "statefulsets"},
	"authorization.k8s.io":      {"localsubjectaccessreviews"},
	"autoscaling":               {"horizontalpodautoscalers"},
	"batch":                     {"cronjobs", "jobs"},
	"certificates.k8s.io":       {"podcertificaterequests"},
	"coordination.k8s.io":       {"leasecandidates", "leases"},
	"discovery.k8s.io":          {"endpointslices"},
	"events.k8s.io":             {"events"},
	"networking.k8s.io":         {"ingresses", "networkpolicies"},
	"policy":                    {"poddisruptionbudgets"},
	"rbac.authorization.k8s.io": {"rolebindings", "roles"},
	"resource.k8s.io":           {"resourceclaims", "resourceclaimtemplates"},
	"storage.k8s.io":            {"csistoragecapacities"},
}

// Builtins returns the scope of every listed built-in resource, keyed "group/resource" (the
// core group is "", so "/namespaces"): true for cluster-scoped, false for namespaced. The map is
// the caller's to extend.
func Builtins() map[string]bool {
	out := make(map[string]bool, 64)
	for g, rs := range clusterScoped {
		for _, r := range rs {
			out[g+"/"+r] = true
		}
	}
	for g, rs := range namespaced {
		for _, r := range rs {
			out[g+"/"+r] = false
		}
	}
	return out
}
