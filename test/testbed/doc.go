// Package testbed starts a Kubernetes cluster whose pods live: the envtest kube-apiserver and etcd
// (test/testenv) with the real kube-controller-manager and kube-scheduler of the same Kubernetes
// version, and nodes and pod lifecycles played by kwok. A Deployment there gets a ReplicaSet and
// pods, the scheduler places the pods on nodes, kwok reports them Running and Ready (or failing,
// see FailAnnotation), owned objects are garbage-collected, a deleted namespace is emptied,
// PodDisruptionBudgets guard evictions, ResourceQuotas refuse pods and claims bind. Suites that
// need to observe what pods do start one with Start (or StartForTest); everything else keeps the
// bare API server of test/testenv, which starts in a third of the time.
//
// Real parts (built from the Go module proxy by hack/tool.sh: envtest, cluster, kwok):
//   - kube-apiserver and etcd, with the admission plugins of test/testenv;
//   - kube-controller-manager with the controllers listed in controllers (deployment, replicaset,
//     statefulset, garbage collector, namespace, disruption, resourcequota, endpointslice,
//     serviceaccount and its token, root CA publisher, persistent-volume binder and the claim and
//     volume protection), each acting as its own ServiceAccount;
//   - kube-scheduler with its default profile;
//   - kwok (sigs.k8s.io/kwok), which plays the kubelets of Options.Nodes nodes spread over
//     Options.Zones zones: node status and heartbeats, and every pod's status through the stages
//     of stages.yaml.
//
// Stand-ins, each writing exactly what the part it replaces writes (standins.go, webhook.go):
//   - a CSI external-provisioner for the default StorageClass testbed-local: a claim gets a
//     PersistentVolume pre-bound to it, which the real binder binds; a released volume is deleted;
//   - with Options.OpenShift, OpenShift's namespace SCC allocation controller (the uid-range,
//     supplemental-groups and mcs annotations of every namespace), the SecurityContextConstraints
//     API with the ClusterRoles that grant the use of restricted-v2 and nonroot-v2 (openshift.go),
//     and its SCC admission for those two SCCs, as a mutating admission webhook on every pod
//     creation (scc.go cites the rules' sources): restricted-v2 first, then nonroot-v2 where the
//     pod's creator or ServiceAccount may use it. A pod the real SCCs refuse is refused here with
//     the same field errors, and its ReplicaSet or StatefulSet reports FailedCreate.
//
// Not here at all: load-balancer and Ingress addresses (a cloud controller and an ingress
// controller; test/sandbox's local cloud plays them where a suite needs them), container images
// and processes (a pod's containers never run: kwok reports what a kubelet would), and the ioFog
// Controller API (internal/iofog/fake). docs/testbed.md lists them with the reason for each.
package testbed
