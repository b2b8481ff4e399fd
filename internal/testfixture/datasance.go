package testfixture

import (
	"maps"
	"strconv"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	datasancev3 "github.com/kubeopera/kubeopera-operator/api/datasance/v3"
)

// The objects the Datasance iofog-operator (releases 3.6.0 to 3.7.x) leaves for a ControlPlane,
// as it writes them, for the tests of taking its place (docs/controlplane.md#taking-over-from-the-datasance-operator).
// The facts are stated here on their own, not taken from the operator's code, so that a test
// fails when the operator's idea of them drifts from what the Datasance operator writes: the same
// object names; app.kubernetes.io/name pot and datasance.com/component beside the instance,
// component and managed-by labels on every object; every label of a workload's pods in its
// selector, the router's three Skupper labels included; a controller reference to the
// ControlPlane on every object; a js-data claim template without labels.

// DatasanceFieldManager is the field manager of the Datasance operator's writes: it names none,
// so the API server takes its user agent's, its binary's name.
const DatasanceFieldManager = "iofog-operator"

// DatasanceSQLitePath is where the Datasance operator mounts PVC controller-sqlite in the
// Controller pod (the 3.7 image's database directory).
const DatasanceSQLitePath = "/home/runner/.npm-global/lib/node_modules/@datasance/iofogcontroller/src/data/sqlite_files/"

// DatasanceLabels are the labels of the Datasance operator's objects of a component (the pods'
// and their selectors' too).
func DatasanceLabels(cp *datasancev3.ControlPlane, component string) map[string]string {
	l := map[string]string{
		"app.kubernetes.io/name":       "pot",
		"app.kubernetes.io/instance":   cp.Name,
		"app.kubernetes.io/component":  component,
		"app.kubernetes.io/managed-by": "iofog-operator",
		"datasance.com/component":      component,
	}
	if component == "router" {
		l["application"] = "interior-router"
		l["skupper.io/component"] = "router"
		l["skupper.io/type"] = "site"
	}
	return l
}

// DatasanceMeta is the metadata of the Datasance operator's object name of a component: its
// labels and a controller reference to cp (which must have a UID).
func DatasanceMeta(cp *datasancev3.ControlPlane, component, name string) metav1.ObjectMeta {
	return metav1.ObjectMeta{
		Name:      name,
		Namespace: cp.Namespace,
		Labels:    DatasanceLabels(cp, component),
		OwnerReferences: []metav1.OwnerReference{{
			APIVersion: datasancev3.GroupVersion.String(), Kind: "ControlPlane", Name: cp.Name, UID: cp.UID,
			Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true),
		}},
	}
}

// DatasanceDeployment is the Datasance operator's Deployment of component (controller or
// router; the Deployment has the component's name): one replica, selected by every label. The
// Controller on SQLite (cp's database host empty) is recreated on rollout and mounts PVC
// controller-sqlite; the router rolls with a surge.
func DatasanceDeployment(cp *datasancev3.ControlPlane, component string) *appsv1.Deployment {
	labels := DatasanceLabels(cp, component)
	d := &appsv1.Deployment{
		ObjectMeta: DatasanceMeta(cp, component, component),
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To[int32](1),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Strategy: appsv1.DeploymentStrategy{
				Type: appsv1.RollingUpdateDeploymentStrategyType,
				RollingUpdate: &appsv1.RollingUpdateDeployment{
					MaxUnavailable: ptr.To(intstr.FromInt32(0)), MaxSurge: ptr.To(intstr.FromInt32(1)),
				},
			},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: maps.Clone(labels)},
				Spec: corev1.PodSpec{
					ServiceAccountName: component,
					Containers:         []corev1.Container{{Name: component, Image: "ghcr.io/datasance/" + component + ":3.7.3"}},
				},
			},
		},
	}
	if component == "controller" && cp.Spec.Database.Host == "" {
		d.Spec.Strategy = appsv1.DeploymentStrategy{Type: appsv1.RecreateDeploymentStrategyType}
		d.Spec.Template.Spec.Volumes = []corev1.Volume{{Name: "controller-sqlite", VolumeSource: corev1.VolumeSource{
			PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "controller-sqlite"},
		}}}
		d.Spec.Template.Spec.Containers[0].VolumeMounts = []corev1.VolumeMount{{Name: "controller-sqlite", MountPath: DatasanceSQLitePath}}
	}
	return d
}

