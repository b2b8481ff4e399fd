package controlplane

import (
	"github.com/kubeopera/kubeopera-operator/controllers/controlplane/internal/conversation"
	"github.com/kubeopera/kubeopera-operator/controllers/controlplane/internal/resources"
)

// Internals the envtest suite (package controlplane_test, which cannot be an internal test
// because test/testenv imports the manager, which imports this package) asserts on.
const (
	RequeueLoadBalancer      = requeueLoadBalancer
	RequeueDeploymentCreated = requeueDeploymentCreated
	RequeueControllerStatus  = conversation.RequeueControllerStatus
	RequeueRegistration      = conversation.RequeueRegistration
	RequeueTransition        = requeueTransition
	RequeueTakeover          = requeueTakeover
	RequeueWorkload          = requeueWorkload
	LoginRetryInterval       = conversation.LoginRetryInterval
	MaxRejectedLogins        = conversation.MaxRejectedLogins

	AnnotationCredentialsHash = resources.AnnotationCredentialsHash
	AnnotationTLSHash         = resources.AnnotationTLSHash
	AnnotationNatsConfigHash  = resources.AnnotationNatsConfigHash
	AnnotationRegistration    = resources.AnnotationRegistration
)

// CredentialsHash and UnkeyedHash expose the pod-template hashes to the envtest suite;
// DataStoreKind the kind names of the data stores a ControlPlane keeps.
var (
	CredentialsHash = resources.KeyedHashData
	UnkeyedHash     = resources.HashData
)

// OtherControlPlanesOnDelete is the ControlPlane delete watch's mapping.
var OtherControlPlanesOnDelete = (*Reconciler).otherControlPlanesOnDelete

// ControlPlanesForWorkload is the mapping of the watch on workloads no ControlPlane controls.
var ControlPlanesForWorkload = (*Reconciler).controlPlanesForWorkload
