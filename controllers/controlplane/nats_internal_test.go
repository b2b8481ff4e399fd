package controlplane

import (
	"encoding/base64"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/utils/ptr"

	"github.com/kubeopera/kubeopera-operator/controllers/controlplane/internal/resources"
)

func TestNatsPodAnnotations(t *testing.T) {
	now := time.Date(2026, 11, 29, 15, 4, 5, 0, time.FixedZone("CET", 3600))
	live := func(replicas int32, annotations map[string]string) *appsv1.StatefulSet {
		s := &appsv1.StatefulSet{}
		s.Spec.Replicas = ptr.To(replicas)
		s.Spec.Template.Annotations = annotations
		return s
	}
	old := map[string]string{resources.AnnotationRestartedAt: "2026-01-01T00:00:00Z", "other": "x"}
	cases := []struct {
		name     string
		live     *appsv1.StatefulSet
		replicas int32
		want     map[string]string
	}{
		{"scale-down stamps now in UTC", live(3, nil), 2, map[string]string{resources.AnnotationRestartedAt: "2026-11-29T14:04:05Z"}},
		{"scale-down replaces an old stamp", live(4, old), 2, map[string]string{resources.AnnotationRestartedAt: "2026-11-29T14:04:05Z"}},
		{"same count carries the stamp over", live(2, old), 2, map[string]string{resources.AnnotationRestartedAt: "2026-01-01T00:00:00Z"}},
		{"scale-up never stamps", live(2, nil), 3, nil},
		{"scale-up carries the stamp over", live(2, old), 5, map[string]string{resources.AnnotationRestartedAt: "2026-01-01T00:00:00Z"}},
		{"an earlier version's TLS hash is carried over as it is", live(2, map[string]string{resources.AnnotationTLSHash: "h1"}), 2,
			map[string]string{resources.AnnotationTLSHash: "h1"}},
		{"and kept on a scale-down", live(3, map[string]string{resources.AnnotationTLSHash: "h1"}), 2,
			map[string]string{resources.AnnotationTLSHash: "h1", resources.AnnotationRestartedAt: "2026-11-29T14:04:05Z"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			NewWithT(t).Expect(natsPodAnnotations(tc.live, tc.replicas, now, natsRestartKeys{desired: "k1", live: "k1"})).To(Equal(tc.want))
		})
	}
}

// The config hash follows the restart key of server.conf; a template without one (an earlier
// version's) gets one only when the key changes.
func TestNatsPodAnnotationsConfigHash(t *testing.T) {
	now := time.Date(2026, 11, 29, 15, 4, 5, 0, time.UTC)
	live := func(annotations map[string]string) *appsv1.StatefulSet {
		s := &appsv1.StatefulSet{}
		s.Spec.Replicas = ptr.To(int32(2))
		s.Spec.Template.Annotations = annotations
		return s
	}
	hashed := map[string]string{resources.AnnotationNatsConfigHash: "k1"}
	cases := []struct {
		name    string
		live    *appsv1.StatefulSet
		restart natsRestartKeys
		want    map[string]string
	}{
		{"same key: kept", live(hashed), natsRestartKeys{desired: "k1", live: "k1"}, hashed},
		{"new key: restart", live(hashed), natsRestartKeys{desired: "k2", live: "k1"}, map[string]string{resources.AnnotationNatsConfigHash: "k2"}},
		{"earlier version, same key: not added", live(nil), natsRestartKeys{desired: "k1", live: "k1"}, nil},
		{"earlier version, new key: added", live(nil), natsRestartKeys{desired: "k2", live: "k1"}, map[string]string{resources.AnnotationNatsConfigHash: "k2"}},
		{"earlier version, no file before: added", live(nil), natsRestartKeys{desired: "k2"}, map[string]string{resources.AnnotationNatsConfigHash: "k2"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			NewWithT(t).Expect(natsPodAnnotations(tc.live, 2, now, tc.restart)).To(Equal(tc.want))
		})
	}
}

func TestLiveNatsStorage(t *testing.T) {
	g := NewWithT(t)
	sts := &appsv1.StatefulSet{}
	_, ok := liveNatsStorage(sts)
	g.Expect(ok).To(BeFalse())
	claim := corev1.PersistentVolumeClaim{}
	claim.Name = "js-data"
	claim.Spec.StorageClassName = ptr.To("fast")
	claim.Spec.Resources.Requests = corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("20Gi")}
	sts.Spec.VolumeClaimTemplates = append(sts.Spec.VolumeClaimTemplates, corev1.PersistentVolumeClaim{}, claim)
	st, ok := liveNatsStorage(sts)
	g.Expect(ok).To(BeTrue())
	g.Expect(st.Equal(resources.NatsStorage{Size: resource.MustParse("20Gi"), ClassName: "fast"})).To(BeTrue())
}

func TestNewNatsJetStreamKey(t *testing.T) {
	g := NewWithT(t)
	a, b := newNatsJetStreamKey(), newNatsJetStreamKey()
	raw, err := base64.StdEncoding.DecodeString(a)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(raw).To(HaveLen(32))
	g.Expect(a).NotTo(Equal(b))
}
