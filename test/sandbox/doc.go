// Package sandbox is what `make run` starts when no cluster answers: a local environment in
// which both reconcilers reach their goal, built from the same parts as the tests, with every
// part that is not the real thing named as a stand-in (on screen, in the logs with the word
// SIMULATED, and in docs/sandbox.md).
//
// Real parts: the host API server and a second one for the tenant vCluster (envtest
// kube-apiserver + etcd, test/testenv), the real Flux source-controller and kustomize-controller
// in the tenant (apptest.StartFlux, the runner of the end-to-end test), a Git server on loopback
// holding the tenant apps repository (fluxcd gittestserver, apptest.StartGitServer), and the
// operator's manager exactly as main.go builds it (controllers.New).
//
// Stand-ins:
//   - the local cloud (cloud.go): for both API servers, what cloud-provider-kind, an ingress
//     controller, the deployment controller and the statefulset controller would write. A
//     LoadBalancer Service and an Ingress get a loopback address (127.0.100.1, .2, ... in order
//     of appearance, or the Service's spec.loadBalancerIP) in status.loadBalancer; a Deployment
//     or StatefulSet gets the status of a finished rollout of all its replicas (observed
//     generation, replica counts, Available/Progressing conditions, revisions). No pod runs.
//   - the ioFog Controller REST API: the contract double internal/iofog/fake, one per sandbox,
//     on 127.0.0.1; the operator reaches it through --controller-endpoint-template (every
//     ControlPlane of the sandbox talks to the same double). It accepts the bootstrap user of
//     the ControlPlane sample and the random password the sandbox puts in the sample's
//     passwordSecretRef Secret.
//   - tenant-controller: the sandbox creates the Tenant each app sample names (spec.tenantCRName,
//     else tenant-<cloudSpaceId>), labelled with the app's CloudSpace, Ready through the status
//     subresource, and its exported kubeconfig Secret vc-<tenant> holding a cluster-admin
//     kubeconfig of the tenant API server.
//
// Choices where the issue is silent:
//   - The samples of config/samples are installed unchanged into namespace demo, except an
//     app's spec.git.url, which becomes the sandbox Git server's repository tenant-a-apps. The
//     Secrets they reference (bootstrap password, Git credentials, registry pull Secret) are
//     created by the sandbox.
//   - The operator's metrics and health listeners are off in the sandbox (nothing scrapes them,
//     and fixed ports would collide with a second sandbox), leader election is off, and the app
//     read-back interval is 1 s instead of 15 s unless --app-sync-poll-interval is given.
//   - Everything the sandbox writes is under Options.Dir (make run: .local/sandbox), emptied at
//     start: the API servers are fresh each time, so old kubeconfigs would only mislead.
//   - Stop stops the operator and the local cloud, then Flux (before the tenant API server,
//     which would otherwise make it retry for 20 s), the API servers, the Git server and the
//     fake Controller, and returns when every child process has been waited for.
package sandbox
