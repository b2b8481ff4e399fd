package controlplane_test

import (
	"crypto/rand"
	"encoding/hex"
	"slices"
	"strconv"
	"strings"
	"time"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	datasancev3 "github.com/kubeopera/kubeopera-operator/api/datasance/v3"
	"github.com/kubeopera/kubeopera-operator/internal/pki"
	"github.com/kubeopera/kubeopera-operator/internal/scheme"
	"github.com/kubeopera/kubeopera-operator/internal/testfixture"
)

// datasanceLeft is what a test created as the Datasance operator's and expects to find again,
// unchanged, after the takeover: the UIDs of the objects that hold data, and their data.
type datasanceLeft struct {
	uids    map[string]types.UID // "Secret/name", "PersistentVolumeClaim/name", "ConfigMap/name"
	secrets map[string]map[string][]byte
	bundle  map[string]string
}

// leaveDatasanceControlPlane creates cp (stored as the Datasance operator left it: ready) and
// the objects the Datasance operator (3.6.0 to 3.7.x) leaves for it, written by its field
// manager: its Services, credential and CA Secrets (the CAs also in the fake Controller's
// catalog, which it imported), the SQLite PVC, and the router and Controller Deployments, each
// with its ReplicaSet and one ready pod. With NATS (m non-nil) also the NATS Services, the
// JetStream key, bootstrap Secrets and JWT bundle, and StatefulSet nats with natsReplicas ready
// pods on their js-data PVCs. Ingress pot-controller when the spec asks for an Ingress.
func (h *harness) leaveDatasanceControlPlane(cp *datasancev3.ControlPlane, m *natsMaterial, natsReplicas int) datasanceLeft {
	h.t.Helper()
	g := h.g
	h.create(cp)
	cp = h.get()
	cp.Status.Conditions = []metav1.Condition{
		{Type: datasancev3.ConditionDeploying, Status: metav1.ConditionFalse, Reason: "transition_to_ready", ObservedGeneration: cp.Generation, LastTransitionTime: metav1.Now()},
		{Type: datasancev3.ConditionReady, Status: metav1.ConditionTrue, Reason: "initial_status", ObservedGeneration: cp.Generation, LastTransitionTime: metav1.Now()},
	}
	g.Expect(env.Client.Status().Update(h.ctx, cp)).To(Succeed())

	left := datasanceLeft{uids: map[string]types.UID{}, secrets: map[string]map[string][]byte{}}
	create := func(obj client.Object) {
		h.t.Helper()
		g.Expect(env.Client.Create(h.ctx, obj, client.FieldOwner(testfixture.DatasanceFieldManager))).To(Succeed())
	}
	keep := func(obj client.Object) {
		h.t.Helper()
		create(obj)
		left.uids[scheme.KindOf(obj)+"/"+obj.GetName()] = obj.GetUID()
	}
	secret := func(component, name string, typ corev1.SecretType, data map[string][]byte) {
		s := &corev1.Secret{ObjectMeta: testfixture.DatasanceMeta(cp, component, name), Type: typ, Data: data}
		keep(s)
		left.secrets[name] = data
	}
	service := func(component, name string, typ corev1.ServiceType, lbIP string, ports ...corev1.ServicePort) {
		svc := &corev1.Service{ObjectMeta: testfixture.DatasanceMeta(cp, component, name), Spec: corev1.ServiceSpec{
			Type: typ, Selector: testfixture.DatasanceLabels(cp, component), Ports: ports,
		}}
		if name == "nats-headless" {
			svc.Spec.ClusterIP = corev1.ClusterIPNone
		}
		create(svc)
		if lbIP != "" {
			h.setServiceAddress(name, lbIP)
		}
	}
	port := func(name string, port, target int32) corev1.ServicePort {
		return corev1.ServicePort{Name: name, Port: port, TargetPort: intstr.FromInt32(target)}
	}
	ca := func(component, name string) {
		kp, err := pki.GenerateCA(name, time.Now(), 0, pki.WithKeyGenerator(testKeyGenerator))
		g.Expect(err).NotTo(HaveOccurred())
		secret(component, name, corev1.SecretTypeTLS, pki.SecretData(kp, nil))
		g.Expect(h.api.AddCA(name, kp.CertPEM, kp.KeyPEM)).To(Succeed())
	}

	controllerSvcType := corev1.ServiceTypeLoadBalancer
	controllerLB := h.controllerLB
	if cp.Spec.ControllerIngressMode() {
		controllerSvcType, controllerLB = corev1.ServiceTypeClusterIP, ""
	}
	service("controller", "controller", controllerSvcType, controllerLB, port("controller-api", 51121, 51121), port("ecn-viewer", 80, 8008))
	service("router", "router", corev1.ServiceTypeLoadBalancer, routerLBIP,
		port("router-message", 5671, 5671), port("router-interior", 55671, 55671), port("router-edge", 45671, 45671))
	if cp.Spec.ControllerIngressMode() {
		ing := &networkingv1.Ingress{ObjectMeta: testfixture.DatasanceMeta(cp, "controller", "pot-controller"), Spec: networkingv1.IngressSpec{
			Rules: []networkingv1.IngressRule{{Host: cp.Spec.Ingresses.Controller.Host, IngressRuleValue: networkingv1.IngressRuleValue{
				HTTP: &networkingv1.HTTPIngressRuleValue{Paths: []networkingv1.HTTPIngressPath{{
					Path: "/", PathType: ptr.To(networkingv1.PathTypePrefix),
					Backend: networkingv1.IngressBackend{Service: &networkingv1.IngressServiceBackend{
						Name: "controller", Port: networkingv1.ServiceBackendPort{Name: "ecn-viewer"},
					}},
				}}},
			}}},
		}}
		create(ing)
	}

	secret("controller", "controller-db-credentials", corev1.SecretTypeOpaque, map[string][]byte{
		"dbname": []byte(cp.Spec.Database.DatabaseName), "host": []byte(cp.Spec.Database.Host),
		"port": []byte(portText(cp.Spec.Database.Port)), "username": []byte(cp.Spec.Database.User),
		"password": []byte(cp.Spec.Database.Password), "ssl": []byte("false"), "ca": nil,
	})
	secret("controller", "controller-auth-credentials", corev1.SecretTypeOpaque, map[string][]byte{
		"auth-mode": []byte("embedded"), "auth-bootstrap-username": []byte(cp.Spec.Auth.Bootstrap.Username),
		"auth-bootstrap-password": []byte(cp.Spec.Auth.Bootstrap.Password),
	})
	ca("router", "router-site-ca")
	ca("router", "default-router-local-ca")
	if cp.Spec.UsesSQLite() {
		pvc := &corev1.PersistentVolumeClaim{ObjectMeta: testfixture.DatasanceMeta(cp, "controller", "controller-sqlite"), Spec: corev1.PersistentVolumeClaimSpec{
			AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			Resources:   corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}},
		}}
		keep(pvc)
	}
	for _, component := range []string{"controller", "router"} {
		d := testfixture.DatasanceDeployment(cp, component)
		create(d)
		rs := testfixture.DatasanceReplicaSet(d, "5d8f7c6b9"+component[:1])
		create(rs)
		pod := testfixture.DatasanceReplicaSetPod(rs, 0)
		create(pod)
		h.markPodReady(pod)
	}
	if m == nil {
		return left
	}

	service("nats", "nats-headless", corev1.ServiceTypeClusterIP, "", port("client", 4222, 4222), port("cluster", 6222, 6222))
	service("nats", "nats", corev1.ServiceTypeLoadBalancer, natsLBIP, port("cluster", 6222, 6222), port("leaf", 7422, 7422), port("mqtt", 8883, 8883))
	service("nats", "nats-server", corev1.ServiceTypeClusterIP, "", port("client", 4222, 4222), port("monitor", 8222, 8222))
	ca("nats", "nats-site-ca")
	ca("nats", "default-nats-local-ca")
	key := make([]byte, 32)
	_, _ = rand.Read(key)
	secret("nats", "nats-jetstream-key-"+cp.Name, corev1.SecretTypeOpaque, map[string][]byte{"jsk": []byte(hex.EncodeToString(key))})
	secret("nats", "nats-operator-seed", corev1.SecretTypeOpaque, map[string][]byte{"seed": []byte(m.bootstrap.OperatorSeed)})
	creds, err := m.bootstrap.SysUserCreds()
	g.Expect(err).NotTo(HaveOccurred())
	secret("nats", "nats-creds-sys-admin-hub", corev1.SecretTypeOpaque, map[string][]byte{"admin-hub.creds": creds})
	left.bundle = map[string]string{m.accountPub + ".jwt": m.accountJWT}
	keep(&corev1.ConfigMap{ObjectMeta: testfixture.DatasanceMeta(cp, "nats", "iofog-nats-jwt-bundle"), Data: left.bundle})

	sts := testfixture.DatasanceStatefulSet(cp, int32(natsReplicas), "10Gi")
	create(sts)
	for i := range natsReplicas {
		pvc := &corev1.PersistentVolumeClaim{
			ObjectMeta: metav1.ObjectMeta{Namespace: h.ns, Name: "js-data-nats-" + strconv.Itoa(i)},
			Spec:       *sts.Spec.VolumeClaimTemplates[0].Spec.DeepCopy(),
		}
		pvc.Spec.VolumeName = "pv-" + h.ns + "-" + strconv.Itoa(i)
		keep(pvc)
		pvc.Status = corev1.PersistentVolumeClaimStatus{Phase: corev1.ClaimBound, AccessModes: pvc.Spec.AccessModes,
			Capacity: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("10Gi")}}
		g.Expect(env.Client.Status().Update(h.ctx, pvc)).To(Succeed())
		pod := testfixture.DatasanceStatefulSetPod(sts, i)
		create(pod)
		h.markPodReady(pod)
	}
	return left
}

