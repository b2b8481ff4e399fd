package controlplane

// RBAC of the ControlPlane reconciler. The operator creates Roles for the operand workloads, so it
// must itself hold every permission those Roles grant (Kubernetes refuses privilege escalation);
// that is why pods and leases appear here although the operator never touches them itself.
//
// +kubebuilder:rbac:groups=datasance.com,resources=controlplanes,verbs=get;list;watch;update;patch
// +kubebuilder:rbac:groups=datasance.com,resources=controlplanes/status,verbs=get;update;patch
// +kubebuilder:rbac:groups="",resources=services;secrets;configmaps;serviceaccounts;persistentvolumeclaims,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups="",resources=pods,verbs=get;list;watch
// +kubebuilder:rbac:groups="",resources=events,verbs=create;patch
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch
// +kubebuilder:rbac:groups=apps,resources=deployments;statefulsets,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups=networking.k8s.io,resources=ingresses,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups=rbac.authorization.k8s.io,resources=roles;rolebindings,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups=coordination.k8s.io,resources=leases,verbs=get;list;watch;create;update;patch;delete
