// Package chaos is the kill-anywhere test of the operator: the real manager binary (a `go build`
// of main.go, once per run) runs as a child process against an envtest API server and the ioFog
// Controller contract double (internal/iofog/fake, on loopback, reached through
// --controller-endpoint-template), and is SIGKILLed at seeded random moments while it installs a
// ControlPlane with NATS on, applies a spec change and deletes it. After each kill it is started
// again; at the end of each phase the test checks convergence and the invariants:
//
//   - the ControlPlane reaches ready for its current generation;
//   - no certificate or key Secret is regenerated once written (its UID and data never change
//     while the test watches it);
//   - each CA is imported exactly once: for every CA name the fake saw exactly one
//     POST /api/v3/certificates/ca (the fake keeps its CAs, so any later GET answered 200 and a
//     second POST would be a duplicate import);
//   - after the deletion the ControlPlane is gone (no finalizer left).
//
// TestFailover runs two manager processes with leader election on (short lease flags), kills the
// leader once the install began and checks that the standby takes the Lease within the lease
// duration plus one retry period and finishes with each CA imported exactly once.
//
// Stand-ins: envtest has no load balancer, ingress, deployment or statefulset controller. The
// local cloud of test/sandbox (sandbox.StartLocalCloud) writes exactly the status those write: a
// loopback address in status.loadBalancer of LoadBalancer Services and Ingresses, and the status
// of a finished rollout of all replicas for Deployments and StatefulSets. No pod runs.
//
// Choices where the issue is silent:
//   - One trial is one ControlPlane in its own namespace with its own fake Controller (the CA
//     names are fixed per ControlPlane, so a shared fake would answer the second trial's GET with
//     200 and hide a duplicate import). Trials run one after the other.
//   - Each phase (install, change, delete) gets 1 to 3 kills; the moment of each is uniform in
//     [0, 4s) after the process started (startup, cache sync and the reconcile passes all lie in
//     that window on the test machine). The next process starts at once after a kill.
//   - The seed is CHAOS_SEED (default: the clock, printed as "chaos seed N"); CHAOS_TRIALS is the
//     number of trials (default 2, `make chaos`: 50).
//   - Only the ControlPlane reconciler runs (--enable-app-controller=false): the KubeOperaApp
//     scenarios are not covered yet (docs/reliability.md).
package chaos
