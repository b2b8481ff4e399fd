package controlplane

import "time"

// FieldOwner is the one server-side apply field manager of every object this reconciler writes.
const FieldOwner = "kubeopera-operator"

// EventRecorderName is the reporting controller of the Events the reconciler emits.
const EventRecorderName = "kubeopera-operator-controlplane"

// Requeue delays (docs/controlplane.md#controller-reconcile-steps,
// docs/controlplane.md#router-service-and-address). Waiting for something outside the operator's
// control is an outcome.Wait with one of these delays, never a blocking wait. The delays of the
// Controller's answers are the conversation's (conversation.RequeueControllerStatus,
// RequeueRegistration, RequeueNatsBootstrap).
const (
	// requeueLoadBalancer: a LoadBalancer Service (controller or router) or the controller Ingress
	// has no address yet.
	requeueLoadBalancer = 10 * time.Second
	// requeueDeploymentCreated: the Controller Deployment was just created; let the pod start
	// before calling its API.
	requeueDeploymentCreated = 5 * time.Second
	// requeueTransition: a new condition (deploying, updating) was just written; the next pass,
	// after this delay, does the work (the operator's own status writes start no pass: see the
	// ControlPlane predicate in SetupWithManager).
	requeueTransition = time.Second
	// requeueTakeover: pods the Datasance operator's workloads left are being replaced
	// (takeover.go); pods are not watched, so their going is polled at this pace.
	requeueTakeover = 5 * time.Second
)

// Reasons of the Normal Events the NATS component emits (failures use the condition reasons).
const (
	eventNatsRestarted = "NatsRestarted"
	eventNatsRemoved   = "NatsRemoved"
	// eventNatsRoleEmptied: an earlier version's Role nats lost its rules (emptyLegacyNatsRole).
	eventNatsRoleEmptied = "NatsRoleEmptied"
	// eventNatsJWTBundleRebuilt: a missing JWT bundle was rebuilt from the Controller's accounts
	// while NATS ran or JetStream data existed (ensureNatsJWTBundle).
	eventNatsJWTBundleRebuilt = "NatsJWTBundleRebuilt"
	// eventNatsOperatorChanged: the Controller holds another NATS operator than the hub trusted
	// (rotated, or a new database); the hub follows it (obtainNatsBootstrap).
	eventNatsOperatorChanged = "NatsOperatorChanged"
)
