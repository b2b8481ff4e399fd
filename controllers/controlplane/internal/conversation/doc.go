// Package conversation is the ControlPlane reconciler's conversation with the ioFog Controller
// REST API of one ControlPlane: everything the operator asks the Controller, how each failure is
// classified, and what it remembers of the answers.
//
// It owns:
//
//   - the client (API, Endpoint, ClientFactory, NewClientFactory): the part of the REST API the
//     operator uses, and the production factory with TLS verification always on;
//   - the Session of one pass: GET /status once, the login at most once, a failure remembered so
//     the next component that asks gets it without another call, the pass's outcome of comparing
//     each CA with the Controller's copy, and the connections closed at the end of the pass;
//   - the Memory that outlives a pass: the Controller processes seen holding the registration,
//     and the login gate that keeps rejected credentials from locking the account
//     (docs/controlplane.md#login-lockout), both forgotten when the ControlPlane goes;
//   - the classification of every failure into the one vocabulary, internal/outcome (Controller
//     unavailable, certificate invalid, login failed, registration failed, NATS bootstrap failed);
//   - the registration bodies (router, NATS hub) and their hash, the NATS bootstrap and operator
//     reads, the NATS account list, and the CA catalog calls (read, import, delete, list and
//     delete the certificates a CA signed).
//
// It never reads or writes a Kubernetes object and imports no Kubernetes client: what a call
// needs from the cluster (the trust bundles and credentials in Secrets, whether a login must
// wait while another operator's pods may answer) it asks the reconciler through Peer, and only
// when a pass first needs the Controller, so a steady pass that calls nothing reads nothing. The
// decisions that combine Kubernetes state with the Controller's answers (which CA wins, when the
// hub follows a new NATS operator, when the registration is verified) stay in the reconciler,
// which asks this package through an interface of its own. test/architecture checks both rules.
// docs/architecture.md ("The Controller conversation") shows a call path.
package conversation
