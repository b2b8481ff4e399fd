package app

// RBAC of the KubeOperaApp reconciler, no more than the suites see it use (testenv.CheckRBACUse
// fails controllers/app's suite on a granted permission it never used, rbac_test.go lists the
// exceptions with their reasons; docs/olm.md, "Least privilege, proven"):
//
//   - KubeOperaApps are read from the cache (list, watch) and written by patch only: the
//     finalizer is added and removed with a merge patch, the status with a status merge patch. No
//     get (nothing reads an app past the cache), no update, no delete, and no finalizers
//     subresource (the reconciler creates no host object owned by an app, so the API server's
//     OwnerReferencesPermissionEnforcement never asks for it).
//   - Tenants are read only, in the app's namespace (namespaced permissions in the bundle).
//   - Secrets are read: kubeconfig, Git and registry Secrets on the host; everything written goes
//     to the vCluster with the vCluster's own credentials. The one write is patch, of the
//     metadata only: the kubeopera.io/git-credentials-in-use finalizer on the Secrets apps push
//     with, added and removed with a merge patch under the resourceVersion (secretguard.go).
//   - Events through events.k8s.io (the manager's GetEventRecorder); the core Events that
//     announce a new leader are granted by the leader-election Role.
//
// +kubebuilder:rbac:groups=kubeopera.io,resources=kubeoperaapps,verbs=list;watch;patch
// +kubebuilder:rbac:groups=kubeopera.io,resources=kubeoperaapps/status,verbs=patch
// +kubebuilder:rbac:groups=kubeopera.io,resources=tenants,verbs=get;list;watch
// +kubebuilder:rbac:groups="",resources=secrets,verbs=get;list;watch;patch
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch
