package controlplane

import (
	"testing"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/event"

	datasancev3 "github.com/kubeopera/kubeopera-operator/api/datasance/v3"
	"github.com/kubeopera/kubeopera-operator/controllers/controlplane/internal/resources"
)

// The operator's own writes (status, the registration annotation) do not trigger a pass; a spec
// change (new generation), a foreign annotation, creation and deletion do.
func TestControlPlanePredicate(t *testing.T) {
	g := NewWithT(t)
	p := controlPlaneChanged()
	old := &datasancev3.ControlPlane{ObjectMeta: metav1.ObjectMeta{Name: "iofog", Generation: 3,
		Annotations: map[string]string{"team": "edge"}}}
	update := func(mutate func(*datasancev3.ControlPlane)) bool {
		n := old.DeepCopy()
		mutate(n)
		return p.Update(event.UpdateEvent{ObjectOld: old, ObjectNew: n})
	}

	g.Expect(update(func(cp *datasancev3.ControlPlane) {
		cp.Status.Controller.Message = "The Controller API is not available (connection reset)."
	})).To(BeFalse(), "status write")
	g.Expect(update(func(cp *datasancev3.ControlPlane) {
		cp.Annotations[resources.AnnotationRegistration] = "abc"
	})).To(BeFalse(), "own registration annotation")
	g.Expect(update(func(cp *datasancev3.ControlPlane) { cp.Generation = 4 })).To(BeTrue(), "spec change")
	g.Expect(update(func(cp *datasancev3.ControlPlane) {
		cp.Annotations["reconcile.fluxcd.io/requestedAt"] = "now"
	})).To(BeTrue(), "foreign annotation")
	g.Expect(p.Create(event.CreateEvent{Object: old})).To(BeTrue())
	g.Expect(p.Delete(event.DeleteEvent{Object: old})).To(BeTrue())
}
