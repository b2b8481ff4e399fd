package controlplane_test

import (
	"errors"
	"regexp"
	"testing"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	datasancev3 "github.com/kubeopera/kubeopera-operator/api/datasance/v3"
	"github.com/kubeopera/kubeopera-operator/internal/testfixture"
)

// Deleting a ControlPlane keeps the data stores and the keys that read them: the Controller's
// SQLite PVC, the JetStream key and the four CA Secrets (the database holds the CAs) carry no
// owner reference (like the JetStream PVCs, which the StatefulSet retains), so the garbage
// collector leaves them; a ControlPlane of the same name created again runs on the same
// database, with the same CAs, and reads the same streams.
func TestDeletionKeepsDataStoresAndKeys(t *testing.T) {
	t.Parallel()
	h, _ := newNatsHarness(t)
	g := h.g
	h.bringUpNats(h.controlPlane(testfixture.WithNATS(), testfixture.WithSQLite()))
	old := h.get()
	pvc := &corev1.PersistentVolumeClaim{}
	g.Expect(h.exists(pvc, "controller-sqlite")).To(BeTrue())
	g.Expect(pvc.OwnerReferences).To(BeEmpty())
	jsk := h.secret("nats-jetstream-key-" + cpName)
	g.Expect(jsk.OwnerReferences).To(BeEmpty())
	g.Expect(h.deployment("controller").OwnerReferences).To(ConsistOf(HaveField("UID", old.UID)), "the rest is owned")

	g.Expect(env.Client.Delete(h.ctx, old)).To(Succeed())
	collected := h.collectGarbage(old.UID)
	g.Expect(collected).To(ContainElements("Deployment/controller", "StatefulSet/nats", "Secret/router-site-server", "Secret/nats-site-server"))
	g.Expect(collected).NotTo(ContainElements("PersistentVolumeClaim/controller-sqlite", "Secret/nats-jetstream-key-"+cpName,
		"Secret/router-site-ca", "Secret/default-router-local-ca", "Secret/nats-site-ca", "Secret/default-nats-local-ca"))
	cas := map[string][]byte{}
	for name := range operatorCAs {
		cas[name] = h.secret(name).Data["tls.crt"]
	}

	h.bringUpNats(h.controlPlane(testfixture.WithNATS(), testfixture.WithSQLite()))
	again := &corev1.PersistentVolumeClaim{}
	g.Expect(h.exists(again, "controller-sqlite")).To(BeTrue())
	g.Expect(again.UID).To(Equal(pvc.UID), "the same database")
	g.Expect(h.secret("nats-jetstream-key-"+cpName).Data).To(Equal(jsk.Data), "the same JetStream key")
	for name, cert := range cas {
		g.Expect(h.secret(name).Data["tls.crt"]).To(Equal(cert), "the same CA %s", name)
	}
}