// portText is the port as the credential Secret holds it: empty when unset.
func portText(port int32) string {
	if port == 0 {
		return ""
	}
	return strconv.Itoa(int(port))
}

// expectKept checks that every object of left is the same object, holding the same data.
func (h *harness) expectKept(left datasanceLeft) {
	h.t.Helper()
	for key, uid := range left.uids {
		kind, name, _ := strings.Cut(key, "/")
		var obj client.Object
		switch kind {
		case "Secret":
			obj = &corev1.Secret{}
		case "PersistentVolumeClaim":
			obj = &corev1.PersistentVolumeClaim{}
		default:
			obj = &corev1.ConfigMap{}
		}
		h.g.Expect(env.Client.Get(h.ctx, h.key(name), obj)).To(Succeed(), key)
		h.g.Expect(obj.GetUID()).To(Equal(uid), "%s is the Datasance operator's object, not a new one", key)
	}
	for name, data := range left.secrets {
		got := h.secret(name).Data
		for k, v := range data {
			h.g.Expect(got).To(HaveKeyWithValue(k, BeEquivalentTo(string(v))), "Secret %s key %s", name, k)
		}
	}
	if left.bundle != nil {
		h.g.Expect(h.configMap("iofog-nats-jwt-bundle").Data).To(Equal(left.bundle))
	}
}

