// Package resources builds the objects of a ControlPlane's operand: the labels, names and
// annotations every owned object carries, and the Secrets, ConfigMaps, Services, RBAC,
// StatefulSet and Deployments of the ioFog Controller, the Router and NATS, with the environment,
// pod templates and server configuration they hold.
//
// Everything here is a pure function of its arguments (the ControlPlane, the default images,
// addresses and hashes the reconciler observed): no client, no context, no clock, no randomness.
// The reconciler in the parent package (controllers/controlplane) reads the cluster and the ioFog
// Controller, calls these builders and applies what they return; test/architecture fails when
// this package imports context, net/http, controller-runtime or a client-go client.
//
// The package exports only what the reconciler uses. Files are named after the component they
// build for: iofogcontroller_*.go (the ioFog Controller operand, not a Kubernetes controller),
// router.go, nats_*.go; labels.go, operand.go and pod.go hold what every component shares.
package resources
