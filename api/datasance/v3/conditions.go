package v3

// Condition types. Exactly one of them is True on a ControlPlane: the state of the state machine.
const (
	// ConditionDeploying is True during the first rollout, or when no valid True condition exists.
	ConditionDeploying = "deploying"
	// ConditionUpdating is True while a spec change (a new generation) is rolled out.
	ConditionUpdating = "updating"
	// ConditionReady is True when every component finished for the condition's observedGeneration.
	ConditionReady = "ready"
)

// Reasons on the True condition and on component status. UpperCamel, stable: users alert on them.
const (
	// ReasonReconciled: every component finished.
	ReasonReconciled = "Reconciled"
	// ReasonProgressing: a pass is under way, nothing to wait for yet.
	ReasonProgressing = "Progressing"
	// ReasonTransitioned marks the condition that stopped being True.
	ReasonTransitioned = "Transitioned"
	// ReasonWaitingForLoadBalancer: a LoadBalancer Service has no address yet.
	ReasonWaitingForLoadBalancer = "WaitingForLoadBalancer"
	// ReasonWaitingForDeployment: the Controller Deployment was just created.
	ReasonWaitingForDeployment = "WaitingForDeployment"
	// ReasonWorkloadUnavailable: a component's Deployment (Controller, router) or StatefulSet
	// (NATS) does not have every replica of its current generation available; the message names
	// the workload and what its pods report (FailedCreate, image pull, crash loop, unschedulable,
	// not ready).
	ReasonWorkloadUnavailable = "WorkloadUnavailable"
	// ReasonControllerUnavailable: the Controller REST API did not answer or answered an error.
	ReasonControllerUnavailable = "ControllerUnavailable"
	// ReasonLoginFailed: the Controller (or the identity provider) refused the operator's
	// credentials, or the identity provider's certificate does not verify: a person must fix the
	// spec or a Secret. A Controller that does not answer the login is ControllerUnavailable.
	ReasonLoginFailed = "LoginFailed"
	// ReasonRegistrationFailed: registering the router, NATS hub or a CA failed.
	ReasonRegistrationFailed = "RegistrationFailed"
	// ReasonNatsBootstrapFailed: GET /nats/bootstrap failed.
	ReasonNatsBootstrapFailed = "NatsBootstrapFailed"
	// ReasonControllerCertificateInvalid: the Controller's TLS certificate does not cover the name
	// the operator dials, or is not signed by a CA it trusts (spec.controller.secretName's ca.crt,
	// spec.controller.caSecretRef, the system roots, --controller-ca-file).
	ReasonControllerCertificateInvalid = "ControllerCertificateInvalid"
	// ReasonSecretNotFound: a Secret the spec references (a *SecretRef, passwordSecretRef, the
	// controller TLS Secret) does not exist.
	ReasonSecretNotFound = "SecretNotFound"
	// ReasonSecretKeyNotFound: a Secret the spec references by key exists but lacks the key.
	ReasonSecretKeyNotFound = "SecretKeyNotFound"
	// ReasonInvalidCertificate: a user-supplied (BYO) CA Secret holds invalid PEM or no CA.
	ReasonInvalidCertificate = "InvalidCertificate"
	// ReasonCAConflict: a CA Secret (router-site-ca, default-router-local-ca, nats-site-ca,
	// default-nats-local-ca) holds another CA than the Controller's copy of that name, which this
	// ControlPlane did not import. Nothing is signed under either until the two agree: delete the
	// Secret to restore the Controller's CA.
	ReasonCAConflict = "CAConflict"
	// ReasonCARotationBlocked: a CA Secret holds a new CA, but the Controller refuses to replace
	// its copy because it has signed certificates with it (its agents' router and NATS
	// certificates). The operands keep their certificates under the Controller's CA.
	ReasonCARotationBlocked = "CARotationBlocked"
	// ReasonCARestoreFailed: a CA Secret is missing and the Controller's copy of that CA cannot be
	// restored into it (not an RSA CA with its key), so the Secret is neither restored nor replaced.
	ReasonCARestoreFailed = "CARestoreFailed"
	// ReasonInvalidConfiguration: the spec is valid for the API server but cannot be acted on.
	ReasonInvalidConfiguration = "InvalidConfiguration"
	// ReasonMissingRouterAddress: the router is not a LoadBalancer and has no ingress address.
	ReasonMissingRouterAddress = "MissingRouterAddress"
	// ReasonIngressNotReady: the controller Ingress has no load-balancer status yet.
	ReasonIngressNotReady = "IngressNotReady"
	// ReasonImmutableFieldChanged: a field fixed at creation was changed, or JetStream storage
	// the PVCs cannot give: spec.nats.jetStream asks for another size or class than the js-data
	// claim template holds, or for more than a js-data-nats-* PVC holds. server.conf keeps the
	// storage in force.
	ReasonImmutableFieldChanged = "ImmutableFieldChanged"
	// ReasonJetStreamKeyMissing: Secret nats-jetstream-key-<name> is missing or empty while
	// JetStream PVCs (js-data-nats-*) exist. A new key could not read their streams, so none is
	// generated until the Secret is restored or the PVCs are deleted.
	ReasonJetStreamKeyMissing = "JetStreamKeyMissing"
	// ReasonNatsAccountsUnavailable: the NATS JWT bundle (ConfigMap iofog-nats-jwt-bundle) is
	// missing while NATS runs or JetStream data exists, and the Controller's account list (GET
	// /nats/accounts) could not be read to rebuild it. The bundle is not re-created with fewer
	// accounts and the NATS StatefulSet is not rolled.
	ReasonNatsAccountsUnavailable = "NatsAccountsUnavailable"
	// ReasonDuplicateControlPlane: another ControlPlane already runs in the namespace (it owns
	// Service controller, or it is the oldest when none does yet). This one writes nothing but
	// its status until it is alone (docs/controlplane.md#one-controlplane-per-namespace).
	ReasonDuplicateControlPlane = "DuplicateControlPlane"
	// ReasonTakingOver: Deployments or the StatefulSet the Datasance iofog-operator left in the
	// namespace (recognised by its selectors) are being replaced by this operator's, pods of
	// theirs still serving until this operator's can take their place; the message says which
	// and how far (docs/controlplane.md#taking-over-from-the-datasance-operator).
	ReasonTakingOver = "TakingOver"
	// ReasonForeignWorkload: a Deployment (controller, router) or StatefulSet (nats) of the
	// name this operator writes exists with a selector that is neither this operator's nor the
	// Datasance iofog-operator's, or is controlled by another object. Nothing is written until it
	// is removed or renamed.
	ReasonForeignWorkload = "ForeignWorkload"
	// ReasonSQLiteDatabaseAtRisk: the live Controller Deployment mounts the SQLite claim where an
	// earlier operator version did (the 3.7 path); rolling it onto this version's mount would lose
	// the database, so it is not rolled until a person took the step the message names and
	// confirmed it with the annotation datasance.com/sqlite-mount-confirmed.
	ReasonSQLiteDatabaseAtRisk = "SQLiteDatabaseAtRisk"
	// ReasonDataStoreOwned: a data store the ControlPlane must outlive (the JetStream key Secret,
	// the SQLite claim, a CA Secret) carries the ControlPlane's owner reference, left by an
	// earlier operator (or the Datasance operator), and the API server refused to remove it (with
	// OwnerReferencesPermissionEnforcement, as on OpenShift, that needs delete on the object, which
	// the operator holds by name only). Deleting the ControlPlane would delete the store; the
	// message gives the command that removes the reference.
	ReasonDataStoreOwned = "DataStoreOwned"
	// ReasonApplyFailed: writing an owned object to the API server failed.
	ReasonApplyFailed = "ApplyFailed"
)

// TerminalReasons are the reasons only a change of the ControlPlane, of a Secret it references or
// of the objects in its namespace can clear: the reconciler does not retry them on a timer (its
// watches bring the ControlPlane back when the cause changes). Health checks read a True condition
// with one of them as failed (docs/controlplane.md#what-kstatus-reports lists them for Flux and
// Argo CD; test/kstatus checks the lists against this one).
var TerminalReasons = []string{
	ReasonInvalidConfiguration, ReasonImmutableFieldChanged, ReasonInvalidCertificate, ReasonSecretNotFound,
	ReasonSecretKeyNotFound, ReasonMissingRouterAddress, ReasonDuplicateControlPlane, ReasonForeignWorkload,
	ReasonCAConflict, ReasonCARestoreFailed, ReasonJetStreamKeyMissing, ReasonLoginFailed, ReasonSQLiteDatabaseAtRisk,
	ReasonDataStoreOwned,
}
