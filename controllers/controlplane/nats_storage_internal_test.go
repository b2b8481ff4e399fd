package controlplane

import (
	"testing"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	datasancev3 "github.com/kubeopera/kubeopera-operator/api/datasance/v3"
)

// The JetStream PVCs are recognised by name, js-data-nats-<ordinal> only, and sorted by ordinal.
func TestNatsDataClaims(t *testing.T) {
	g := NewWithT(t)
	for name, want := range map[string]bool{
		"js-data-nats-0": true, "js-data-nats-12": true, "js-data-nats-": false, "js-data-nats-x": false,
		"js-data-nats-0-old": false, "controller-sqlite": false, "js-data-other-0": false,
	} {
		g.Expect(natsDataClaimName.MatchString(name)).To(Equal(want), name)
	}
	d := natsData{claims: []corev1.PersistentVolumeClaim{
		claim("js-data-nats-10", "5Gi", ""), claim("js-data-nats-2", "10Gi", "4Gi"), claim("js-data-nats-1", "10Gi", "10Gi"),
	}}
	name, size, ok := d.smallest()
	g.Expect(ok).To(BeTrue())
	g.Expect(name).To(Equal("js-data-nats-2"), "capacity wins over the request once reported")
	g.Expect(size.String()).To(Equal("4Gi"))
	g.Expect(natsData{}.exists()).To(BeFalse())
	_, _, ok = natsData{}.smallest()
	g.Expect(ok).To(BeFalse())
	g.Expect(claimOrdinal("js-data-nats-10")).To(Equal(10))
	g.Expect(claimOrdinal("other")).To(Equal(-1))
}

// The storage in force: the spec's without a StatefulSet or PVCs; the live claim template once
// the StatefulSet exists (a different spec is refused); never more than the smallest PVC holds.
func TestPlanNatsStorage(t *testing.T) {
	spec := func(size, class string) *datasancev3.ControlPlaneSpec {
		return &datasancev3.ControlPlaneSpec{Nats: &datasancev3.Nats{JetStream: &datasancev3.JetStream{StorageSize: size, StorageClassName: class}}}
	}
	cases := []struct {
		name         string
		spec         *datasancev3.ControlPlaneSpec
		live         *appsv1.StatefulSet
		claims       []corev1.PersistentVolumeClaim
		template     string
		fileStore    string
		serverConf   string
		refusedMatch string
	}{
		{name: "first install", spec: spec("20Gi", ""), template: "20Gi", fileStore: "20Gi"},
		{name: "default size", spec: &datasancev3.ControlPlaneSpec{}, template: "10Gi", fileStore: "10Gi"},
		{name: "unchanged", spec: spec("10Gi", ""), live: statefulSet("10Gi", ""), claims: []corev1.PersistentVolumeClaim{claim("js-data-nats-0", "10Gi", "10Gi")},
			template: "10Gi", fileStore: "10Gi"},
		{name: "equal quantities", spec: spec("1Gi", ""), live: statefulSet("1024Mi", ""), template: "1Gi", fileStore: "1Gi"},
		{name: "a volume larger than asked", spec: spec("10Gi", ""), live: statefulSet("10Gi", ""),
			claims: []corev1.PersistentVolumeClaim{claim("js-data-nats-0", "10Gi", "12Gi")}, template: "10Gi", fileStore: "10Gi"},
		{name: "grow while the template is immutable", spec: spec("20Gi", ""), live: statefulSet("10Gi", ""),
			template: "10Gi", fileStore: "10Gi", serverConf: "10Gi", refusedMatch: "StatefulSet nats keeps its claim template 10Gi"},
		{name: "shrink", spec: spec("5Gi", ""), live: statefulSet("10Gi", ""),
			template: "10Gi", fileStore: "10Gi", serverConf: "10Gi", refusedMatch: "keeps its claim template 10Gi"},
		{name: "another class, same size", spec: spec("10Gi", "fast"), live: statefulSet("10Gi", ""),
			template: "10Gi", fileStore: "10Gi", refusedMatch: "(class fast)"},
		{name: "new template over smaller volumes", spec: spec("20Gi", ""),
			claims:   []corev1.PersistentVolumeClaim{claim("js-data-nats-0", "20Gi", "20Gi"), claim("js-data-nats-1", "20Gi", "10Gi")},
			template: "20Gi", fileStore: "10Gi", serverConf: "10Gi", refusedMatch: "PVC js-data-nats-1 holds 10Gi"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			st := planNatsStorage(tc.spec, tc.live, natsData{claims: tc.claims})
			g.Expect(st.template.Size.String()).To(Equal(tc.template))
			g.Expect(st.fileStore.String()).To(Equal(tc.fileStore))
			g.Expect(st.serverConfFileStore()).To(Equal(tc.serverConf))
			if tc.refusedMatch == "" {
				g.Expect(st.refused).NotTo(HaveOccurred())
				return
			}
			g.Expect(st.refused).To(MatchError(ContainSubstring(tc.refusedMatch)))
			g.Expect(st.refused.Error()).To(ContainSubstring("--cascade=orphan"), "says how to grow")
		})
	}
}

func claim(name, request, capacity string) corev1.PersistentVolumeClaim {
	pvc := corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: corev1.PersistentVolumeClaimSpec{Resources: corev1.VolumeResourceRequirements{
			Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse(request)},
		}},
	}
	if capacity != "" {
		pvc.Status.Capacity = corev1.ResourceList{corev1.ResourceStorage: resource.MustParse(capacity)}
	}
	return pvc
}

func statefulSet(size, class string) *appsv1.StatefulSet {
	tpl := corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: "js-data"}}
	tpl.Spec.Resources.Requests = corev1.ResourceList{corev1.ResourceStorage: resource.MustParse(size)}
	if class != "" {
		tpl.Spec.StorageClassName = ptr.To(class)
	}
	return &appsv1.StatefulSet{Spec: appsv1.StatefulSetSpec{VolumeClaimTemplates: []corev1.PersistentVolumeClaim{tpl}}}
}
