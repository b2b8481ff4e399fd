package controlplane

import "github.com/kubeopera/kubeopera-operator/controllers/controlplane/internal/resources"

// NATS internals the envtest suite (package controlplane_test) asserts on.
const (
	RequeueNatsBootstrap   = requeueNatsBootstrap
	AnnotationNatsReplicas = resources.AnnotationNatsReplicas
	AnnotationRestartedAt  = resources.AnnotationRestartedAt
)
