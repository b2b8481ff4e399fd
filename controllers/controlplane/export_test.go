package controlplane

// Internals the envtest suite (package controlplane_test, which cannot be an internal test
// because test/testenv imports the manager, which imports this package) asserts on.
const (
	RequeueLoadBalancer      = requeueLoadBalancer
	RequeueDeploymentCreated = requeueDeploymentCreated
	RequeueControllerStatus  = requeueControllerStatus
	RequeueRegistration      = requeueRegistration
	RequeueTransition        = requeueTransition

	AnnotationCredentialsHash = annotationCredentialsHash
	AnnotationTLSHash         = annotationTLSHash
	AnnotationRegistration    = annotationRegistration
)

// CredentialsHash and UnkeyedHash expose the pod-template hashes to the envtest suite.
var (
	CredentialsHash = keyedHashData
	UnkeyedHash     = hashData
)
