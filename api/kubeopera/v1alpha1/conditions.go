package v1alpha1

// Annotations an administrator sets on a KubeOperaApp being deleted, to let its cleanup finish
// without a step that cannot complete. Each is recorded with a Warning Event.
const (
	// AnnotationSkipGitCleanup "true": do not remove the app's folder from Git (the repository
	// or its credentials are gone for good). The folder stays; Flux no longer reads it.
	AnnotationSkipGitCleanup = "kubeopera.io/skip-git-cleanup"
	// AnnotationAbandonKustomization "true": stop waiting for the Kustomization's deletion
	// (Flux is not running in the vCluster). What it applied may still run until Flux prunes it.
	AnnotationAbandonKustomization = "kubeopera.io/abandon-kustomization"
)

// AnnotationCreateGitBranch "true" on a KubeOperaApp lets the operator create spec.git.branch
// when the repository has branches but not that one. Without it such an app is refused with
// ReasonGitBranchNotFound and nothing is pushed (a typo in the branch must not start an orphan
// branch). An empty repository gets its first branch either way.
const AnnotationCreateGitBranch = "kubeopera.io/create-git-branch"

// AnnotationPlacement is the operator's durable record of where an app was placed, written on
// the KubeOperaApp before anything is written to Git or the vCluster, and moved to a new
// placement only once the old folder is removed (or left, with ReasonOldFolderLeft). Its value
// is JSON: {"tenant": <Tenant name>, "url": <repository>, "branch": <branch>, "path": <folder>,
// "secretName": <push Secret, absent when anonymous>}. status.tenant, status.repository,
// status.branch and status.path mirror it; a status that was lost (a restore without the status
// subresource, a status wipe) is restored from it, so deletion still finds what to clean. Only
// the operator writes it; changing it changes only where the cleanup looks, and the Git writer
// removes nothing but files this app's ownership marker lists.
const AnnotationPlacement = "kubeopera.io/placement"

// AnnotationAdoptFolder on a KubeOperaApp names the UID of an earlier app of the same namespace
// and name whose folder (left behind, e.g. deleted with kubeopera.io/skip-git-cleanup) this app
// may take over. Folders belong to an app's UID, never to its name: without the annotation such a
// folder is PathConflict, as is one of an app of the same name on another host cluster.
const AnnotationAdoptFolder = "kubeopera.io/adopt-folder"

// AnnotationRequestedBy on a KubeOperaApp names who asked for its current spec (a user or
// system the KubeOpera API authenticated). The operator copies it into the KubeOperaApp trailer
// of the commit it makes for that spec (requested-by), so Git's history says who asked. It is
// what the annotation's writer claims: anyone who may edit the app may set it.
const AnnotationRequestedBy = "kubeopera.io/requested-by"

// Finalizer is added on the first reconcile; its removal ends the cleanup of the vCluster and Git.
const Finalizer = "kubeopera.io/app-cleanup"

// SecretFinalizer is held on a host Secret an app pushes to Git with (its spec.git.secretRef, or
// the push Secret recorded in AnnotationPlacement) for as long as any KubeOperaApp of the
// namespace names it, deleted or not: deleting the namespace (or the Secret) leaves it readable
// until every app has removed its folder with it.
const SecretFinalizer = "kubeopera.io/git-credentials-in-use" //nolint:gosec // G101: a finalizer name, not a credential

// LabelFluxCredentials marks a host Secret as read-only Git credentials that may be copied into
// a vCluster for Flux (value "true"). spec.git.fluxSecretRef is refused without it, so that no
// Secret is copied to a tenant by accident (an Opaque basic-auth Secret of some other service),
// and spec.git.secretRef is refused with it: the operator never pushes with a credential that is
// declared copyable.
const LabelFluxCredentials = "kubeopera.io/flux-credentials" //nolint:gosec // G101: a label name, not a credential

// Condition types of a KubeOperaApp.
const (
	// ConditionReady: the operator's part is done (tenant resolved, manifests committed, Flux
	// objects in place). It does not wait for Flux: see ConditionSynced.
	ConditionReady = "Ready"
	// ConditionTenantResolved: the Tenant and a client for its vCluster are available.
	ConditionTenantResolved = "TenantResolved"
	// ConditionManifestsCommitted: the rendered manifests are pushed to Git.
	ConditionManifestsCommitted = "ManifestsCommitted"
	// ConditionFluxConfigured: the GitRepository and Kustomization exist in the vCluster.
	ConditionFluxConfigured = "FluxConfigured"
	// ConditionSynced: Flux applied a revision of the branch that holds the app's current
	// folder (the pushed commit, or a later commit of other apps that left the folder as it is)
	// and the Kustomization is Ready, which (wait: true) means every applied object is healthy.
	ConditionSynced = "Synced"
	// ConditionReconciling (kstatus): True while the app's generation is still being worked on:
	// a step failed and is retried, the operator waits for something outside it (a Tenant, Flux
	// applying the commit), or a deletion is under way. Its reason and message are those of the
	// condition that holds the app back. Absent otherwise.
	ConditionReconciling = "Reconciling"
	// ConditionStalled (kstatus): True when nothing more is tried until the app or an object it
	// references changes (a terminal failure: the reason is Ready's), or when a deletion waits
	// past its timeout (KustomizationStuck). Absent otherwise.
	ConditionStalled = "Stalled"
)

