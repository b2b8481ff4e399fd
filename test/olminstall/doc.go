// Package olminstall installs the operator with the real Operator Lifecycle Manager and checks what
// OLM does with the bundle, end to end:
//
//   - a real API server (envtest) with the eight OLM CRDs of the OLM release under test, and the
//     real olm-operator and catalog-operator (v0.40.0, built by `hack/tool.sh olm`);
//   - a real `opm serve` of the committed catalog, with the bundles' image emptied so that OLM takes
//     each bundle's objects from its olm.bundle.object properties instead of running an unpack Job
//     (the served catalog is checked to equal the committed one apart from `image`);
//   - the OperatorGroup, CatalogSource and Subscription of config/olm, as the README applies them;
//   - the real manager binary, started from the Deployment OLM created (its arguments, and its
//     environment resolved from the pod template, so WATCH_NAMESPACE is the olm.targetNamespaces
//     annotation OLM wrote), authenticated with a token of OLM's ServiceAccount, so it runs with
//     exactly the RBAC OLM created from the CSV's permissions and clusterPermissions.
//
// Nothing runs pods here (no kubelet, no kube-controller-manager): the test stands in for the
// deployment controller by writing the operator Deployment's status as that controller would, and
// only once the manager started from that Deployment answers /readyz.
//
// Both OLM binaries serve health on a hard-coded :8080 on every interface, and opm listens on every
// interface too: the suite runs in its own network namespace with only loopback (TestMain re-execs
// the test binary under `unshare -n`, as root, or `unshare -rn` otherwise), and the API server is
// told so (--advertise-address=127.0.0.1, --endpoint-reconciler-type=none).
//
// The manager's own listeners differ from the pod's (every process here shares one network
// namespace, a pod has its own): the test appends --health-probe-bind-address on a free loopback
// port and --metrics-bind-address=0, and the Lease namespace a pod learns from its ServiceAccount
// mount is passed as --leader-election-namespace.
//
// The suite fails (it does not skip) when a tool is missing; only -short skips it.
package olminstall