// markPodReady sets a pod Running and Ready.
func (h *harness) markPodReady(pod *corev1.Pod) {
	h.t.Helper()
	pod.Status = corev1.PodStatus{Phase: corev1.PodRunning, Conditions: []corev1.PodCondition{
		{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: metav1.Now()},
	}}
	h.g.Expect(env.Client.Status().Update(h.ctx, pod)).To(Succeed())
}

func podReady(p *corev1.Pod) bool {
	return p.DeletionTimestamp.IsZero() && slices.ContainsFunc(p.Status.Conditions, func(c corev1.PodCondition) bool {
		return c.Type == corev1.PodReady && c.Status == corev1.ConditionTrue
	})
}

// kubeControllers plays, between passes, what kube-controller-manager does that a handover
// depends on (envtest runs none of it): the garbage collector, and the Deployment and
// StatefulSet controllers of the operator's workloads as far as their pods go. A pod it creates
// becomes ready one round later, so that a pass that retired the old pods before the new ones
// were ready leaves a Service with nothing to serve for a round.
type kubeControllers struct {
	h *harness
	// conflicts are the pod names a StatefulSet could not create because another pod held them
	// (the StatefulSet controller would retry with a growing backoff).
	conflicts []string
}

// round runs the controllers once: garbage collection, then readiness of the pods created in
// the previous round, then the workloads' pods and status.
func (k *kubeControllers) round() {
	k.h.t.Helper()
	k.collectGarbage()
	for _, p := range k.pods() {
		if p.DeletionTimestamp.IsZero() && !podReady(&p) {
			k.h.markPodReady(&p)
		}
	}
	k.runDeployments()
	k.runStatefulSets()
}

