// Package app reconciles KubeOperaApp objects (kubeopera.io/v1alpha1): each app becomes a
// running application in its tenant's vCluster, only through Git and Flux. The operator never
// applies the Deployment, Service or Ingress itself.
//
// # One pass
//
//  1. Tenant (resolve.go). With spec.tenantCRName, that Tenant in the app's namespace, whose
//     kubeopera.io/cloudspace-id label must equal spec.cloudSpaceId (else TenantCloudSpaceMismatch,
//     not retried: a Tenant or app change brings the app back). Without it, the Tenant of the
//     CloudSpace that became Ready first (earliest Ready transition, ties by name). The result is
//     recorded in status.tenant and kept: later passes resolve to that Tenant only, and naming
//     another one is refused (TenantPinned). An app never moves to another vCluster.
//  2. vCluster client, from the Tenant's exported kubeconfig Secret (status.kubeconfigSecretRef,
//     else vc-<tenant>/config). vcluster exports https://localhost:8443 (for port-forwarding):
//     a server whose host is literally "localhost" is replaced by the vcluster Service,
//     https://<tenant>.<tenant namespace>.svc:443; any other server, IPs included, is used as
//     written. Credentials must be inline (exec plugins, auth providers and file references are
//     refused: KubeconfigInvalid). Clients are cached per Tenant, keyed by the Secret's UID,
//     resourceVersion and key: a pass reuses the client, a rotated kubeconfig replaces it.
//  3. vCluster preparation (vcluster.go): the app namespace is created directly (never through
//     Git, so Flux can never prune it); the registry pull Secret named by spec.registry, read
//     from the app's own namespace only, is copied by name, type and contents into it and kept in
//     sync (RegistrySecretNotFound while it is missing).
//  4. Git (git.go): the manifests are rendered deterministically (internal/render) into
//     <path>/{deployment,service,ingress,kustomization}.yaml, path defaulting to
//     apps/<targetNamespace>/<name>, and written with the Git writer (internal/gitops): one
//     local clone per repository and branch, fetched and reset before every write, changes of
//     apps reconciled together grouped into one commit and one push, non-fast-forward pushes
//     fetched, re-applied and retried, unchanged files never committed. The message names the
//     app and its generation. Credentials come from the Secret named by spec.git.secretRef:
//     HTTPS username+password, token (user "git" unless username is set) or bearerToken, or SSH
//     identity+known_hosts (host keys always verified); never in the URL (a URL with a password
//     is refused). Reasons: GitSecretNotFound, GitAuthFailed (refused or unusable credentials,
//     untrusted host key), PushConflict, GitFailed. A changed spec.git.path removes the old
//     folder.
//  5. Flux (flux.go): a GitRepository (url, branch, interval, secretRef to a copy of the Git
//     credentials in Flux's format) and a Kustomization (path, prune: true, wait: false,
//     targetNamespace = the app namespace, interval), both named <namespace>-<name> (cut and
//     hashed beyond 63 characters) in spec.flux.namespace, applied server-side with the typed Flux
//     API. The GitRepository carries reconcile.fluxcd.io/requestedAt = the app's commit, so Flux
//     fetches a new commit at once instead of at its next interval.
//  6. Read-back: status.appliedRevision is the Kustomization's lastAppliedRevision; Synced is True
//     when that is <branch>@sha1:<commit> of the app's commit (or of the current head, which
//     holds the same files) and the Kustomization is Ready for its current generation
//     (KustomizationNotReady / RevisionNotApplied otherwise).
//
// Ready means the operator's part is done (steps 1 to 5); it does not wait for Flux: Synced
// does. status.commit is the commit that last changed the app's folder (a later commit of
// another app in the same repository does not replace it); status.url is set when an Ingress
// is rendered. Events are recorded when Ready or Synced change status or reason (the failing
// step's reason and message are on Ready), and for Committed, TenantSelected, FolderRemoved,
// TenantGone, GitCleanupSkipped and KustomizationStuck. Messages never hold secret values.
//
// # Requeues (Options; defaults in options.go)
//
//   - a failure that depends on the vCluster or Git (TenantNotFound, TenantNotReady,
//     KubeconfigInvalid, VClusterUnreachable, VClusterRequestFailed, RegistrySecretNotFound,
//     Git reasons, FluxConfigFailed, DeleteFailed): 30s, doubling per consecutive failure of the
//     app, capped at 10m, reset by a success. The count lives in memory: after a restart every
//     app starts again at 30s;
//   - Flux has not applied the commit yet: every 15s; once Synced: every 10m (the vCluster is
//     not watched, and the Git folder is re-verified, repairing external edits);
//   - the Tenant CRD is not installed (TenantAPIUnavailable): every 5m;
//   - an invalid combination that no retry fixes (TenantCloudSpaceMismatch, TenantPinned, a bad
//     path): no requeue.
//
// Changes arrive as events, not by polling: the app itself (spec changes; an annotation change
// is a manual retry), the metadata of Secrets (the registry, Git and kubeconfig Secrets the apps
// reference; Secret data is read on demand and never cached) and Tenants. When the Tenant CRD is
// missing at start, the manager still starts without the Tenant watch; each pass checks again
// and reads Tenants uncached once the CRD exists.
//
// # Deletion (delete.go)
//
// Behind the kubeopera.io/app-cleanup finalizer, added on the first pass: delete the
// Kustomization and wait until it is gone (Flux prunes what it applied; after 5m the cleanup
// goes on, since kustomize-controller prunes from its inventory whenever it runs again), then
// the GitRepository and the copied Git credentials, the copied registry Secret unless another
// app of that vCluster namespace uses it, then remove the app's folder from Git with a commit,
// then the finalizer. Anything already gone counts as done. An unreachable vCluster is retried
// with the backoff (DeleteFailed). A Tenant that is gone or being deleted has nothing left to
// clean: the Git cleanup still runs, the finalizer is removed, a TenantGone Event says so. A
// missing Git credentials Secret (a namespace being deleted takes it with the app) skips the
// Git cleanup with a GitCleanupSkipped Event. The app namespace stays in the vCluster: it may
// hold objects the tenant created there, and it is empty of everything the operator and Flux
// put in it.
package app
