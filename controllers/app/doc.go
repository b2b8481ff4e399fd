// Package app reconciles KubeOperaApp objects (kubeopera.io/v1alpha1): each app becomes a
// running application in its tenant's vCluster, only through Git and Flux. The operator never
// applies the Deployment, Service or Ingress itself.
//
// # One pass
//
// Every pass runs under a deadline (Options.PassTimeout, --app-pass-timeout, default 3 min) so a
// slow vCluster or Git server holds a worker for at most that long; the status patch runs after
// it on the request's context and records why the pass ended.
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
//     written. The server must be in --app-allowed-vcluster-servers (default *.svc and
//     *.svc.cluster.local; VClusterServerNotAllowed, terminal, never contacted: allowlist.go).
//     Credentials must be inline (exec plugins, auth providers and file references are
//     refused: KubeconfigInvalid). Clients are cached per Tenant, keyed by the Secret's UID,
//     resourceVersion and key: a pass reuses the client, a rotated kubeconfig replaces it.
//  3. Inputs (checkInputs, vcluster.go), read before anything is written: the app namespace
//     must not be kube-*, flux-system or the Flux namespace, nor the Flux namespace kube-*
//     (NamespaceReserved, terminal); spec.ingress.host and the clusterIssuer of a TLS Ingress
//     must be in --app-allowed-ingress-hosts and --app-allowed-cluster-issuers when these are
//     set (ingress.go; IngressHostNotAllowed, ClusterIssuerNotAllowed, terminal); the registry pull
//     Secret named by spec.registry, read from the app's own namespace only, must be a
//     kubernetes.io/dockerconfigjson or dockercfg Secret (else RegistrySecretInvalid: it is
//     never copied; RegistrySecretNotFound while it is missing), and the app namespace is read
//     from the vCluster, which proves the vCluster answers (VClusterUnreachable). Then the
//     placement (Tenant, Git folder and the push Secret written with, placement.go) is recorded
//     right before the first write (recordPlacement): in the kubeopera.io/placement annotation,
//     in one patch with the finalizer, then in status (tenant, path, repository, branch). A pass
//     that dies before its deferred status patch still leaves what deletion needs, a status that
//     was wiped is restored from the annotation, and an app refused before it (no placement) was
//     never written anywhere: its deletion contacts nothing.
//  4. Git (git.go): the manifests are rendered deterministically (internal/render) into
//     <path>/{deployment,service,ingress,kustomization}.yaml, path defaulting to
//     <prefix>/<host namespace>/<name> (unique per host cluster, so two CloudSpaces sharing one
//     repository never collide). Every folder carries the Git writer's ownership marker
//     (.kubeopera-owner.yaml, the app's namespace/name and UID): a folder that equals, contains
//     or lies inside another app's is refused with PathConflict and nothing is written. The
//     files are written with the Git writer (internal/gitops): one
//     local clone per repository and branch, fetched and reset before every write, changes of
//     apps reconciled together grouped into one commit and one push, non-fast-forward pushes
//     fetched, re-applied and retried, unchanged files never committed. The message names the
//     app and its generation. Credentials come from the Secret named by spec.git.secretRef
//     (credentials.go), an Opaque or basic-auth Secret of one Git credential shape: HTTPS
//     username+password, token (user "git" unless username is set) or bearerToken, or SSH
//     identity+known_hosts (host keys always verified); any other type or key is
//     GitSecretInvalid, credentials over http:// are GitInsecureTransport unless
//     --app-allow-insecure-git-http; never in the URL (a URL with a password is refused). The
//     folder must lie inside <prefix>/<host namespace>/ (--app-git-path-prefix, default apps),
//     whatever spec.git.path says, never at the root or in a dot-folder (GitPathNotAllowed), and a folder holding content without this app's marker is
//     never taken over (FolderNotOwned). These are checked in step 3, before any write. Reasons: GitSecretNotFound, GitAuthFailed (refused or unusable credentials,
//     untrusted host key), PushConflict, PathConflict, GitFailed, GitHostNotAllowed; before any
//     of it, render.Validate refuses what the API server would refuse in the rendered
//     Deployment and admission cannot check (InvalidSpec, naming the field). A branch the
//     repository lacks is GitBranchNotFound unless kubeopera.io/create-git-branch is "true" (an
//     empty repository gets its first branch). A changed path, URL or branch writes the new
//     folder here; the old one is removed after Flux is re-pointed (step 6). The pass does not wait for the push (pushes.go): it submits the
//     folder (gitops.Writer.Submit) and ends without a status write; the writer's callback
//     adds the app to the workqueue when the batch is pushed or failed, and that pass reads the
//     outcome and goes on. The worker is free meanwhile, so a burst of apps is queued, and
//     pushed, together. Deletion and the removal of a moved folder wait (Writer.Apply).
//  5. vCluster (vcluster.go), after the commit, so that a Git failure leaves nothing in the
//     vCluster either: the app namespace is created directly (never through Git, so Flux can
//     never prune it) and the pull Secret is copied by name, type and contents into it and kept
//     in sync. The copy is recorded in status.registrySecret; a copy no longer referenced is
//     deleted unless another app of that vCluster namespace references it.
//  6. Flux (flux.go): a GitRepository (url, branch, interval, secretRef to a copy of the
//     read-only credentials of spec.git.fluxSecretRef in Flux's format, only the keys Flux reads
//     for the transport; none without it: the push credentials never enter the vCluster, and a
//     Secret not labelled kubeopera.io/flux-credentials or holding any push credential of the
//     repository is refused as fluxSecretRef, FluxSecretRefused, credentials.go) and a Kustomization (path, prune: true, wait: true,
//     targetNamespace = the app namespace, interval), both named <namespace>-<name> (cut and
//     hashed beyond 63 characters) in spec.flux.namespace, applied server-side with the typed Flux
//     API, only when the fields the operator's field manager owns differ (a Synced app in steady
//     state writes nothing to either API server and pushes nothing). The GitRepository carries reconcile.fluxcd.io/requestedAt = the app's commit, so Flux
//     fetches a new commit at once instead of at its next interval, and spec.sparseCheckout =
//     the app's folder, so the source holds nothing else. The Kustomization applies as the
//     app's ServiceAccount (<namespace>-<name> in the Flux namespace, bound to a Role in the
//     app namespace that writes deployments, services and ingresses and reads replicasets and
//     pods: nothing else), with spec.timeout = the interval. Every object the operator writes
//     in the vCluster carries app.kubernetes.io/managed-by=kubeopera-operator; one of the same
//     name without it is the tenant's, never overwritten or deleted (VClusterObjectNotOwned).
//     Then a move ends
//     (finishMove, git.go): with Flux reading the new folder, the old one is removed from the old
//     repository and branch with the push Secret recorded for it (never the new one: it would go
//     to the old host); credentials gone or refused there leave it (OldFolderLeft Event),
//     kubeopera.io/skip-git-cleanup leaves it on request, and the new placement is recorded.
//  7. Read-back: status.appliedRevision is the Kustomization's lastAppliedRevision; Synced is True
//     when that is <branch>@sha1:<commit> of a commit that holds the app's current folder (the
//     app's commit, this pass's head, or any commit whose tree of the folder equals the head's:
//     other apps' pushes to the branch do not unsync it; revisions.go, gitops.Writer.SameFolder)
//     and the Kustomization is Ready for its current generation
//     (KustomizationNotReady / RevisionNotApplied otherwise), and, for an app with an Ingress,
//     the Ingress has a load-balancer address (IngressAddressPending otherwise) and a
//     cert-manager Certificate of its TLS Secret, if the vCluster has one, is Ready
//     (CertificateNotReady otherwise).
//
// Ready means the operator's part is done (steps 1 to 6); it does not wait for Flux: Synced
// does. status.commit is the commit that last changed the app's folder (a later commit of
// another app in the same repository does not replace it), and status.history the last
// RevisionHistoryLimit such commits with their generation, pushedAt and appliedAt; status.url is set when an Ingress
// is rendered. Events are recorded when Ready or Synced change status or reason (the failing
// step's reason and message are on Ready), and for Committed, TenantSelected, FolderRemoved,
// TenantGone, GitCleanupSkipped, GitRepositoryGone, KustomizationAbandoned and VClusterCleanupAbandoned. Messages never hold secret values.
//
// # Failures and requeues (Options; defaults in options.go)
//
// A step that ends the pass returns an *outcome.Error (internal/outcome, the vocabulary the
// ControlPlane reconciler shares) with a condition, a reason and what comes next:
//
//   - outcome.Retry, for a failure that depends on the vCluster or Git (TenantNotFound, TenantNotReady,
//     KubeconfigInvalid, VClusterUnreachable, VClusterRequestFailed, RegistrySecretNotFound,
//     Git reasons, PathConflict, FluxConfigFailed, VClusterObjectNotOwned, DeleteFailed): the pass returns the error and
//     the controller's per-item rate limiter retries after 30s, doubling per consecutive failure,
//     capped at 10m, reset by a success (controller-runtime's error metrics count them). The
//     count lives in the workqueue: after a restart every app starts at 30s;
//   - outcome.Wait: the Tenant CRD is not installed (TenantAPIUnavailable): RequeueAfter 5m;
//   - outcome.Pending: a push submitted to the Git writer, or a branch whose clone another batch
//     holds: no status write, no requeue; the push's callback or the end of the batch brings the
//     app back (pushes.go);
//   - outcome.Stop: nothing a retry fixes (TenantCloudSpaceMismatch, TenantPinned, a bad path,
//     RegistrySecretInvalid, GitHostNotAllowed, VClusterServerNotAllowed, InvalidSpec,
//     GitSecretInvalid, GitInsecureTransport, FluxSecretRefused, PushSecretExposed, GitPathNotAllowed, RepositoryShared,
//     NamespaceReserved, IngressHostNotAllowed, ClusterIssuerNotAllowed): a
//     reconcile.TerminalError, never retried; a watch brings the app back.
//
// Not Synced yet: every 2m, a safety net (tenantwatch.go watches each vCluster's
// Kustomizations, Ingresses and cert-manager Certificates, so their changes bring the app back at
// once); once Synced: every 10m (the Git folder is re-verified, repairing external edits).
//
// Changes arrive as events, not by polling: the app itself (spec changes; an annotation change
// is a manual retry), the metadata of Secrets (the registry, Git and kubeconfig Secrets the apps
// reference; Secret data is not cached by the manager: the Git Secrets' data is kept per
// UID and resourceVersion between passes (secretdata.go), the others are read on demand) and
// Tenants. When the Tenant CRD is
// missing at start, the manager still starts without the Tenant watch; each pass checks again
// and reads Tenants uncached once the CRD exists.
//
// # Deletion (delete.go)
//
// Behind the kubeopera.io/app-cleanup finalizer, added on the first pass: delete the
// Kustomization and wait until it is gone (Flux prunes what it applied), then the GitRepository
// and the copied Git credentials, the copied registry Secrets unless another app of that vCluster
// namespace uses them, then remove the app's folder from Git with a commit (at the recorded
// placement with the push Secret recorded for it, and at the spec's; another app's folder is
// never touched; "repository not found"
// is success with a GitRepositoryGone Warning Event), then the finalizer, and the Git writer's
// clone of every repository no app uses any more. Anything already gone counts as done. Every
// other failure is retried (DeleteFailed). A Kustomization still deleting after 5m is reported
// (KustomizationStuck) and waited for, since its workload may still run; the annotations
// kubeopera.io/abandon-kustomization and kubeopera.io/skip-git-cleanup are an administrator's
// explicit escape, each with a Warning Event; abandon-kustomization also ends a deletion whose
// vCluster cannot be reached or refuses the cleanup (VClusterCleanupAbandoned). A Tenant that is
// gone has nothing left to clean (its vCluster went with it): the Git cleanup still runs, a
// TenantGone Event says so. A Tenant being deleted is cleaned through while its vCluster
// answers; a placed app whose vCluster the operator cannot reach (Tenant API not served, server
// no longer allowed, kubeconfig unusable) keeps its finalizer (DeleteFailed). Push Secrets carry the
// kubeopera.io/git-credentials-in-use finalizer while an app names them (secretguard.go), so a
// namespace deletion leaves them readable until the folders are removed; a Git credentials
// Secret missing all the same skips the Git cleanup with a GitCleanupSkipped Event. The app namespace
// stays in the vCluster: it may hold objects the tenant created there, and it is empty of
// everything the operator and Flux put in it.
//
// Every status decision (conditions, Events, the requeue that follows from them) is made in
// status.go; the steps only report what they found. Every field a user writes has a row in the
// bad-input matrix (TestBadInputMatrix): refused at admission, or a specific reason and a
// Warning Event, with no partial write and no hot loop.
//
// The design, with the reasons for each choice, is docs/app-controller.md.
package app
