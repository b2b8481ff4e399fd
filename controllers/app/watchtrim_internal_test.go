package app

import (
	"encoding/json"
	"strings"
	"testing"

	kustomizev1 "github.com/fluxcd/kustomize-controller/api/v1"
	"github.com/fluxcd/pkg/apis/meta"
	. "github.com/onsi/gomega"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// jsonSize is the size of obj's JSON form: about what a cache holds of it.
func jsonSize(g Gomega, obj any) int {
	data, err := json.Marshal(obj)
	g.ExpectWithOffset(1, err).NotTo(HaveOccurred())
	return len(data)
}

// A hostile vCluster administrator sizes what the watches cache: megabytes of spec, inventory,
// annotations and condition messages per object. Trimmed, each object is a few hundred bytes,
// and what the event filters and appsOf read is unchanged.
func TestWatchedObjectsAreTrimmed(t *testing.T) {
	g := NewWithT(t)
	huge := strings.Repeat("x", 1<<20)

	ks := kustomization(3, 3, "main@sha1:abc", metav1.ConditionTrue, "ReconciliationSucceeded", huge)
	ks.Annotations = map[string]string{"tenant/padding": huge}
	ks.Spec.Path = huge
	ks.Status.Conditions = append(ks.Status.Conditions, metav1.Condition{Type: "Healthy", Status: metav1.ConditionTrue, Reason: "x", Message: huge})
	ks.Status.Inventory = &kustomizev1.ResourceInventory{}
	for range 10_000 {
		ks.Status.Inventory.Entries = append(ks.Status.Inventory.Entries, kustomizev1.ResourceRef{ID: "ns_name_apps_Deployment", Version: "v1"})
	}
	g.Expect(jsonSize(g, ks)).To(BeNumerically(">", 3<<20))
	out, err := trimWatched(ks)
	g.Expect(err).NotTo(HaveOccurred())
	trimmed := out.(*kustomizev1.Kustomization)
	g.Expect(jsonSize(g, trimmed)).To(BeNumerically("<", 2048))
	want := outcomeOf(ks)
	want.readyMessage = want.readyMessage[:maxWatchedMessage]
	g.Expect(outcomeOf(trimmed)).To(Equal(want))
	g.Expect(trimmed.Name).To(Equal(ks.Name))
	g.Expect(trimmed.Namespace).To(Equal(ks.Namespace))
	g.Expect(trimmed.Status.Conditions).To(HaveLen(1))
	g.Expect(trimmed.Status.Conditions[0].Type).To(Equal(meta.ReadyCondition))

	ing := &networkingv1.Ingress{ObjectMeta: metav1.ObjectMeta{Namespace: "web", Name: "web", Generation: 2, Annotations: map[string]string{"a": huge}}}
	for range 1000 {
		ing.Status.LoadBalancer.Ingress = append(ing.Status.LoadBalancer.Ingress, networkingv1.IngressLoadBalancerIngress{Hostname: "lb.example.com"})
	}
	out, err = trimWatched(ing)
	g.Expect(err).NotTo(HaveOccurred())
	ting := out.(*networkingv1.Ingress)
	g.Expect(jsonSize(g, ting)).To(BeNumerically("<", 2048))
	g.Expect(ting.Status.LoadBalancer.Ingress).To(HaveLen(maxWatchedIngressAddresses))
	g.Expect(ting.Generation).To(Equal(int64(2)))

	cert := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "cert-manager.io/v1", "kind": "Certificate",
		"metadata": map[string]any{"namespace": "web", "name": "web-tls", "generation": int64(4), "annotations": map[string]any{"a": huge}},
		"spec":     map[string]any{"secretName": "web-tls", "dnsNames": []any{huge}},
		"status": map[string]any{"conditions": []any{
			map[string]any{"type": "Issuing", "status": "True", "message": huge},
			map[string]any{"type": "Ready", "status": "True", "reason": "Ready", "message": "Certificate is up to date", "observedGeneration": int64(4)},
		}},
	}}
	out, err = trimWatched(cert)
	g.Expect(err).NotTo(HaveOccurred())
	tcert := out.(*unstructured.Unstructured)
	g.Expect(jsonSize(g, tcert)).To(BeNumerically("<", 1024))
	g.Expect(certificateSecret(tcert)).To(Equal("web-tls"))
	g.Expect(certificateReadiness(tcert)).To(Equal(certificateReadiness(cert)))
	g.Expect(tcert.GetGeneration()).To(Equal(int64(4)))

	// A status change the pass reads still reaches the filter; one it does not read does not.
	notReady := cert.DeepCopy()
	conds, _, _ := unstructured.NestedSlice(notReady.Object, "status", "conditions")
	conds[1].(map[string]any)["status"] = "False"
	g.Expect(unstructured.SetNestedSlice(notReady.Object, conds, "status", "conditions")).To(Succeed())
	tnotReady, _ := trimWatched(notReady)
	g.Expect(statusOrGenerationChanged(tcert, tnotReady.(*unstructured.Unstructured))).To(BeTrue())
	issuing := cert.DeepCopy()
	conds, _, _ = unstructured.NestedSlice(issuing.Object, "status", "conditions")
	conds[0].(map[string]any)["message"] = "another tenant-written message"
	g.Expect(unstructured.SetNestedSlice(issuing.Object, conds, "status", "conditions")).To(Succeed())
	tissuing, _ := trimWatched(issuing)
	g.Expect(statusOrGenerationChanged(tcert, tissuing.(*unstructured.Unstructured))).To(BeFalse(), "a status write the pass does not read is no reason for a pass")

	other := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "ConfigMap"}}
	same, err := trimWatched(other)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(same).To(BeIdenticalTo(other))
}
