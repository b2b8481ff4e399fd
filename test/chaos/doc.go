// Package chaos is the kill-anywhere test of the operator: the real manager binary (a `go build`
// of main.go, once per run) runs as a child process against an envtest API server and the ioFog
// Controller contract double (internal/iofog/fake, on loopback, reached through
// --controller-endpoint-template), and is SIGKILLed at seeded random moments while it installs a
// ControlPlane with NATS on, applies a spec change and deletes it (TestKillAnywhereControlPlane).
// After each kill it is started again; at the end of each phase the test checks convergence and the invariants:
//
//   - the ControlPlane reaches ready for its current generation;
//   - no certificate or key Secret is regenerated once written (its UID and data never change
//     while the test watches it);
//   - each CA is imported exactly once: for every CA name the fake saw exactly one
//     POST /api/v3/certificates/ca (the fake keeps its CAs, so any later GET answered 200 and a
//     second POST would be a duplicate import);
//   - after the deletion the ControlPlane is gone (no finalizer left).
//
// TestKillAnywhereApp does the same for a KubeOperaApp: its first placement, a move of its Git
// path and its deletion, with only the App Controller running, against a second API server
// standing in for the tenant vCluster (the Flux CRDs installed) and the real Git server on
// loopback (internal/apptest, gittestserver). After each phase, read from the Git server's own
// repository on disk:
//
//   - the app is Ready and Synced for its generation;
//   - the repository holds the app's files exactly once: the whole tree is the rendered manifests
//     plus the ownership marker at the app's current path, nothing else (no lost file, no second
//     copy, no old folder after a move);
//   - during a move, once the new folder is complete it is never missing a file again (a 50 ms
//     poll of the branch head);
//   - after the deletion the app is gone (no finalizer left), no Kustomization, GitRepository or
//     Git credentials copy is left in the vCluster and no file in Git.
//
// kustomize-controller does not run (as in the App Controller's suite): a stand-in writes what it
// writes in a Kustomization's status, Ready for its generation with the head commit of its
// branch as the last applied revision.
//
// The outage tests (outage_test.go) take one dependency away and back while the real manager
// works, and count the connections it opens meanwhile, through FaultProxy (a TCP proxy in front
// of the dependency): the Git server and a tenant API server go Down (every connection reset at
// once), the Controller API hangs (connections accepted, never answered), the host API server
// (its own envtest, with a state directory so it restarts on the same port with the same data)
// is stopped and started. Each test checks the count against a bound derived from the retry
// cadence in force (stated with each test), that the count is not zero (the check can fail), and
// that the work converges once the dependency is back.
//
// TestFailover runs two manager processes with leader election on (short lease flags), kills the
// leader once the install began and checks that the standby takes the Lease within the lease
// duration plus one retry period and finishes with each CA imported exactly once.
//
// The host is a cluster of the test bed (test/testbed): the real controller manager and scheduler
// create and place the operands' pods, and kwok reports them running, so a ControlPlane is ready
// only once its workloads are available. Stand-ins: the test bed has no load balancer or ingress
// controller; the local cloud of test/sandbox (sandbox.StartLocalCloud) writes exactly the status
// those write, a loopback address in status.loadBalancer of LoadBalancer Services and Ingresses.
//
// Choices where the issue is silent:
//   - One trial is one ControlPlane (or one app, with a repository of its own) in its own
//     namespace with its own fake Controller (the CA names are fixed per ControlPlane, so a
//     shared fake would answer the second trial's GET with 200 and hide a duplicate import).
//     Trials run one after the other.
//   - Each phase gets 1 to 3 kills; the moment of each is uniform in [0, 4s) after the process
//     started (startup, cache sync and the reconcile passes all lie in that window on the test
//     machine). The next process starts at once after a kill. The app trials keep the Git cache
//     directory across kills, as an emptyDir survives a container restart.
//   - The random seed is CHAOS_SEED (default: the clock, printed as "chaos seed N"); CHAOS_TRIALS is the
//     number of trials per scenario (default 2, `make chaos`: 50).
//   - The outage tests run the app with --app-retry-base=1s (production: 30s) so each ends in
//     seconds; the bound scales with it.
package chaos
