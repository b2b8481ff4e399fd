package app

// RBAC of the KubeOperaApp reconciler. Removing a finalizer is an update, so no delete verb on
// kubeoperaapps is needed (the seed's controller had one; least privilege wins). Secrets are read
// only: kubeconfig, Git and registry Secrets on the host; everything written goes to the vCluster
// with the vCluster's own credentials.
//
// +kubebuilder:rbac:groups=kubeopera.io,resources=kubeoperaapps,verbs=get;list;watch;update;patch
// +kubebuilder:rbac:groups=kubeopera.io,resources=kubeoperaapps/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=kubeopera.io,resources=kubeoperaapps/finalizers,verbs=update
// +kubebuilder:rbac:groups=kubeopera.io,resources=tenants,verbs=get;list;watch
// +kubebuilder:rbac:groups="",resources=secrets,verbs=get;list;watch
// +kubebuilder:rbac:groups="",resources=events,verbs=create;patch
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch
