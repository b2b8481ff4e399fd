package controlplane

import (
	"github.com/kubeopera/kubeopera-operator/controllers/controlplane/internal/conversation"
	"github.com/kubeopera/kubeopera-operator/controllers/controlplane/internal/resources"
)

// NATS internals the envtest suite (package controlplane_test) asserts on.
const (
	RequeueNatsBootstrap   = conversation.RequeueNatsBootstrap
	AnnotationNatsReplicas = resources.AnnotationNatsReplicas
	AnnotationRestartedAt  = resources.AnnotationRestartedAt
)
