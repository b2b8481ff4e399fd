package controlplane_test

import (
	"context"
	"strconv"

	"github.com/nats-io/jwt/v2"
	"github.com/nats-io/nkeys"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kubeopera/kubeopera-operator/internal/iofog"
	"github.com/kubeopera/kubeopera-operator/internal/scheme"
)

// jwtBundle is the NATS JWT bundle ConfigMap.
const jwtBundle = "iofog-nats-jwt-bundle"

// controllerWritesToKubernetes makes the fake Controller write the hub JWT bundle as the real one
// does, with the permissions of ServiceAccount controller (the Role the operator grants it).
func (h *harness) controllerWritesToKubernetes() {
	h.t.Helper()
	cfg := rest.CopyConfig(env.Config)
	cfg.Impersonate = rest.ImpersonationConfig{
		UserName: "system:serviceaccount:" + h.ns + ":controller",
		Groups:   []string{"system:serviceaccounts", "system:serviceaccounts:" + h.ns, "system:authenticated"},
	}
	c, err := client.New(cfg, client.Options{Scheme: scheme.New()})
	h.g.Expect(err).NotTo(HaveOccurred())
	h.api.SetKubernetes(c, h.ns)
}

// appAccount is a NATS application account as the Controller makes one (signed by the
// operator of the bootstrap, JetStream enabled), with its key so that the test can issue users.
type appAccount struct {
	name, pub, jwt string
	key            nkeys.KeyPair
}

// addAppAccount makes an application account and gives it to the fake Controller, which lists
// it and writes it into the JWT bundle (when controllerWritesToKubernetes was called).
func (h *harness) addAppAccount(m natsMaterial, name string, applicationID int) appAccount {
	h.t.Helper()
	g := h.g
	operator, err := nkeys.FromSeed([]byte(m.bootstrap.OperatorSeed))
	g.Expect(err).NotTo(HaveOccurred())
	kp, err := nkeys.CreateAccount()
	g.Expect(err).NotTo(HaveOccurred())
	pub, err := kp.PublicKey()
	g.Expect(err).NotTo(HaveOccurred())
	claims := jwt.NewAccountClaims(pub)
	claims.Name = name
	claims.Limits.JetStreamLimits = jwt.JetStreamLimits{MemoryStorage: -1, DiskStorage: -1, Streams: -1, Consumer: -1}
	token, err := claims.Encode(operator)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(h.api.AddNatsAccount(h.ctx, iofog.NatsAccount{Name: name, PublicKey: pub, JWT: token, ApplicationID: ptr.To(applicationID)})).To(Succeed())
	return appAccount{name: name, pub: pub, jwt: token, key: kp}
}

// createNatsPVCs plays the StatefulSet controller, which envtest does not run: the js-data PVCs
// of the first n ordinals, made from the StatefulSet's claim template, bound, with the requested
// capacity.
func (h *harness) createNatsPVCs(n int) {
	h.t.Helper()
	tpl := h.statefulSet().Spec.VolumeClaimTemplates[0]
	for i := range n {
		pvc := &corev1.PersistentVolumeClaim{
			ObjectMeta: metav1.ObjectMeta{Namespace: h.ns, Name: "js-data-nats-" + strconv.Itoa(i), Labels: tpl.Labels},
			Spec:       *tpl.Spec.DeepCopy(),
		}
		pvc.Spec.VolumeName = "pv-" + h.ns + "-" + strconv.Itoa(i)
		h.g.Expect(env.Client.Create(h.ctx, pvc)).To(Succeed())
		pvc.Status = corev1.PersistentVolumeClaimStatus{
			Phase:       corev1.ClaimBound,
			AccessModes: pvc.Spec.AccessModes,
			Capacity:    corev1.ResourceList{corev1.ResourceStorage: *tpl.Spec.Resources.Requests.Storage()},
		}
		h.g.Expect(env.Client.Status().Update(h.ctx, pvc)).To(Succeed())
	}
}

// natsPVC reads PVC js-data-nats-<i>.
func (h *harness) natsPVC(i int) *corev1.PersistentVolumeClaim {
	h.t.Helper()
	pvc := &corev1.PersistentVolumeClaim{}
	h.g.Expect(env.Client.Get(h.ctx, h.key("js-data-nats-"+strconv.Itoa(i)), pvc)).To(Succeed())
	return pvc
}

// deleteNatsPVC deletes PVC js-data-nats-<i> and plays the PVC protection controller (no pod
// uses it), which envtest does not run: the finalizer goes, and so does the PVC.
func (h *harness) deleteNatsPVC(i int) {
	h.t.Helper()
	pvc := h.natsPVC(i)
	h.g.Expect(env.Client.Delete(h.ctx, pvc)).To(Succeed())
	if h.exists(pvc, pvc.Name) && len(pvc.Finalizers) > 0 {
		pvc.Finalizers = nil
		h.g.Expect(env.Client.Update(h.ctx, pvc)).To(Succeed())
	}
	h.g.Expect(h.exists(&corev1.PersistentVolumeClaim{}, pvc.Name)).To(BeFalse())
}

// deleteOrphaning deletes obj leaving its dependents (kubectl delete --cascade=orphan) and plays
// the garbage collector, which envtest does not run: it removes the orphan finalizer, so the
// object goes.
func (h *harness) deleteOrphaning(obj client.Object) {
	h.t.Helper()
	h.g.Expect(env.Client.Delete(h.ctx, obj, client.PropagationPolicy(metav1.DeletePropagationOrphan))).To(Succeed())
	if h.exists(obj, obj.GetName()) {
		obj.SetFinalizers(nil)
		h.g.Expect(env.Client.Update(h.ctx, obj)).To(Succeed())
	}
	h.g.Expect(h.exists(obj, obj.GetName())).To(BeFalse())
}

// expandableStorageClass creates a StorageClass that allows volume expansion (removed with the test).
func (h *harness) expandableStorageClass() string {
	h.t.Helper()
	sc := &storagev1.StorageClass{
		ObjectMeta:           metav1.ObjectMeta{Name: "expandable-" + h.ns},
		Provisioner:          "example.com/csi",
		AllowVolumeExpansion: ptr.To(true),
	}
	h.g.Expect(env.Client.Create(h.ctx, sc)).To(Succeed())
	h.t.Cleanup(func() { _ = env.Client.Delete(context.Background(), sc) })
	return sc.Name
}

// quantity parses a Kubernetes quantity.
func quantity(s string) resource.Quantity { return resource.MustParse(s) }
