package controlplane

import "time"

// FieldOwner is the one server-side apply field manager of every object this reconciler writes.
const FieldOwner = "kubeopera-operator"

// EventRecorderName is the reporting controller of the Events the reconciler emits.
const EventRecorderName = "kubeopera-operator-controlplane"

// Requeue delays (spec §4.6, §5.2). Waiting for something outside the operator's control is a
// requeue with one of these delays, never a blocking wait.
const (
	// requeueLoadBalancer: a LoadBalancer Service (controller or router) or the controller Ingress
	// has no address yet.
	requeueLoadBalancer = 10 * time.Second
	// requeueDeploymentCreated: the Controller Deployment was just created; let the pod start
	// before calling its API.
	requeueDeploymentCreated = 5 * time.Second
	// requeueControllerStatus: the Controller's GET /status (in-cluster or external) failed.
	requeueControllerStatus = 3 * time.Second
	// requeueRegistration: registering the router, the NATS hub or a CA failed transiently.
	requeueRegistration = 10 * time.Second
	// requeueTransition: a new condition (deploying, updating) was just written; the next pass
	// does the work. The status write itself also triggers a watch event.
	requeueTransition = time.Second
)

// Standard labels of every operand object, exactly the upstream operator's (managed-by:
// iofog-operator), so selectors, dashboards and policies written for upstream objects match
// ours and objects created by either operator are the same. The operator's own Deployment
// carries its own name.
const (
	labelName      = "app.kubernetes.io/name"
	labelInstance  = "app.kubernetes.io/instance"
	labelComponent = "app.kubernetes.io/component"
	labelManagedBy = "app.kubernetes.io/managed-by"

	labelNameValue      = "iofog"
	labelManagedByValue = "iofog-operator"
)

// Component names: the app.kubernetes.io/component label value and the object names of the
// Controller and Router components.
const (
	componentController = "controller"
	componentRouter     = "router"
	componentNats       = "nats"
)

// Annotations written by the operator.
const (
	// annotationCredentialsHash on the Controller pod template is a hash of the data of the DB,
	// auth and vault Secrets: a change rolls the pods so they read the new Secret-backed env.
	annotationCredentialsHash = "kubeopera.io/credentials-hash" //nolint:gosec // G101: an annotation name, not a credential.
	// annotationTLSHash on a pod template is a hash of the TLS Secret(s) the pods mount, so a
	// rotated certificate reaches the process.
	annotationTLSHash = "kubeopera.io/tls-hash"
	// annotationRegistration on the ControlPlane is a hash of what the operator last registered
	// with the Controller REST API (router, NATS hub, CAs) and where. While the ControlPlane is
	// ready and the hash is unchanged, the Controller API is not called again.
	annotationRegistration = "kubeopera.io/controller-registration"
)