// Reasons. UpperCamel and stable: the KubeOpera API and dashboards read them.
const (
	ReasonSucceeded   = "Succeeded"
	ReasonProgressing = "Progressing"
	// ReasonProgressingWithRetry: on Reconciling, a failed pass is retried with backoff (Ready
	// carries the failure's own reason).
	ReasonProgressingWithRetry     = "ProgressingWithRetry"
	ReasonTenantNotFound           = "TenantNotFound"
	ReasonTenantNotReady           = "TenantNotReady"
	ReasonTenantCloudSpaceMismatch = "TenantCloudSpaceMismatch"
	ReasonTenantAPIUnavailable     = "TenantAPIUnavailable"
	ReasonTenantPinned             = "TenantPinned"
	ReasonKubeconfigInvalid        = "KubeconfigInvalid"
	ReasonVClusterUnreachable      = "VClusterUnreachable"
	ReasonRegistrySecretNotFound   = "RegistrySecretNotFound"
	ReasonGitSecretNotFound        = "GitSecretNotFound"
	ReasonGitAuthFailed            = "GitAuthFailed"
	// ReasonGitForbidden: the Git server answered HTTP 403 (a rate limit, an IP allow-list, an
	// archived repository, a token without the scope): retried with the backoff, and a move keeps
	// the old folder's cleanup pending rather than leaving the folder behind.
	ReasonGitForbidden          = "GitForbidden"
	ReasonGitFailed             = "GitFailed"
	ReasonPushConflict          = "PushConflict"
	ReasonFluxConfigFailed      = "FluxConfigFailed"
	ReasonKustomizationNotReady = "KustomizationNotReady"
	// ReasonSourceNotReady: Flux's GitRepository in the vCluster cannot fetch (a revoked or
	// missing read credential, a folder gone from the branch), so the pushed commit cannot reach
	// the vCluster; the message is the GitRepository's Ready condition.
	ReasonSourceNotReady     = "SourceNotReady"
	ReasonRevisionNotApplied = "RevisionNotApplied"
	ReasonDeleteFailed       = "DeleteFailed"
	ReasonDeleting           = "Deleting"
	// ReasonVClusterRequestFailed: the vCluster answered but refused a request (forbidden,
	// invalid, conflict); VClusterUnreachable is used when it did not answer at all.
	ReasonVClusterRequestFailed = "VClusterRequestFailed"
	// ReasonPathConflict: the app's Git folder equals, contains or lies inside the folder of
	// another app (its ownership marker names the other app). Nothing is written.
	ReasonPathConflict = "PathConflict"
	// ReasonRegistrySecretInvalid: spec.registry.secretRef names a Secret that is not of type
	// kubernetes.io/dockerconfigjson or kubernetes.io/dockercfg. It is never copied.
	ReasonRegistrySecretInvalid = "RegistrySecretInvalid"
	// ReasonKustomizationStuck: the deleted Kustomization is still there after the timeout;
	// deletion keeps waiting (see AnnotationAbandonKustomization).
	ReasonKustomizationStuck = "KustomizationStuck"
	// ReasonRepositoryTooLarge: the shallow clone of the app's repository branch is larger
	// than the operator's limit (--app-max-git-repository-size). Nothing is pushed.
	ReasonRepositoryTooLarge = "RepositoryTooLarge"
	// ReasonManifestsTooLarge: the app's rendered manifests are larger than one app may write
	// (--app-max-folder-size). Nothing is written until the spec changes.
	ReasonManifestsTooLarge = "ManifestsTooLarge"
	// ReasonGitHostNotAllowed: spec.git.url names a host the operator may not connect to: one
	// outside --app-allowed-git-hosts, or, while that list is empty, a cluster-internal or
	// private host (unless --app-allow-internal-git-hosts). Nothing is fetched or pushed.
	ReasonGitHostNotAllowed = "GitHostNotAllowed"
	// ReasonVClusterServerNotAllowed: the Tenant's kubeconfig names an API server outside the
	// operator's allow-list (--app-allowed-vcluster-servers, by default the in-cluster Services).
	// It is never contacted.
	ReasonVClusterServerNotAllowed = "VClusterServerNotAllowed"
	// ReasonInvalidSpec: the spec was admitted, but the API server would refuse the Deployment
	// rendered from it (an env var name or fieldRef, a resource quantity the pod validation
	// refuses; the message names the field). Nothing is committed until the spec changes.
	ReasonInvalidSpec = "InvalidSpec"

	// ReasonGitSecretInvalid: a Secret named by spec.git.secretRef or fluxSecretRef is not a
	// Git credential (a type other than Opaque or kubernetes.io/basic-auth, e.g. a
	// ServiceAccount token, or a key no Git credential shape has). Nothing is fetched, pushed
	// or copied; the Secret watch brings the app back.
	ReasonGitSecretInvalid = "GitSecretInvalid"

	// ReasonGitInsecureTransport: credentials would be sent over plain http:// and
	// --app-allow-insecure-git-http is not set. Nothing is contacted.
	ReasonGitInsecureTransport = "GitInsecureTransport"

	// ReasonFluxSecretRefused: spec.git.fluxSecretRef names a Secret without LabelFluxCredentials,
	// or one the operator pushes with (the app's spec.git.secretRef, the push Secret of another
	// app of the namespace, or one holding the credential of any app that writes to the same
	// repository): it would let the vCluster's administrators push. Nothing is written to Git,
	// and the pass that refuses it deletes the app's copy in the vCluster.
	ReasonFluxSecretRefused = "FluxSecretRefused"

	// ReasonPushSecretExposed: spec.git.secretRef names a Secret labelled LabelFluxCredentials
	// (declared copyable into vClusters), or one holding the same credential as the Flux Secret
	// of an app that writes to the same repository. The operator does not push with it; a
	// credential that may have been copied to a tenant should be rotated. Nothing is written.
	ReasonPushSecretExposed = "PushSecretExposed"

	// ReasonGitPathNotAllowed: spec.git.path is the repository root, in a dot-folder, or not
	// inside <prefix>/<host namespace>/, the folder of the app's namespace
	// (--app-git-path-prefix). Nothing is written.
	ReasonGitPathNotAllowed = "GitPathNotAllowed"

	// ReasonRepositoryShared: spec.git.url names a repository that holds the apps of another
	// CloudSpace (its oldest app's), whose read-only Flux credential would let this CloudSpace's
	// vCluster read them, and the operator does not run with --app-allow-shared-repositories.
	// Nothing is read or written; the app is reconciled again when that CloudSpace's apps
	// leave the repository.
	ReasonRepositoryShared = "RepositoryShared"

	// ReasonFolderNotOwned: spec.git.path holds content no app wrote (no ownership marker of
	// this app): it is never taken over. Retried with the backoff; nothing is pushed.
	ReasonFolderNotOwned = "FolderNotOwned"

	// ReasonGitBranchNotFound: spec.git.branch does not exist in a repository that has other
	// branches, and the app does not carry AnnotationCreateGitBranch "true". Retried with the
	// backoff (someone may create the branch); nothing is pushed.
	ReasonGitBranchNotFound = "GitBranchNotFound"

	// ReasonNamespaceReserved: the app namespace in the vCluster (spec.targetNamespace, or the
	// app's name) is kube-*, flux-system or the app's Flux namespace, or the Flux namespace is
	// kube-*: the namespaces of the vCluster's own system and of Flux are never an app's.
	// Nothing is written; terminal (both fields are immutable: the app is recreated).
	ReasonNamespaceReserved = "NamespaceReserved"

	// ReasonVClusterObjectNotOwned: an object the operator would write in the vCluster (a
	// copied Secret, a Flux object, the app's ServiceAccount, Role or RoleBinding) exists there
	// without the operator's managed-by label: it is the tenant's, and is never overwritten or
	// deleted. Retried with the backoff (the tenant may rename its object); the retries write
	// nothing.
	ReasonVClusterObjectNotOwned = "VClusterObjectNotOwned"

	// ReasonIngressHostNotAllowed: spec.ingress.host is outside the operator's Ingress host
	// allow-list (--app-allowed-ingress-hosts). Nothing is pushed; terminal until the spec or
	// the flag changes.
	ReasonIngressHostNotAllowed = "IngressHostNotAllowed"
	// ReasonClusterIssuerNotAllowed: spec.ingress.clusterIssuer is outside the operator's
	// ClusterIssuer allow-list (--app-allowed-cluster-issuers). Nothing is pushed; terminal
	// until the spec or the flag changes.
	ReasonClusterIssuerNotAllowed = "ClusterIssuerNotAllowed"
	// ReasonIngressAddressPending (Synced): Flux applied the app, but its Ingress in the
	// vCluster has no load-balancer address yet (no ingress controller has admitted it), so the
	// app cannot be reached at status.url.
	ReasonIngressAddressPending = "IngressAddressPending"
	// ReasonCertificateNotReady (Synced): a cert-manager Certificate for the Ingress's TLS
	// Secret exists in the vCluster and is not Ready (being issued, or refused by its issuer):
	// https:// at status.url does not serve a valid certificate yet.
	ReasonCertificateNotReady = "CertificateNotReady"
)

// Event reasons that are not condition reasons: one-off Warning Events of a move or a deletion.
const (
	// ReasonOldFolderLeft: after a move, the old folder could not be removed because the push
	// Secret recorded for the old placement is gone or refused there. The move completes; the
	// old folder stays in the old repository (Flux no longer reads it).
	ReasonOldFolderLeft = "OldFolderLeft"
	// ReasonVClusterCleanupAbandoned: a deletion went on without cleaning the vCluster, which
	// could not be reached or refused the cleanup, because the app carries
	// AnnotationAbandonKustomization "true". What Flux applied there may still run.
	ReasonVClusterCleanupAbandoned = "VClusterCleanupAbandoned"
)
