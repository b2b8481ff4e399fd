package controlplane_test

import (
	"encoding/json"
	"testing"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/utils/ptr"

	datasancev3 "github.com/kubeopera/kubeopera-operator/api/datasance/v3"
	"github.com/kubeopera/kubeopera-operator/controllers/controlplane/internal/resources"
	"github.com/kubeopera/kubeopera-operator/internal/testfixture"
)

// The operand pod templates the operator renders (the Controller and Router Deployments and the
// NATS StatefulSet, straight from the builders in internal/resources) are admitted by the real
// API server's PodSecurity admission in a namespace that enforces the "restricted" standard.
// PodSecurity judges Pods, so each template is submitted as a Pod (server-side dry run).
//
// This test lives beside the reconciler rather than in test/podsecurity (which covers the tenant
// app and the operator's own Deployment) because the builders are internal to
// controllers/controlplane: no export exists only for a test.
func TestOperandPodsAreRestricted(t *testing.T) {
	requireEnv(t)
	g := NewWithT(t)
	nsName, err := env.RestrictedNamespace(t.Context())
	g.Expect(err).NotTo(HaveOccurred())
	admit := func(tpl corev1.PodTemplateSpec) error { return env.AdmitPod(t.Context(), nsName, tpl) }

	// The negative control: the namespace enforces, so the cases below can fail.
	g.Expect(apierrors.IsForbidden(admit(corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: []corev1.Container{{
		Name: "c", Image: "busybox", SecurityContext: &corev1.SecurityContext{Privileged: ptr.To(true)},
	}}}}))).To(BeTrue(), "PodSecurity admission is not enforcing")

	images := resources.Images{Controller: "ghcr.io/datasance/controller:3.9.0", Router: "ghcr.io/datasance/router:3.9.0", Nats: "ghcr.io/datasance/nats:2.15.0"}
	urls := resources.ControllerURLs{PublicURL: "https://controller.example.com", ConsoleURL: "https://controller.example.com"}
	specs := map[string]*datasancev3.ControlPlane{
		"defaults (SQLite, NATS and JetStream on)": testfixture.ControlPlane(testfixture.Named("pot"), testfixture.InNamespace(nsName),
			testfixture.WithBootstrap("admin", "x"), testfixture.WithSQLite()),
		// The fixture's database is the external Postgres at db:5432.
		"external database, HTTPS, pull Secret, JetStream sized": testfixture.ControlPlane(testfixture.Named("pot"), testfixture.InNamespace(nsName),
			testfixture.WithBootstrap("admin", "x"), testfixture.WithNATSReplicas(3), testfixture.WithHTTPS("controller-tls"),
			func(cp *datasancev3.ControlPlane) {
				cp.Spec.Replicas.Controller = 2
				cp.Spec.Images.PullSecret = "registry"
				cp.Spec.Nats = &datasancev3.Nats{Enabled: ptr.To(true), JetStream: &datasancev3.JetStream{
					StorageSize: "20Gi", MemoryStoreSize: "2G", StorageClassName: "fast",
				}}
			}),
	}
	for name, cp := range specs {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			g.Expect(cp.Spec.NatsEnabled()).To(BeTrue())
			templates := map[string]corev1.PodTemplateSpec{
				"controller": deploymentTemplate(g, resources.ControllerDeployment(cp, images, urls, resources.ControllerPodHashes{Credentials: "h"})),
				"router":     deploymentTemplate(g, resources.RouterDeployment(cp, images.Router, "h")),
				"nats": statefulSetTemplate(g, resources.NatsStatefulSet(cp, resources.NatsWorkload{
					Image: images.Nats, Storage: resources.DesiredNatsStorage(&cp.Spec),
				})),
			}
			for component, tpl := range templates {
				t.Run(component, func(t *testing.T) {
					g := NewWithT(t)
					g.Expect(tpl.Spec.Containers).NotTo(BeEmpty())
					g.Expect(admit(tpl)).To(Succeed(), "the %s pod template is restricted", component)
				})
			}
		})
	}
}

// deploymentTemplate converts an apply configuration to the typed object's pod template.
func deploymentTemplate(g Gomega, ac any) corev1.PodTemplateSpec {
	d := &appsv1.Deployment{}
	b, err := json.Marshal(ac)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(json.Unmarshal(b, d)).To(Succeed())
	return d.Spec.Template
}

// statefulSetTemplate converts an apply configuration to the pod template of the StatefulSet's
// first pod: like the StatefulSet controller, it adds a volume for each volume claim template,
// bound to the claim <template>-<set>-0 (PodSecurity admits persistentVolumeClaim volumes).
func statefulSetTemplate(g Gomega, ac any) corev1.PodTemplateSpec {
	s := &appsv1.StatefulSet{}
	b, err := json.Marshal(ac)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(json.Unmarshal(b, s)).To(Succeed())
	tpl := s.Spec.Template
	for _, claim := range s.Spec.VolumeClaimTemplates {
		tpl.Spec.Volumes = append(tpl.Spec.Volumes, corev1.Volume{Name: claim.Name, VolumeSource: corev1.VolumeSource{
			PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: claim.Name + "-" + s.Name + "-0"},
		}})
	}
	return tpl
}
