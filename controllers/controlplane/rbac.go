package controlplane

// RBAC of the ControlPlane reconciler, no more than the suite sees it use (testenv.CheckRBACUse
// fails controllers/controlplane's suite on a granted permission it never used; rbac_test.go lists
// the exceptions with their reasons; docs/olm.md, "Least privilege, proven"), plus what Kubernetes
// requires besides:
//
//   - The operator creates Roles for the operand workloads (resources.ControllerRules,
//     resources.RouterRules), so it must itself hold every permission those Roles grant
//     (Kubernetes refuses privilege escalation): that is why pods and leases appear here although
//     the operator never touches them itself, and why ConfigMaps, Services and StatefulSets carry
//     verbs the reconciler does not send.
//   - Objects written by server-side apply need create as well as patch: the API server
//     authorizes the create inside the PATCH that makes a new object.
//   - ControlPlanes and their status are written by patch only; Roles and RoleBindings are
//     created once and never changed; nothing deletes a PVC, ServiceAccount or RBAC object.
//   - Deletes are granted by name wherever the names are fixed (docs/controlplane.md, "The
//     operator's own RBAC"): deleteOwned removes the NATS StatefulSet, Services and
//     PodDisruptionBudget, the Controller Ingress and PodDisruptionBudget, and the credential
//     Secrets the spec no longer asks for; the PVC and CA Secret names are for the admission
//     plugin (below). ConfigMaps and Services keep delete whatever the name because the
//     Controller's Role grants it (first item); pods and ReplicaSets because taking over
//     retires objects whose names the Datasance operator's workloads generated (next item).
//   - Taking over from the Datasance operator (takeover.go) deletes its Deployments and
//     StatefulSet (orphaning their pods), its Controller Ingress, and, once this operator's pods
//     can take their place, the ReplicaSets and pods they left: hence delete on Deployments,
//     ReplicaSets and pods, and list (uncached, no watch) on ReplicaSets and pods.
//   - Events through events.k8s.io (the manager's GetEventRecorder); the core Events that
//     announce a new leader are granted by the leader-election Role. Core Events are listed
//     (uncached) to read why the NATS StatefulSet cannot create its pods (workloads.go).
//   - The OwnerReferencesPermissionEnforcement admission plugin (on by default on OpenShift; the
//     suites' API servers run it, test/testenv): every owned object carries an owner reference
//     with blockOwnerDeletion, which needs update on controlplanes/finalizers (nothing sends that
//     request: the plugin asks the authorizer), and removing the owner reference of an existing
//     object (releaseDataStore: the SQLite PVC, the CA Secrets, the JetStream key Secret, the
//     NATS JWT bundle ConfigMap) needs delete on it, hence delete on PVC controller-sqlite and
//     the four CA Secrets although the operator never deletes them. The JetStream key Secret's
//     name carries the ControlPlane's, so its release is refused where the plugin runs
//     (releaseDataStore: DataStoreOwned, with the command that releases it).
//   - On OpenShift the Controller and NATS ServiceAccounts are bound to OpenShift's ClusterRole
//     system:openshift:scc:nonroot-v2 (openshift.go). Binding a role needs its permissions or
//     bind on it: bind on that one ClusterRole, which the authorizer checks inside the RoleBinding
//     create (no request of its own).
//
// +kubebuilder:rbac:groups=datasance.com,resources=controlplanes,verbs=get;list;watch;patch
// +kubebuilder:rbac:groups=datasance.com,resources=controlplanes/status,verbs=patch
// +kubebuilder:rbac:groups=datasance.com,resources=controlplanes/finalizers,verbs=update
// +kubebuilder:rbac:groups="",resources=services;configmaps,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups="",resources=secrets,verbs=get;list;watch;create;patch
// +kubebuilder:rbac:groups="",resources=secrets,verbs=delete,resourceNames=controller-db-credentials;controller-auth-credentials;controller-vault-credentials;router-site-ca;default-router-local-ca;nats-site-ca;default-nats-local-ca
// +kubebuilder:rbac:groups="",resources=serviceaccounts,verbs=get;list;watch;create;patch
// +kubebuilder:rbac:groups="",resources=persistentvolumeclaims,verbs=get;list;watch;create;patch
// +kubebuilder:rbac:groups="",resources=persistentvolumeclaims,verbs=delete,resourceNames=controller-sqlite
// +kubebuilder:rbac:groups="",resources=pods,verbs=get;list;watch;delete
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch
// +kubebuilder:rbac:groups="",resources=events,verbs=list
// +kubebuilder:rbac:groups=apps,resources=deployments,verbs=get;list;watch;create;patch
// +kubebuilder:rbac:groups=apps,resources=deployments,verbs=delete,resourceNames=controller;router
// +kubebuilder:rbac:groups=apps,resources=replicasets,verbs=list;delete
// +kubebuilder:rbac:groups=apps,resources=statefulsets,verbs=get;list;watch;create;update;patch
// +kubebuilder:rbac:groups=apps,resources=statefulsets,verbs=delete,resourceNames=nats
// +kubebuilder:rbac:groups=networking.k8s.io,resources=ingresses,verbs=get;list;watch;create;patch
// +kubebuilder:rbac:groups=networking.k8s.io,resources=ingresses,verbs=delete,resourceNames=controller;pot-controller
// +kubebuilder:rbac:groups=policy,resources=poddisruptionbudgets,verbs=get;create;patch
// +kubebuilder:rbac:groups=policy,resources=poddisruptionbudgets,verbs=delete,resourceNames=controller;nats
// +kubebuilder:rbac:groups=rbac.authorization.k8s.io,resources=roles,verbs=get;list;watch;create;patch
// +kubebuilder:rbac:groups=rbac.authorization.k8s.io,resources=rolebindings,verbs=get;list;watch;create
// +kubebuilder:rbac:groups=rbac.authorization.k8s.io,resources=clusterroles,verbs=bind,resourceNames=system:openshift:scc:nonroot-v2
// +kubebuilder:rbac:groups=coordination.k8s.io,resources=leases,verbs=get;list;watch;create;update;patch;delete
