// Package controlplane reconciles ControlPlane objects (datasance.com/v3): one Datasance PoT /
// Eclipse ioFog control plane (Controller, Router and NATS) per object, in the object's
// namespace. docs/controlplane.md is the design (components, state machine, retry cadence, TLS
// trust, data policy); this comment records the decisions taken where the specification leaves a
// choice or where we deliberately differ from the upstream operator.
//
// # Shape
//
// Reconcile reads the ControlPlane, runs one pass and persists what the pass changed in a single
// patch at its end (status subresource, plus the registration annotation below). A pass runs the
// components router, NATS and controller — each a func(ctx, *scope) error listed in components,
// ending in the vocabulary of internal/outcome (nil: done; outcome.Wait; outcome.Retry;
// outcome.Stop) — and combines them (result.go): any failure → the failures joined (terminal only
// when every failure needs a user change); otherwise any wait → the shortest requested delay (a
// long wait of one component never hides another's short poll), reported as the longest wait;
// otherwise all done → ready. outcome.Result turns the combination into what Reconcile returns,
// as the KubeOperaApp reconciler does with its pass's error. The components run one after the other: every step is at most
// one API call bounded by a timeout, so goroutines would only add shared state (upstream's
// limitation 13). Isolation between ControlPlanes comes from the workqueue instead: Options.
// MaxConcurrentReconciles workers (flag --controlplane-max-concurrent-reconciles, default 4), and
// every pass runs under a deadline (Options.PassTimeout, --controlplane-pass-timeout, default 2
// min; the status patch runs on the request context, so a pass that ran out of time still
// records why). The router, NATS and controller components share one Controller session per
// pass (conversation.Session, created in reconcile and closed at the end of the pass): one client,
// one GET /status, at most one login. Everything said to the Controller goes through package
// internal/conversation, which reads no Kubernetes object; the components ask it through
// controllerConversation (conversation.go), and the per-pass scope is data only
// (docs/architecture.md#the-controller-conversation). Desired objects
// are pure functions of the spec, built in internal/resources (no client, no context); this
// package keeps the files that do I/O, one per component and concern: iofogcontroller*.go (the
// ioFog Controller operand, not a Kubernetes controller), router.go, nats*.go, certificates.go
// (every TLS Secret), ca_sync.go (the CAs and the Controller's copies), and the shared apply.go, status.go and result.go.
//
// # State machine and status
//
// Exactly one of the conditions deploying, updating and ready is True (docs/controlplane.md#state-machine). Its reason is
// the current cause in UpperCamel (the Reason* constants of the API: Reconciled,
// WaitingForLoadBalancer, ControllerUnavailable, SecretNotFound, InvalidCertificate, ...) and its
// message a sentence; a condition that stops being True becomes False with reason Transitioned.
// deploying is written on first sight and updating at the start of the first pass after a spec
// change: that pass only records the transition and requeues after requeueTransition, so
// `kubectl get` shows the state while the next pass does the work. status.observedGeneration is
// set when a pass ends ready. Per-component detail goes to status.controller, status.router and
// status.nats. An Event is emitted on the ControlPlane whenever the True condition's type or
// reason changes: Normal for progress, Warning for failures and bad input. Secret values never
// appear in Events, logs, messages or errors.
//
// While a ControlPlane is ready (the True condition is ready for the current generation), a pass
// still runs every component, which repairs drift of the owned objects, but it writes nothing
// when nothing drifted, and it does not call the Controller REST API unless what was registered
// (router and NATS hub endpoints, the CA list, the Controller URL) changed. That is recorded as a
// hash in the ControlPlane annotation kubeopera.io/controller-registration after every complete
// registration. While ready, the state stays ready: a drift repair that fails or waits keeps the
// ready condition True and puts the cause in its reason and message (and in the component's
// status); only a new generation moves the state to updating.
//
// # Writes
//
// Every operand object carries exactly the upstream operator's labels (app.kubernetes.io/name:
// iofog, instance, component, and managed-by: iofog-operator), so selectors written for upstream
// objects match this operator's, and a controller owner reference to the ControlPlane — except the data
// stores kept on deletion (below). Objects are written with
// server-side apply and the single field manager FieldOwner, with forced ownership. Before
// applying, the fields this manager owns are extracted from the live object (managedFields) and
// compared with the desired object; equal means no request at all, so a pass over an unchanged
// ControlPlane sends no write. A field another actor changed or removed is no longer this manager's, so the
// comparison fails and the apply restores it. Roles, RoleBindings, the SQLite PVC and the router
// TLS Secrets are create-once (docs/controlplane.md#create-once-objects): they are created, never applied, so an existing object
// is never changed, not even after a stale cache read.
//
// # Taking over from the Datasance operator
//
// The Datasance iofog-operator's Deployments and StatefulSet have this operator's names but other,
// immutable selectors (docs/controlplane.md#taking-over-from-the-datasance-operator). A pass
// first classifies the three workloads (takeover.go): one that selects exactly by the Datasance
// operator's labels and is controlled by this ControlPlane or nothing is deleted with its pods
// orphaned (reason TakingOver while the garbage collector works); any other selector, or another
// controller, stops the pass before anything is written (terminal ForeignWorkload). The
// components then hand over from the orphaned pods, found by their labels and read uncached only
// while a workload is missing or carries resources.AnnotationTakingOver: Services select the pods
// of both operators, the old pods are retired once new ones can replace them (a Deployment
// available; NATS one ordinal at a time on the same volumes; a SQLite Controller's stopped first),
// and everything with data (PVCs, CA, key, bootstrap and credential Secrets) is reused.
//
// # Watches
//
// Beyond the upstream, which watched ControlPlanes only, the reconciler watches every kind it
// owns (Owns), so a deleted or edited Deployment, Service, Secret, ConfigMap, ... is restored,
// and Secrets it references without owning them (spec.auth.bootstrap.passwordSecretRef,
// spec.controller.secretName, spec.controller.caSecretRef, spec.auth.caSecretRef, the JetStream key and the fixed-name
// TLS Secrets a user may bring), through a field index on ControlPlanes. ControlPlane events pass
// a predicate: a new generation, a changed annotation other than resources.AnnotationRegistration, creation
// and deletion. The operator's own status writes never trigger a pass, so the requeue delays
// below are what paces a failing ControlPlane.
//
// # Restarts
//
// The Controller pod template carries kubeopera.io/credentials-hash, an HMAC-SHA256 of the data
// of the controller-db-credentials, controller-auth-credentials and controller-vault-credentials
// Secrets under a per-ControlPlane random key (Secret controller-rollout-key, created once,
// owned): the inputs are mostly visible in the ControlPlane, and an unkeyed hash would let a
// reader of the Deployment guess the one that is not (a passwordSecretRef password) offline, and kubeopera.io/tls-hash, a hash of the controller TLS Secret. A change of either
// really rolls the pods (upstream's "restart" re-submitted an unchanged Deployment). The first
// creation sets the hash without a restart, which is docs/controlplane.md#controller-reconcile-steps step 7. The router pod template
// carries the hash of its two server certificates, so a rotated certificate reaches the router.
// The NATS pod template carries nothing of its certificates: the NATS image reloads server.conf
// and the TLS directory when the kubelet updates their volumes, so renewals, new SANs and new
// routes roll no pod; kubeopera.io/nats-config-hash (natsconf.RestartKey: every setting of
// server.conf but the routes) rolls them for what nats-server refuses to reload, such as
// leafnodes.advertise after an address change (docs/controlplane.md#nats-reloads).
//
// # Requeues and errors
//
// Waiting is an outcome.Wait with a named delay; the condition message of a wait is stable for its
// cause (the URL and iofog.Cause: "connection reset", "timeout", "HTTP 503 Error"), never the raw
// error with its ephemeral ports, which goes to the log: a Controller that is down costs one
// GET /status per 3 s and no ControlPlane write. The delays: requeueLoadBalancer (10 s, a LoadBalancer Service or
// the controller Ingress has no address), requeueDeploymentCreated (5 s after the Controller
// Deployment is created), conversation.RequeueControllerStatus (3 s, GET /status failed),
// conversation.RequeueRegistration (10 s, a router/hub/CA registration failed transiently). A failure that
// retrying can fix (Controller API down, 5xx, garbage, timeouts: iofog.IsRetryable) is a wait
// with a reason; other Controller API failures and Kubernetes API failures are outcome.Retry
// errors or unclassified errors (backoff).
// Input that the API server cannot reject is a reason plus an error: a missing referenced Secret
// is SecretNotFound (retried: the Secret may be created later, and the Secret watch notices it);
// a bring-your-own CA or leaf that cannot be used is InvalidCertificate with one Warning Event per
// cause and an outcome.Stop, returned as a reconcile.TerminalError (the Secret watch brings the ControlPlane back when it is
// fixed; certificates.go, docs/controlplane.md#tls).
//
// Differences from the upstream steps (docs/controlplane.md#controller-reconcile-steps) worth knowing: what to register (router host and ports, NATS hub,
// CA list) is computed before the first Controller API call, so while the router LoadBalancer
// has no address the pass requeues without calling the Controller at all; the controller Ingress
// without load-balancer status is a requeue (IngressNotReady) rather than an error loop, since
// the Ingress is watched; ports of an ingress-exposed router equal to 0 are registered as the
// defaults 5671/55671/45671 (docs/controlplane.md#router-ingress-ports-of-0); the external reachability check runs after CA import
// (docs/controlplane.md#external-reachability-after-ca-import); a login refused as invalid credentials ends the pass with reason LoginFailed and is
// not tried again with the same credentials except once per conversation.LoginRetryInterval, at
// most conversation.MaxRejectedLogins times in a row, so that the operator never locks the Controller's account
// (docs/controlplane.md#login-lockout).
//
// # Reaching the Controller
//
// The operator calls the Controller at Options.ControllerEndpointTemplate (flag
// --controller-endpoint-template, default controller.{namespace}.svc.cluster.local:51121) with
// {namespace} and {name} replaced and the scheme of spec.controller.https; clients come from the
// injected conversation.ClientFactory, given a conversation.Endpoint. Over https verification is always
// on; the trust is per ControlPlane: the ca.crt of spec.controller.secretName, the key named by
// spec.controller.caSecretRef, the system roots and --controller-ca-file. A certificate that is
// not trusted or does not cover the name dialled is ControllerCertificateInvalid (an error, so
// backoff and a Warning Event; the message names the URL, the name and the certificate's SANs).
// The external reachability check dials the LoadBalancer address and verifies the host of the
// public URL (spec.controller.publicUrl, or the LoadBalancer address when derived from it): the
// name external clients use, never a name the certificate cannot cover. In external auth mode
// the identity provider (discovery document, token endpoint) is verified as its own host with
// that trust plus the key spec.auth.caSecretRef names, whether or not the Controller is served
// over https (conversation.Endpoint.IdentityProviderCAs; an untrusted provider is LoginFailed).
//
// # Controller restarts
//
// A ready, unchanged ControlPlane is verified once per Options.ControllerVerifyInterval
// (--controller-verify-interval, default 30 s; the ready result requeues after it) with one
// GET /status: timestamp minus uptimeSec identifies the Controller process that answered, which
// through the Service may be any pod. The Reconciler remembers the processes seen holding the
// registration (conversation.Memory, memory only: steady state writes nothing). A process not seen
// before (a restarted or new pod, or any after an operator restart) is asked once for the
// registration (login, GET /router, GET /nats/hub); only when it lost it (an empty database) is
// everything registered again — router, hub, and every CA compared with the Controller's copy,
// importing only what is missing (ca_sync.go). So a lost state is repaired within 30 s of the
// Controller answering again, and replicas > 1 cost no logins in steady state.
//
// # CAs
//
// The Controller holds the four CAs too, signs its agents' certificates with them and refuses to
// delete one that signed anything (docs/controlplane.md#cas-and-the-controller). So no leaf is
// issued under a CA Secret the Controller's copy was not seen to match: a missing CA Secret is
// restored from the Controller's copy (generated only when the Controller has none), a changed
// one replaces the Controller's copy only when the Controller lets it go (CARotationBlocked while
// it refuses), and one that differs from a copy this ControlPlane never imported is CAConflict.
//
// # Data on deletion
//
// The data stores and the keys that read them outlive the ControlPlane: the SQLite PVC (the
// Controller's database, SQLITE_STORAGE_DIR), the four CA Secrets (the database holds the same
// CAs), the JetStream key Secret and the NATS JWT bundle carry no owner reference (objects an
// earlier version created owned are released on the next pass), and the JetStream PVCs are
// retained by the StatefulSet. Everything else is owned and garbage-collected, and derived again
// by a ControlPlane of the same name. Removing the data is an explicit step: kubectl delete
// pvc,secret,configmap -l app.kubernetes.io/instance=<name> in the namespace.
//
// # NATS
//
// The NATS component (nats*.go) follows docs/controlplane.md#nats-pass-order. Its choices where the upstream design leaves one:
//
//   - The bootstrap (GET /nats/bootstrap) is called on every deploying/updating pass; while the
//     ControlPlane is ready, the material stored by earlier passes (the two bootstrap Secrets,
//     server.conf's operator and system_account, the JWT bundle) is reused and the Controller is
//     not called, unless some of it is missing or the Controller's NATS operator changed (the
//     bundle's system account signed by another key after a rotation; GET /nats/operator
//     answering another key on a Controller process not seen before, after a new database).
//     Any bootstrap failure is a requeue (NatsBootstrapFailed, 10 s), as the docs say it
//     retries until the API responds.
//   - Create-once objects (the TLS Secrets, the JetStream key, the JWT bundle) are written with
//     Create, not server-side apply, so that a stale cache can never overwrite a CA or key; a
//     renewed leaf is applied under the resourceVersion read (certificates.go).
//   - The JetStream PVCs (js-data-nats-<i>, matched by name) decide what may be made anew: no
//     JetStream key is generated while they exist (JetStreamKeyMissing, terminal). The JWT bundle
//     is data (the image purges the streams of every account it lacks): never written once it
//     exists; a lost one is rebuilt from GET /nats/accounts, and when that fails while NATS runs
//     or data exists, nothing is created and the StatefulSet is not rolled
//     (NatsAccountsUnavailable, a requeue; nats_bundle.go). PVCs and bundle are watched by name.
//   - The operator's server Secrets are renewed in place when their SANs change with the replica
//     count (or at two thirds of their lifetime), without rolling the pods (the image reloads
//     them); a brought server certificate is kept. CAs are never changed or deleted.
//   - The js-data claim template is immutable: a changed jetStream.storageSize/storageClassName
//     keeps the live template, applies everything else, and fails terminally with
//     ImmutableFieldChanged and a Warning Event until the spec is reverted or the volumes are
//     grown; server.conf's max_file_store is the storage in force, never more than the smallest
//     js-data PVC holds (nats_storage.go). PVCs are retained (whenDeleted/whenScaled Retain): JetStream data outlives the
//     StatefulSet and the ControlPlane, and so does the JetStream key that reads them.
//   - nats-headless publishes not-ready addresses (as the NATS Helm chart does): servers must
//     find each other before JetStream lets them become ready.
//   - spec.nats.enabled false creates and calls nothing NATS, and deletes only the running parts
//     of an earlier generation that the ControlPlane controls (StatefulSet nats and the three
//     Services). PVCs, the JetStream key, CAs, certificates, bootstrap Secrets, ConfigMaps and
//     the ServiceAccount stay, so enabling NATS again resumes with the same data, key and trust.
//   - ServiceAccount nats is granted nothing and the NATS pods mount no token: the NATS image
//     reads only mounted files (resources/nats_rbac.go). An owned Role nats of an earlier
//     version, which read every ConfigMap and Secret, loses its rules by one patch on every
//     pass that finds it with rules (emptyLegacyNatsRole); it and its RoleBinding are collected
//     with the ControlPlane, since the operator holds no delete on RBAC objects.
//
// The Controller component's hub registration and NATS CA import go through the hooks
// natsHubAddress and resources.NatsCASecretNames and run only when NATS is enabled. A CA is imported
// only once its Secret exists (the Controller reads it from there): until the NATS component has
// created the NATS CAs after its bootstrap, the Controller component requeues (10 s, Progressing)
// instead of earning a 500 from the Controller.
package controlplane
