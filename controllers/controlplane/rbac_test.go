package controlplane_test

const (
	// watchListFallback: the informers stream their initial list in a watch (WatchList, served by
	// this API server); client-go falls back to LIST where the API server does not serve it.
	watchListFallback = "the informers' LIST fallback where the API server does not serve WatchList"
	// applyCreates: the API server authorizes the create inside a server-side apply PATCH that
	// makes a new object; the audit log shows the PATCH only.
	applyCreates = "server-side apply of a new object is authorized for create (inside the PATCH)"
	// escalation: an operand Role grants it, and Kubernetes lets the operator create that Role
	// only if it holds the permission itself.
	// ownerRefAdmission: OwnerReferencesPermissionEnforcement (test/testenv enables it) asks the
	// authorizer, not the API: blockOwnerDeletion needs update on the owner's finalizers, and
	// removing an owner reference from an existing object (releaseDataStore) needs delete on it.
	ownerRefAdmission = "OwnerReferencesPermissionEnforcement authorizes it inside the write (no request of its own)"
	escalation        = "granted by an operand Role (resources.ControllerRules, RouterRules): no escalation"
	// credentialDropped: applyCredentialSecrets deletes a credentials Secret the spec no longer
	// asks for (certificates are renewed in place, never deleted).
	credentialDropped = "deleteOwned removes the credentials Secret when the spec drops the block it serves; no test of this suite drops one"
)

// rbacUnusedHere lists the permissions of rbac.go this suite never exercises, each with the
// reason it stays (testenv.CheckRBACUse fails the suite on any other unused permission, and on
// any request of the reconciler the bundle's RBAC refuses).
var rbacUnusedHere = map[string]string{
	"list datasance.com/controlplanes":              watchListFallback,
	"list /configmaps":                              watchListFallback,
	"list /persistentvolumeclaims":                  watchListFallback,
	"list /secrets":                                 watchListFallback,
	"list /serviceaccounts":                         watchListFallback,
	"list /services":                                watchListFallback,
	"list apps/deployments":                         watchListFallback,
	"list apps/statefulsets":                        watchListFallback,
	"list networking.k8s.io/ingresses":              watchListFallback,
	"create policy/poddisruptionbudgets":            applyCreates,
	"list rbac.authorization.k8s.io/rolebindings":   watchListFallback,
	"list rbac.authorization.k8s.io/roles":          watchListFallback,
	"create /services":                              applyCreates,
	"create apps/deployments":                       applyCreates,
	"create apps/statefulsets":                      applyCreates,
	"create networking.k8s.io/ingresses":            applyCreates,
	"create rbac.authorization.k8s.io/roles":        applyCreates,
	"delete /configmaps":                            escalation,
	"update /configmaps":                            escalation,
	"update /services":                              escalation,
	"update apps/statefulsets":                      escalation,
	"get /pods":                                     escalation,
	"watch /pods":                                   escalation,
	"create coordination.k8s.io/leases":             escalation,
	"delete coordination.k8s.io/leases":             escalation,
	"get coordination.k8s.io/leases":                escalation,
	"list coordination.k8s.io/leases":               escalation,
	"patch coordination.k8s.io/leases":              escalation,
	"update coordination.k8s.io/leases":             escalation,
	"watch coordination.k8s.io/leases":              escalation,
	"update datasance.com/controlplanes/finalizers": ownerRefAdmission,
	"bind rbac.authorization.k8s.io/clusterroles system:openshift:scc:nonroot-v2": "the RBAC authorizer checks it inside the create of a RoleBinding to it (no request of its own)",
	"delete /persistentvolumeclaims controller-sqlite":                            ownerRefAdmission,
	"delete /secrets router-site-ca":                                              ownerRefAdmission,
	"delete /secrets default-router-local-ca":                                     ownerRefAdmission,
	"delete /secrets nats-site-ca":                                                ownerRefAdmission,
	"delete /secrets default-nats-local-ca":                                       ownerRefAdmission,
	"delete /secrets controller-db-credentials":                                   credentialDropped,
	"delete /secrets controller-auth-credentials":                                 credentialDropped,
	"delete /secrets controller-vault-credentials":                                credentialDropped,
	"delete networking.k8s.io/ingresses controller": "deleteOwned removes Ingress controller when the Controller Service " +
		"leaves Ingress mode; no test of this suite leaves it",
	"patch events.k8s.io/events": "a repeated event becomes a series, which the recorder patches; whether a run repeats one within the series window is timing",
}