// DatasanceReplicaSet is the ReplicaSet the Deployment controller made for d (which must have a
// UID): d's pod labels plus pod-template-hash hash, controlled by d.
func DatasanceReplicaSet(d *appsv1.Deployment, hash string) *appsv1.ReplicaSet {
	labels := maps.Clone(d.Spec.Template.Labels)
	labels[appsv1.DefaultDeploymentUniqueLabelKey] = hash
	template := *d.Spec.Template.DeepCopy()
	template.Labels = labels
	return &appsv1.ReplicaSet{
		ObjectMeta: metav1.ObjectMeta{
			Name: d.Name + "-" + hash, Namespace: d.Namespace, Labels: maps.Clone(labels),
			OwnerReferences: []metav1.OwnerReference{controllerRef("apps/v1", "Deployment", d.Name, d.UID)},
		},
		Spec: appsv1.ReplicaSetSpec{
			Replicas: d.Spec.Replicas,
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: template,
		},
	}
}

// DatasanceReplicaSetPod is pod i of rs (which must have a UID), controlled by rs.
func DatasanceReplicaSetPod(rs *appsv1.ReplicaSet, i int) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name: rs.Name + "-" + strconv.Itoa(i), Namespace: rs.Namespace, Labels: maps.Clone(rs.Spec.Template.Labels),
			OwnerReferences: []metav1.OwnerReference{controllerRef("apps/v1", "ReplicaSet", rs.Name, rs.UID)},
		},
		Spec: *rs.Spec.Template.Spec.DeepCopy(),
	}
}

// DatasanceStatefulSet is the Datasance operator's StatefulSet nats: replicas servers behind
// nats-headless, selected by every label, with the js-data claim template (ReadWriteOnce, size,
// no labels).
func DatasanceStatefulSet(cp *datasancev3.ControlPlane, replicas int32, size string) *appsv1.StatefulSet {
	labels := DatasanceLabels(cp, "nats")
	return &appsv1.StatefulSet{
		ObjectMeta: DatasanceMeta(cp, "nats", "nats"),
		Spec: appsv1.StatefulSetSpec{
			ServiceName: "nats-headless",
			Replicas:    ptr.To(replicas),
			Selector:    &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: maps.Clone(labels)},
				Spec: corev1.PodSpec{
					ServiceAccountName: "nats",
					Containers: []corev1.Container{{Name: "nats", Image: "ghcr.io/datasance/nats:2.12.4",
						VolumeMounts: []corev1.VolumeMount{{Name: "js-data", MountPath: "/home/runner/data"}}}},
				},
			},
			VolumeClaimTemplates: []corev1.PersistentVolumeClaim{{
				ObjectMeta: metav1.ObjectMeta{Name: "js-data"},
				Spec: corev1.PersistentVolumeClaimSpec{
					AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
					Resources:   corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse(size)}},
				},
			}},
		},
	}
}

// DatasanceStatefulSetPod is pod nats-<i> of sts (which must have a UID), controlled by sts, on
// its claim js-data-nats-<i>.
func DatasanceStatefulSetPod(sts *appsv1.StatefulSet, i int) *corev1.Pod {
	name := sts.Name + "-" + strconv.Itoa(i)
	spec := *sts.Spec.Template.Spec.DeepCopy()
	spec.Hostname, spec.Subdomain = name, sts.Spec.ServiceName
	spec.Volumes = append(spec.Volumes, corev1.Volume{Name: "js-data", VolumeSource: corev1.VolumeSource{
		PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "js-data-" + name},
	}})
	labels := maps.Clone(sts.Spec.Template.Labels)
	labels[appsv1.StatefulSetPodNameLabel] = name
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name: name, Namespace: sts.Namespace, Labels: labels,
			OwnerReferences: []metav1.OwnerReference{controllerRef("apps/v1", "StatefulSet", sts.Name, sts.UID)},
		},
		Spec: spec,
	}
}

func controllerRef(apiVersion, kind, name string, uid types.UID) metav1.OwnerReference {
	return metav1.OwnerReference{APIVersion: apiVersion, Kind: kind, Name: name, UID: uid, Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true)}
}