func (k *kubeControllers) pods() []corev1.Pod {
	k.h.t.Helper()
	var list corev1.PodList
	k.h.g.Expect(env.Client.List(k.h.ctx, &list, client.InNamespace(k.h.ns))).To(Succeed())
	return list.Items
}

// collectGarbage releases the dependents of an object deleted with propagation Orphan (their
// owner reference removed, then the orphan finalizer), and deletes ReplicaSets and pods whose
// controller is gone.
func (k *kubeControllers) collectGarbage() {
	h := k.h
	h.t.Helper()
	owners := map[types.UID]bool{}
	var deps []client.Object
	var rss appsv1.ReplicaSetList
	h.g.Expect(env.Client.List(h.ctx, &rss, client.InNamespace(h.ns))).To(Succeed())
	for i := range rss.Items {
		deps = append(deps, &rss.Items[i])
	}
	for _, p := range k.pods() {
		deps = append(deps, &p)
	}
	var ds appsv1.DeploymentList
	var ss appsv1.StatefulSetList
	h.g.Expect(env.Client.List(h.ctx, &ds, client.InNamespace(h.ns))).To(Succeed())
	h.g.Expect(env.Client.List(h.ctx, &ss, client.InNamespace(h.ns))).To(Succeed())
	var workloads []client.Object
	for i := range ds.Items {
		workloads = append(workloads, &ds.Items[i])
	}
	for i := range ss.Items {
		workloads = append(workloads, &ss.Items[i])
	}
	for _, w := range workloads {
		if w.GetDeletionTimestamp().IsZero() || !slices.Contains(w.GetFinalizers(), metav1.FinalizerOrphanDependents) {
			owners[w.GetUID()] = true
			continue
		}
		for _, d := range deps {
			refs := slices.DeleteFunc(slices.Clone(d.GetOwnerReferences()), func(r metav1.OwnerReference) bool { return r.UID == w.GetUID() })
			if len(refs) != len(d.GetOwnerReferences()) {
				d.SetOwnerReferences(refs)
				h.g.Expect(env.Client.Update(h.ctx, d)).To(Succeed())
			}
		}
		w.SetFinalizers(slices.DeleteFunc(w.GetFinalizers(), func(f string) bool { return f == metav1.FinalizerOrphanDependents }))
		h.g.Expect(env.Client.Update(h.ctx, w)).To(Succeed())
	}
	for i := range rss.Items {
		owners[rss.Items[i].UID] = true
	}
	for _, d := range deps {
		if ref := metav1.GetControllerOf(d); ref != nil && ref.Kind != "ControlPlane" && !owners[ref.UID] {
			h.g.Expect(client.IgnoreNotFound(env.Client.Delete(h.ctx, d))).To(Succeed())
		}
	}
}

// runDeployments gives every Deployment of the operator (selecting by its labels, not being
// deleted) its replicas as pods, and its status.
func (k *kubeControllers) runDeployments() {
	h := k.h
	var ds appsv1.DeploymentList
	h.g.Expect(env.Client.List(h.ctx, &ds, client.InNamespace(h.ns))).To(Succeed())
	for i := range ds.Items {
		d := &ds.Items[i]
		if !d.DeletionTimestamp.IsZero() || d.Spec.Selector.MatchLabels["app.kubernetes.io/name"] != "iofog" {
			continue
		}
		own := k.ownPods(d.UID)
		for n := len(own); n < int(ptr.Deref(d.Spec.Replicas, 1)); n++ {
			pod := &corev1.Pod{
				ObjectMeta: metav1.ObjectMeta{Namespace: h.ns, Name: d.Name + "-" + randomSuffix(), Labels: d.Spec.Template.Labels,
					OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "Deployment", Name: d.Name, UID: d.UID, Controller: ptr.To(true)}}},
				Spec: *d.Spec.Template.Spec.DeepCopy(),
			}
			h.g.Expect(env.Client.Create(h.ctx, pod)).To(Succeed())
			own = append(own, *pod)
		}
		ready := int32(0)
		for _, p := range own {
			if podReady(&p) {
				ready++
			}
		}
		d.Status = appsv1.DeploymentStatus{ObservedGeneration: d.Generation, Replicas: int32(len(own)), UpdatedReplicas: int32(len(own)),
			ReadyReplicas: ready, AvailableReplicas: ready}
		h.g.Expect(env.Client.Status().Update(h.ctx, d)).To(Succeed())
	}
}

