package controlplane_test

import (
	"testing"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	datasancev3 "github.com/kubeopera/kubeopera-operator/api/datasance/v3"
	"github.com/kubeopera/kubeopera-operator/controllers/controlplane"
	"github.com/kubeopera/kubeopera-operator/internal/iofog/fake"
	"github.com/kubeopera/kubeopera-operator/internal/testfixture"
)

// A spec change moves ready → updating (written at once) → ready with the new generation; the
// Deployment's env follows, the Controller API is called again, and an unrelated spec change of
// the credentials rolls the pods through the hash.
func TestSpecChangeUpdatesThenReady(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	g := h.g
	h.bringUp(h.controlPlane())
	oldHash := h.deployment("controller").Spec.Template.Annotations[controlplane.AnnotationCredentialsHash]
	h.api.Reset()

	h.update(func(cp *datasancev3.ControlPlane) {
		cp.Spec.Controller.LogLevel = "debug"
		cp.Spec.Images.Controller = "example.com/controller:9.9.9"
	})
	h.mustRequeue(controlplane.RequeueTransition)
	h.expectState(datasancev3.ConditionUpdating, datasancev3.ReasonProgressing)
	g.Expect(conditionOf(h.get(), datasancev3.ConditionReady)).To(And(
		HaveField("Status", metav1.ConditionFalse), HaveField("Reason", datasancev3.ReasonTransitioned)))
	g.Expect(h.rec.list()).To(ContainElement(HavePrefix("Normal Updating")))
	g.Expect(h.api.Calls()).To(BeEmpty())

	// The next pass rolls the new Controller Deployment out and waits for it; once its pods run,
	// the pass after is ready.
	h.rollOut()
	h.mustBeReady()
	cp := h.get()
	g.Expect(cp.Status.ObservedGeneration).To(Equal(cp.Generation))
	g.Expect(cp.Generation).To(BeNumerically(">", 1))
	c := h.deployment("controller").Spec.Template.Spec.Containers[0]
	g.Expect(envOf(c)).To(HaveKeyWithValue("LOG_LEVEL", "debug"))
	g.Expect(c.Image).To(Equal("example.com/controller:9.9.9"))
	g.Expect(h.api.Calls()).To(ContainElement("PUT /api/v3/router"), "an update pass registers again (docs/controlplane.md#spec-changes)")
	g.Expect(h.deployment("controller").Spec.Template.Annotations).To(HaveKeyWithValue(controlplane.AnnotationCredentialsHash, oldHash),
		"credentials unchanged: no rollout")

	// Changing the database password changes the Secret and rolls the pods.
	h.update(func(cp *datasancev3.ControlPlane) { cp.Spec.Database.Password = "rotated" })
	h.mustRequeue(controlplane.RequeueTransition)
	h.rollOut()
	h.mustBeReady()
	g.Expect(h.secret("controller-db-credentials").Data).To(HaveKeyWithValue("password", []byte("rotated")))
	g.Expect(h.deployment("controller").Spec.Template.Annotations[controlplane.AnnotationCredentialsHash]).NotTo(Equal(oldHash))
}

// Editing the referenced bootstrap password Secret (no spec change) updates the auth Secret and
// rolls the Controller pods, without calling the Controller API (nothing registered changed).
func TestPasswordSecretChangeRollsPods(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	g := h.g
	secret := h.createSecret("bootstrap", map[string]string{"password": fake.DefaultPassword})
	h.bringUp(h.controlPlane(testfixture.WithBootstrapPasswordFrom("bootstrap", "password")))
	before := h.deployment("controller")
	h.api.Reset()

	secret.StringData = map[string]string{"password": "new-password"}
	g.Expect(env.Client.Update(h.ctx, secret)).To(Succeed())
	// The pass that rolls the pods waits for the rollout; the pass after it is ready.
	h.rollOut()
	h.mustBeReady()
	g.Expect(h.secret("controller-auth-credentials").Data).To(HaveKeyWithValue("auth-bootstrap-password", []byte("new-password")))
	after := h.deployment("controller")
	g.Expect(after.Spec.Template.Annotations[controlplane.AnnotationCredentialsHash]).
		NotTo(Equal(before.Spec.Template.Annotations[controlplane.AnnotationCredentialsHash]))
	g.Expect(after.Generation).To(Equal(before.Generation+1), "the pod template changed: a rollout")
	g.Expect(h.api.Calls()).To(BeEmpty())
}

// While ready, a changed registration (the router got a new address) is registered again without
// a spec change; nothing else is called.
func TestReadyReRegistersChangedRouterAddress(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	g := h.g
	h.bringUp(h.controlPlane())
	h.api.Reset()
	h.setServiceAddress("router", "192.0.2.99")
	// The address is in the router's certificates: the router pods roll, and the pass that rolls
	// them waits for the rollout.
	h.rollOut()
	h.mustBeReady()
	router, _ := h.api.Router()
	g.Expect(router.Host).To(Equal("192.0.2.99"))
	g.Expect(h.api.Calls()).To(ContainElement("PUT /api/v3/router"))
	h.api.Reset()
	h.mustBeReady()
	g.Expect(h.api.Calls()).To(BeEmpty())
}

func conditionOf(cp *datasancev3.ControlPlane, typ string) metav1.Condition {
	for _, c := range cp.Status.Conditions {
		if c.Type == typ {
			return c
		}
	}
	return metav1.Condition{}
}
