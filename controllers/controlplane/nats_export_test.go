package controlplane

// NATS internals the envtest suite (package controlplane_test) asserts on.
const (
	RequeueNatsBootstrap   = requeueNatsBootstrap
	AnnotationNatsReplicas = annotationNatsReplicas
	AnnotationRestartedAt  = annotationRestartedAt
)