// Data stores an earlier operator version created with an owner reference are released on the
// next pass, once, so that a later deletion no longer collects them. The manager holds delete on
// Secrets and PVCs for the names it writes only, and the suite's API server runs
// OwnerReferencesPermissionEnforcement (as OpenShift does), so the JetStream key, whose name
// carries the ControlPlane's, cannot be released by the operator: that is the terminal
// DataStoreOwned, with the command that releases it, and nothing else is written until it ran.
func TestOwnedDataStoresAreReleased(t *testing.T) {
	t.Parallel()
	h, _ := newNatsHarness(t)
	g := h.g
	h.bringUpNats(h.controlPlane(testfixture.WithNATS(), testfixture.WithSQLite()))
	cp := h.get()
	owner := metav1.OwnerReference{APIVersion: datasancev3.GroupVersion.String(), Kind: "ControlPlane", Name: cp.Name,
		UID: cp.UID, Controller: new(true), BlockOwnerDeletion: new(true)}
	jskName := "nats-jetstream-key-" + cpName
	for _, obj := range []client.Object{&corev1.PersistentVolumeClaim{}, &corev1.Secret{}} {
		name := "controller-sqlite"
		if _, ok := obj.(*corev1.Secret); ok {
			name = jskName
		}
		g.Expect(env.Client.Get(h.ctx, h.key(name), obj)).To(Succeed())
		obj.SetOwnerReferences([]metav1.OwnerReference{owner})
		g.Expect(env.Client.Update(h.ctx, obj)).To(Succeed())
	}

	env.ExpectRefused("patch", "", "secrets", h.ns, jskName,
		"removing the owner reference needs delete on the Secret, which the operator holds by name only")
	for i := range 2 {
		h.writes.Store(0)
		_, err := h.reconcile()
		g.Expect(errors.Is(err, reconcile.TerminalError(nil))).To(BeTrue(), "error: %v", err)
		if i == 0 {
			g.Expect(h.writes.Load()).To(BeNumerically("<=", 3), "the PVC's release, the refused release and the status patch")
		} else {
			g.Expect(h.writes.Load()).To(BeNumerically("<=", 2), "the refused release and the status patch")
		}
	}
	h.expectState(datasancev3.ConditionReady, datasancev3.ReasonDataStoreOwned)
	pvc := &corev1.PersistentVolumeClaim{}
	g.Expect(h.exists(pvc, "controller-sqlite")).To(BeTrue())
	g.Expect(pvc.OwnerReferences).To(BeEmpty(), "the claim's name is fixed: released")
	g.Expect(h.secret(jskName).OwnerReferences).To(HaveLen(1), "refused")
	msg := h.trueCondition().Message
	g.Expect(msg).To(ContainSubstring("Secret " + jskName + " carries the ControlPlane's owner reference"))
	g.Expect(h.rec.list()).To(ContainElement(HavePrefix("Warning DataStoreOwned")))

	// The command of the message, run by an administrator, releases it; the pass goes on.
	h.releaseAsAdministrator(msg, jskName)
	h.mustBeReady()
	h.writes.Store(0)
	h.mustBeReady()
	g.Expect(h.writes.Load()).To(BeZero())
}

// releaseAsAdministrator runs the command of a DataStoreOwned message as an administrator would
// (the JSON patch, with the suite's admin client) and expects it to remove the owner reference
// of Secret name.
func (h *harness) releaseAsAdministrator(msg, name string) {
	h.t.Helper()
	cmd := regexp.MustCompile(`kubectl -n (\S+) patch secret (\S+) --type=json -p '([^']+)'`).FindStringSubmatch(msg)
	h.g.Expect(cmd).NotTo(BeNil(), msg)
	h.g.Expect(cmd[1:3]).To(Equal([]string{h.ns, name}))
	h.g.Expect(env.Client.Patch(h.ctx, h.secret(name), client.RawPatch(types.JSONPatchType, []byte(cmd[3])))).To(Succeed())
	h.g.Expect(h.secret(name).OwnerReferences).To(BeEmpty())
}

// collectGarbage stands in for the kube-controller-manager's garbage collector, which envtest
// does not run: it deletes what the collector would, every object of the owned kinds in the
// namespace whose owner reference points at uid, and returns them as Kind/name.
func (h *harness) collectGarbage(uid types.UID) []string {
	h.t.Helper()
	lists := map[string]client.ObjectList{
		"Deployment": &appsv1.DeploymentList{}, "StatefulSet": &appsv1.StatefulSetList{}, "Service": &corev1.ServiceList{},
		"Secret": &corev1.SecretList{}, "ConfigMap": &corev1.ConfigMapList{}, "ServiceAccount": &corev1.ServiceAccountList{},
		"PersistentVolumeClaim": &corev1.PersistentVolumeClaimList{}, "Role": &rbacv1.RoleList{}, "RoleBinding": &rbacv1.RoleBindingList{},
	}
	var collected []string
	for kind, list := range lists {
		h.g.Expect(env.Client.List(h.ctx, list, client.InNamespace(h.ns))).To(Succeed())
		items, err := metaItems(list)
		h.g.Expect(err).NotTo(HaveOccurred())
		for _, obj := range items {
			for _, ref := range obj.GetOwnerReferences() {
				if ref.UID == uid {
					h.g.Expect(client.IgnoreNotFound(env.Client.Delete(h.ctx, obj))).To(Succeed())
					collected = append(collected, kind+"/"+obj.GetName())
					break
				}
			}
		}
	}
	return collected
}

func metaItems(list client.ObjectList) ([]client.Object, error) {
	objs, err := meta.ExtractList(list)
	if err != nil {
		return nil, err
	}
	out := make([]client.Object, 0, len(objs))
	for _, o := range objs {
		if co, ok := o.(client.Object); ok {
			out = append(out, co)
		}
	}
	return out, nil
}
