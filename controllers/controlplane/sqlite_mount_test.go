package controlplane_test

import (
	"encoding/json"
	"testing"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	datasancev3 "github.com/kubeopera/kubeopera-operator/api/datasance/v3"
	"github.com/kubeopera/kubeopera-operator/controllers/controlplane"
	"github.com/kubeopera/kubeopera-operator/controllers/controlplane/internal/resources"
	"github.com/kubeopera/kubeopera-operator/internal/testfixture"
)

// An upgrade never drops the SQLite database. An earlier operator version (and the Datasance
// operator) mounted claim controller-sqlite at the 3.7 image's package path; rolling such a
// Controller onto this version's mount loses the database: a 3.8+ image never wrote it to the
// claim there, and a 3.7 one wrote a database 3.8+ cannot read. The pass refuses with the terminal
// SQLiteDatabaseAtRisk, names the step to take first, and leaves the Deployment as it is; the
// confirmation annotation lets the roll happen.
func TestUpgradeNeverRollsAwayTheSQLiteDatabase(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		image, says string
	}{
		{"ghcr.io/datasance/controller:3.9.0", "cp -a /home/runner/.npm-global/lib/node_modules/controller/src/data/sqlite_files/. " + legacySQLitePath + "/"},
		{"ghcr.io/datasance/controller:3.7.3", "a 3.7 Controller"},
		{"registry.example.com/controller@sha256:0123", "a 3.8+ image keeps its database on the pod's filesystem there"},
	} {
		t.Run(tc.image, func(t *testing.T) {
			t.Parallel()
			h := newHarness(t)
			g := h.g
			h.create(h.controlPlane(testfixture.WithSQLite()))
			h.createEarlierControllerDeployment(tc.image)
			before := h.deployment("controller")
			writes := h.writes.Load()

			for range 3 {
				h.assignAddresses()
				_, _ = h.reconcile()
			}
			c := h.trueCondition()
			g.Expect(c.Reason).To(Equal(datasancev3.ReasonSQLiteDatabaseAtRisk))
			g.Expect(c.Message).To(ContainSubstring(tc.says))
			g.Expect(c.Message).To(ContainSubstring(resources.AnnotationSQLiteMountConfirmed + "=true"))
			after := h.deployment("controller")
			g.Expect(after.Generation).To(Equal(before.Generation), "the Deployment is not rolled")
			g.Expect(resources.LegacySQLiteMount(after)).To(Equal(legacySQLitePath))
			g.Expect(h.writes.Load()-writes).To(BeNumerically(">", 0), "the other objects are applied")

			// The person took the step and confirms: the Controller is rolled onto the claim.
			h.update(func(cp *datasancev3.ControlPlane) {
				cp.Annotations = map[string]string{resources.AnnotationSQLiteMountConfirmed: "true"}
			})
			h.bringUpExisting()
			g.Expect(resources.LegacySQLiteMount(h.deployment("controller"))).To(BeEmpty())
		})
	}
}

// legacySQLitePath is where operator versions before 0.2.0 mounted claim controller-sqlite.
const legacySQLitePath = "/home/runner/.npm-global/lib/node_modules/@datasance/iofogcontroller/src/data/sqlite_files"

// createEarlierControllerDeployment creates Deployment controller as an earlier operator version
// left it: this version's Deployment with the claim at the 3.7 package path and image.
func (h *harness) createEarlierControllerDeployment(image string) {
	h.t.Helper()
	cp := h.get()
	ac := resources.ControllerDeployment(cp, resources.Images{Controller: image, Router: "r:1", Nats: "n:1"},
		resources.ControllerURLs{PublicURL: "http://controller.example.com:51121"}, resources.ControllerPodHashes{Credentials: "earlier"})
	raw, err := json.Marshal(ac)
	h.g.Expect(err).NotTo(HaveOccurred())
	d := &appsv1.Deployment{}
	h.g.Expect(json.Unmarshal(raw, d)).To(Succeed())
	c := &d.Spec.Template.Spec.Containers[0]
	for i := range c.VolumeMounts {
		if c.VolumeMounts[i].MountPath == resources.SQLiteDataDir {
			c.VolumeMounts[i].MountPath = legacySQLitePath
		}
	}
	// Applied with the operator's field manager, as the earlier version did: this version's apply
	// then owns the mount and moves it.
	u, err := runtime.DefaultUnstructuredConverter.ToUnstructured(d)
	h.g.Expect(err).NotTo(HaveOccurred())
	obj := &unstructured.Unstructured{Object: u}
	obj.SetGroupVersionKind(appsv1.SchemeGroupVersion.WithKind("Deployment"))
	unstructured.RemoveNestedField(obj.Object, "status")
	unstructured.RemoveNestedField(obj.Object, "metadata", "creationTimestamp")
	h.g.Expect(env.Client.Apply(h.ctx, client.ApplyConfigurationFromUnstructured(obj), client.FieldOwner(controlplane.FieldOwner))).To(Succeed())
}