// runStatefulSets gives StatefulSet nats of the operator its pods nats-0 … nats-<replicas-1>,
// recording a name another pod holds as a conflict, removes its pods above, and sets its status.
func (k *kubeControllers) runStatefulSets() {
	h := k.h
	sts := &appsv1.StatefulSet{}
	if !h.exists(sts, "nats") || !sts.DeletionTimestamp.IsZero() || sts.Spec.Selector.MatchLabels["app.kubernetes.io/name"] != "iofog" {
		return
	}
	replicas := int(ptr.Deref(sts.Spec.Replicas, 1))
	for i := range replicas {
		name := "nats-" + strconv.Itoa(i)
		pod := &corev1.Pod{}
		if h.exists(pod, name) {
			if ref := metav1.GetControllerOf(pod); ref == nil || ref.UID != sts.UID {
				k.conflicts = append(k.conflicts, name)
			}
			continue
		}
		pod = &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Namespace: h.ns, Name: name, Labels: sts.Spec.Template.Labels,
				OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "StatefulSet", Name: sts.Name, UID: sts.UID, Controller: ptr.To(true)}}},
			Spec: *sts.Spec.Template.Spec.DeepCopy(),
		}
		for _, t := range sts.Spec.VolumeClaimTemplates {
			pod.Spec.Volumes = append(pod.Spec.Volumes, corev1.Volume{Name: t.Name, VolumeSource: corev1.VolumeSource{
				PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: t.Name + "-" + name},
			}})
		}
		h.g.Expect(env.Client.Create(h.ctx, pod)).To(Succeed())
	}
	ready := int32(0)
	own := k.ownPods(sts.UID)
	for _, p := range own {
		if o, err := strconv.Atoi(strings.TrimPrefix(p.Name, "nats-")); err == nil && o >= replicas {
			h.g.Expect(client.IgnoreNotFound(env.Client.Delete(h.ctx, &p))).To(Succeed())
			continue
		}
		if podReady(&p) {
			ready++
		}
	}
	sts.Status = appsv1.StatefulSetStatus{ObservedGeneration: sts.Generation, Replicas: int32(len(own)), ReadyReplicas: ready,
		CurrentReplicas: int32(len(own)), UpdatedReplicas: int32(len(own)), AvailableReplicas: ready}
	h.g.Expect(env.Client.Status().Update(h.ctx, sts)).To(Succeed())
}

func (k *kubeControllers) ownPods(uid types.UID) []corev1.Pod {
	var own []corev1.Pod
	for _, p := range k.pods() {
		if ref := metav1.GetControllerOf(&p); ref != nil && ref.UID == uid && p.DeletionTimestamp.IsZero() {
			own = append(own, p)
		}
	}
	return own
}

// readyPodsOf counts the ready pods Service name selects.
func (k *kubeControllers) readyPodsOf(name string) int {
	h := k.h
	h.t.Helper()
	svc := h.service(name)
	sel := labels.SelectorFromSet(svc.Spec.Selector)
	n := 0
	for _, p := range k.pods() {
		if sel.Matches(labels.Set(p.Labels)) && podReady(&p) {
			n++
		}
	}
	return n
}

// datasancePods are the pods left by the Datasance operator's workload of component.
func (k *kubeControllers) datasancePods(component string) []string {
	var names []string
	for _, p := range k.pods() {
		if p.Labels["datasance.com/component"] == component {
			names = append(names, p.Name)
		}
	}
	return names
}

// operatorPods are the pods of component of the operator's own workloads.
func (k *kubeControllers) operatorPods(component string) []string {
	var names []string
	for _, p := range k.pods() {
		if p.Labels["app.kubernetes.io/name"] == "iofog" && p.Labels["app.kubernetes.io/component"] == component {
			names = append(names, p.Name)
		}
	}
	return names
}
