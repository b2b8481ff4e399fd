package resources

import (
	"testing"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/kubeopera/kubeopera-operator/internal/testfixture"
)

// A workload of a component's name is this operator's when it selects by our labels, the Datasance
// operator's when it selects by exactly its labels (testfixture states them independently) and
// nothing but this ControlPlane controls it, and foreign otherwise.
func TestClassifyWorkload(t *testing.T) {
	cp := testfixture.ControlPlane(testfixture.WithUID("uid-1"))
	other := testfixture.ControlPlane(testfixture.Named("other"), testfixture.WithUID("uid-2"))
	byUs := &metav1.OwnerReference{UID: "uid-1", Controller: ptr.To(true)}
	byOther := &metav1.OwnerReference{UID: "uid-9", Controller: ptr.To(true)}
	datasance := func(component string) *metav1.LabelSelector {
		return &metav1.LabelSelector{MatchLabels: testfixture.DatasanceLabels(cp, component)}
	}
	withoutSkupper := datasance(ComponentRouter)
	delete(withoutSkupper.MatchLabels, "skupper.io/type")
	for _, tc := range []struct {
		name       string
		component  string
		selector   *metav1.LabelSelector
		controller *metav1.OwnerReference
		want       WorkloadOrigin
	}{
		{"ours", ComponentController, &metav1.LabelSelector{MatchLabels: selectorLabels("iofog", ComponentController)}, byUs, WorkloadOurs},
		{"ours, no controller", ComponentNats, &metav1.LabelSelector{MatchLabels: selectorLabels("iofog", ComponentNats)}, nil, WorkloadOurs},
		{"datasance controller", ComponentController, datasance(ComponentController), byUs, WorkloadDatasance},
		{"datasance router", ComponentRouter, datasance(ComponentRouter), byUs, WorkloadDatasance},
		{"datasance nats, no controller", ComponentNats, datasance(ComponentNats), nil, WorkloadDatasance},
		{"datasance, controlled by another object", ComponentRouter, datasance(ComponentRouter), byOther, WorkloadForeign},
		{"datasance labels of another component", ComponentRouter, datasance(ComponentController), byUs, WorkloadForeign},
		{"datasance labels of another instance", ComponentNats, &metav1.LabelSelector{MatchLabels: testfixture.DatasanceLabels(other, ComponentNats)}, byUs, WorkloadForeign},
		{"datasance router without a Skupper label", ComponentRouter, withoutSkupper, byUs, WorkloadForeign},
		{"a user's", ComponentRouter, &metav1.LabelSelector{MatchLabels: map[string]string{"app": "router"}}, nil, WorkloadForeign},
		{"expressions", ComponentController, &metav1.LabelSelector{MatchLabels: selectorLabels("iofog", ComponentController),
			MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "tier", Operator: metav1.LabelSelectorOpExists}}}, byUs, WorkloadForeign},
		{"no selector", ComponentController, nil, byUs, WorkloadForeign},
	} {
		t.Run(tc.name, func(t *testing.T) {
			NewWithT(t).Expect(ClassifyWorkload(cp, tc.component, tc.selector, tc.controller)).To(Equal(tc.want))
		})
	}
}

// Pods of the Datasance operator are found by labels none of this operator's carries; the Services select
// the pods of both operators during a handover, this operator's only otherwise.
func TestHandoverLabels(t *testing.T) {
	g := NewWithT(t)
	cp := testfixture.ControlPlane(testfixture.WithUID("uid-1"))
	for _, c := range []string{ComponentController, ComponentRouter, ComponentNats} {
		theirs := testfixture.DatasanceLabels(cp, c)
		ours := StandardLabels(cp.Name, c)
		g.Expect(DatasancePodLabels(cp.Name, c)).To(matchedBy(theirs), c)
		g.Expect(DatasancePodLabels(cp.Name, c)).NotTo(matchedBy(ours), c)
		g.Expect(HandoverSelector(cp.Name, c)).To(matchedBy(theirs), c)
		g.Expect(HandoverSelector(cp.Name, c)).To(matchedBy(ours), c)
		g.Expect(selectorLabels(cp.Name, c)).NotTo(matchedBy(theirs), c)
	}
	svc := RouterService(cp)
	SelectDuringHandover(svc, cp.Name, ComponentRouter)
	g.Expect(svc.Spec.Selector).To(Equal(HandoverSelector(cp.Name, ComponentRouter)))
}

// matchedBy succeeds when every label of the actual selector is in labels.
func matchedBy(labels map[string]string) OmegaMatcher {
	return WithTransform(func(sel map[string]string) bool {
		for k, v := range sel {
			if labels[k] != v {
				return false
			}
		}
		return true
	}, BeTrue())
}
