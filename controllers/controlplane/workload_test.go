package controlplane_test

import (
	"fmt"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	datasancev3 "github.com/kubeopera/kubeopera-operator/api/datasance/v3"
	"github.com/kubeopera/kubeopera-operator/controllers/controlplane"
	"github.com/kubeopera/kubeopera-operator/internal/testfixture"
)

// sqliteDir is where the claim is mounted and where SQLITE_STORAGE_DIR points the Controller.
const sqliteDir = "/var/lib/controller/sqlite"

// SQLite (empty database host): PVC controller-sqlite, Recreate, one replica, the volume mounted.
// External database: no PVC, RollingUpdate, the requested replicas, DB env from the Secret.
func TestDatabaseModes(t *testing.T) {
	t.Parallel()
	t.Run("sqlite", func(t *testing.T) {
		h := newHarness(t)
		g := h.g
		h.bringUp(h.controlPlane(testfixture.WithSQLite()))
		pvc := &corev1.PersistentVolumeClaim{}
		g.Expect(h.exists(pvc, "controller-sqlite")).To(BeTrue())
		g.Expect(pvc.Spec.AccessModes).To(Equal([]corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce}))
		g.Expect(pvc.Spec.Resources.Requests.Storage().Equal(resource.MustParse("1Gi"))).To(BeTrue())
		g.Expect(pvc.OwnerReferences).To(BeEmpty(), "the database outlives the ControlPlane (data policy)")

		d := h.deployment("controller")
		g.Expect(d.Spec.Strategy.Type).To(Equal(appsv1.RecreateDeploymentStrategyType))
		g.Expect(d.Spec.Replicas).To(HaveValue(Equal(int32(1))))
		g.Expect(d.Spec.Template.Spec.Volumes).To(ContainElement(corev1.Volume{Name: "sqlite", VolumeSource: corev1.VolumeSource{
			PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "controller-sqlite"},
		}}))
		g.Expect(d.Spec.Template.Spec.Containers[0].VolumeMounts).To(ContainElement(corev1.VolumeMount{Name: "sqlite", MountPath: sqliteDir}))
		g.Expect(envOf(d.Spec.Template.Spec.Containers[0])).To(HaveKeyWithValue("SQLITE_STORAGE_DIR", sqliteDir))
		db := h.secret("controller-db-credentials").Data
		g.Expect(db).To(HaveKeyWithValue("host", BeEmpty()))
		g.Expect(db).To(HaveKeyWithValue("ssl", []byte("false")))
		g.Expect(db).To(HaveKeyWithValue("ca", BeEmpty()))
	})
	t.Run("external", func(t *testing.T) {
		h := newHarness(t)
		g := h.g
		ca := "LS0tLS1CRUdJTiBDRVJUSUZJQ0FURS0tLS0t"
		h.bringUp(h.controlPlane(func(cp *datasancev3.ControlPlane) {
			cp.Spec.Replicas.Controller = 2
			cp.Spec.Database.SSL = ptr.To(true)
			cp.Spec.Database.CA = &ca
		}))
		g.Expect(h.exists(&corev1.PersistentVolumeClaim{}, "controller-sqlite")).To(BeFalse())
		d := h.deployment("controller")
		g.Expect(d.Spec.Replicas).To(HaveValue(Equal(int32(2))))
		g.Expect(d.Spec.Strategy.Type).To(Equal(appsv1.RollingUpdateDeploymentStrategyType))
		g.Expect(d.Spec.Strategy.RollingUpdate.MaxUnavailable).To(HaveValue(Equal(intstr.FromInt32(0))))
		g.Expect(d.Spec.Strategy.RollingUpdate.MaxSurge).To(HaveValue(Equal(intstr.FromInt32(1))))
		g.Expect(d.Spec.Template.Spec.Volumes).To(BeEmpty())
		g.Expect(h.secret("controller-db-credentials").Data).To(Equal(map[string][]byte{
			"dbname": []byte("controller"), "host": []byte("postgres.db.svc"), "port": []byte("5432"),
			"username": []byte("controller"), "password": []byte("db-secret-value"), "ssl": []byte("true"), "ca": []byte(ca),
		}))
		env := envOf(d.Spec.Template.Spec.Containers[0])
		g.Expect(env).To(HaveKeyWithValue("DB_PASSWORD", "secret:controller-db-credentials/password"))
		g.Expect(env).To(HaveKeyWithValue("DB_SSL_CA_B64", "secret:controller-db-credentials/ca"), "the variable the providers read")
		g.Expect(env).NotTo(HaveKey("DB_SSL_CA"))
		g.Expect(env).NotTo(HaveKey("SQLITE_STORAGE_DIR"))
		g.Expect(env).To(HaveKeyWithValue("DB_PROVIDER", "postgres"))
		for _, v := range env {
			g.Expect(v).NotTo(ContainSubstring("db-secret-value"), "no password in plain env")
		}
	})
}

// HTTPS Controller: the in-cluster calls use https and verify the certificate; the pod mounts the
// TLS Secret, has the TLS env and the curl readiness probe.
func TestHTTPSController(t *testing.T) {
	t.Parallel()
	h := newHarness(t, withTLSController())
	g := h.g
	h.createControllerTLSSecret("controller-tls", false)
	h.bringUp(h.controlPlane(testfixture.WithHTTPS("controller-tls")))
	g.Expect(h.requestedBaseURLs()).To(ContainElements(
		HavePrefix("https://127.0.0.1:"),
		Equal("https://"+h.controllerLB+":51121"),
	))
	g.Expect(h.api.Calls()).To(ContainElement("PUT /api/v3/router"))

	d := h.deployment("controller")
	c := d.Spec.Template.Spec.Containers[0]
	g.Expect(c.ReadinessProbe.Exec.Command).To(Equal([]string{"curl", "-sfk", "https://127.0.0.1:51121/api/v3/status"}))
	g.Expect(c.ReadinessProbe.HTTPGet).To(BeNil())
	g.Expect(c.VolumeMounts).To(ContainElement(corev1.VolumeMount{Name: "controller-cert", MountPath: "/etc/iofog/controller-cert/", ReadOnly: true}))
	g.Expect(d.Spec.Template.Spec.Volumes).To(ContainElement(HaveField("VolumeSource.Secret.SecretName", "controller-tls")))
	vars := envOf(c)
	g.Expect(vars).To(HaveKeyWithValue("SERVER_DEV_MODE", "false"))
	g.Expect(vars).To(HaveKeyWithValue("TLS_PATH_CERT", "/etc/iofog/controller-cert/tls.crt"))
	g.Expect(vars).To(HaveKeyWithValue("TLS_PATH_KEY", "/etc/iofog/controller-cert/tls.key"))
	g.Expect(vars).To(HaveKeyWithValue("TLS_PATH_INTERMEDIATE_CERT", "/etc/iofog/controller-cert/ca.crt"))
	g.Expect(vars).To(HaveKeyWithValue("CONTROLLER_PUBLIC_URL", "https://"+h.controllerLB+":51121"))
	g.Expect(d.Spec.Template.Annotations).To(HaveKey(controlplane.AnnotationTLSHash))

	// A renewed certificate in the user's Secret rolls the pods.
	renewed := h.createTLSSecretData("controller-tls-renewed")
	tls := h.secret("controller-tls")
	tls.Data = renewed
	g.Expect(env.Client.Update(h.ctx, tls)).To(Succeed())
	h.rollOut()
	h.mustBeReady()
	g.Expect(h.deployment("controller").Spec.Template.Annotations[controlplane.AnnotationTLSHash]).
		NotTo(Equal(d.Spec.Template.Annotations[controlplane.AnnotationTLSHash]))
}

// Operand pods run restricted: non-root, RuntimeDefault seccomp, no escalation, no capabilities;
// the Controller as the image's user 10000 (its files are that user's only), the router with no
// fixed ID (OpenShift's restricted-v2 assigns one from the namespace's range); both Deployments and the Services carry labels and the owner reference, the
// Secrets too except the CAs, which carry the labels only.
func TestOperandSecurityAndOwnership(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	g := h.g
	h.bringUp(h.controlPlane())
	cp := h.get()
	for _, name := range []string{"controller", "router"} {
		d := h.deployment(name)
		psc := d.Spec.Template.Spec.SecurityContext
		g.Expect(psc.RunAsNonRoot).To(HaveValue(BeTrue()))
		if name == "controller" {
			g.Expect(psc.RunAsUser).To(HaveValue(Equal(int64(10000))))
			g.Expect(psc.RunAsGroup).To(HaveValue(Equal(int64(10000))))
			g.Expect(psc.FSGroup).To(HaveValue(Equal(int64(10000))))
		} else {
			g.Expect(psc.RunAsUser).To(BeNil(), "the router runs as whoever the platform assigns")
			g.Expect(psc.RunAsGroup).To(BeNil())
			g.Expect(psc.FSGroup).To(BeNil())
		}
		g.Expect(psc.SeccompProfile.Type).To(Equal(corev1.SeccompProfileTypeRuntimeDefault))
		csc := d.Spec.Template.Spec.Containers[0].SecurityContext
		g.Expect(csc.AllowPrivilegeEscalation).To(HaveValue(BeFalse()))
		g.Expect(csc.Capabilities.Drop).To(Equal([]corev1.Capability{"ALL"}))
		g.Expect(d.Spec.Template.Spec.Containers[0].ImagePullPolicy).To(Equal(corev1.PullAlways))
		g.Expect(d.Labels).To(Equal(map[string]string{
			"app.kubernetes.io/name": "iofog", "app.kubernetes.io/instance": cpName,
			"app.kubernetes.io/component": name, "app.kubernetes.io/managed-by": "iofog-operator",
		}))
		g.Expect(d.OwnerReferences).To(ConsistOf(HaveField("UID", cp.UID)))
		g.Expect(d.OwnerReferences[0].Controller).To(HaveValue(BeTrue()))
	}
	for _, name := range []string{"router-site-server", "router-local-server", "controller-db-credentials", "controller-auth-credentials"} {
		g.Expect(h.secret(name).OwnerReferences).To(ConsistOf(HaveField("UID", cp.UID)), name)
	}
	for _, name := range []string{"router-site-ca", "default-router-local-ca"} {
		// Kept with the Controller's database, which holds the same CAs (Data on deletion).
		g.Expect(h.secret(name).OwnerReferences).To(BeEmpty(), name)
		g.Expect(h.secret(name).Labels).To(HaveKeyWithValue("app.kubernetes.io/instance", cpName), name)
	}

	svc := &corev1.Service{}
	g.Expect(h.exists(svc, "controller")).To(BeTrue())
	g.Expect(svc.Spec.Type).To(Equal(corev1.ServiceTypeLoadBalancer))
	g.Expect(svc.Spec.ExternalTrafficPolicy).To(Equal(corev1.ServiceExternalTrafficPolicyLocal))
	g.Expect(svc.Spec.Ports).To(HaveLen(2))
	g.Expect(svc.Spec.Ports[0]).To(And(HaveField("Name", "controller-api"), HaveField("Port", int32(51121)), HaveField("TargetPort", intstr.FromInt32(51121))))
	g.Expect(svc.Spec.Ports[1]).To(And(HaveField("Name", "console"), HaveField("Port", int32(80)), HaveField("TargetPort", intstr.FromInt32(8008))))

	g.Expect(h.exists(svc, "router")).To(BeTrue())
	g.Expect(svc.Spec.Ports).To(HaveLen(3))
	g.Expect(svc.Spec.Ports).To(HaveEach(HaveField("Protocol", corev1.ProtocolTCP)))
	g.Expect([]int32{svc.Spec.Ports[0].Port, svc.Spec.Ports[1].Port, svc.Spec.Ports[2].Port}).To(Equal([]int32{5671, 55671, 45671}))
}

// A workload whose controller has seen its current generation but does not run every replica
// keeps its component waiting (WorkloadUnavailable, 5 s), and the message says what the API server
// reports about its pods: for the router Deployment a pod whose container cannot pull its image,
// for the NATS StatefulSet the newest FailedCreate Event of its controller (a StatefulSet has no
// condition for it). Once the rollouts finish, the ControlPlane is ready again.
func TestWorkloadUnavailableSaysWhy(t *testing.T) {
	t.Parallel()
	h, _ := newNatsHarness(t)
	g := h.g
	h.bringUpNats(h.controlPlane(testfixture.WithNATS(), testfixture.WithNATSReplicas(2)))

	// The router's one pod cannot pull its image.
	router := h.deployment("router")
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: h.ns, Name: "router-a", Labels: router.Spec.Template.Labels},
		Spec:       *router.Spec.Template.Spec.DeepCopy(),
	}
	g.Expect(env.Client.Create(h.ctx, pod)).To(Succeed())
	container := router.Spec.Template.Spec.Containers[0].Name
	pod.Status = corev1.PodStatus{Phase: corev1.PodPending, ContainerStatuses: []corev1.ContainerStatus{{
		Name: container, Image: router.Spec.Template.Spec.Containers[0].Image,
		State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "ImagePullBackOff", Message: `Back-off pulling image "x"`}},
	}}}
	g.Expect(env.Client.Status().Update(h.ctx, pod)).To(Succeed())
	router.Status = appsv1.DeploymentStatus{ObservedGeneration: router.Generation, Replicas: 1, UpdatedReplicas: 1}
	g.Expect(env.Client.Status().Update(h.ctx, router)).To(Succeed())

	// NATS runs one of its two pods: its controller cannot create nats-1, first for one reason,
	// then for another.
	sts := h.statefulSet()
	sts.Status = appsv1.StatefulSetStatus{ObservedGeneration: sts.Generation, Replicas: 1, ReadyReplicas: 1, CurrentReplicas: 1,
		UpdatedReplicas: 1, AvailableReplicas: 1}
	g.Expect(env.Client.Status().Update(h.ctx, sts)).To(Succeed())
	now := time.Now()
	for i, msg := range []string{
		`create Pod nats-1 in StatefulSet nats failed error: pods "nats-1" is forbidden: violates PodSecurity`,
		`create Pod nats-1 in StatefulSet nats failed error: pods "nats-1" is forbidden: exceeded quota: compute`,
	} {
		at := metav1.NewTime(now.Add(time.Duration(i-2) * time.Minute))
		g.Expect(env.Client.Create(h.ctx, &corev1.Event{
			ObjectMeta: metav1.ObjectMeta{Namespace: h.ns, Name: fmt.Sprintf("nats.failed-create-%d", i)},
			InvolvedObject: corev1.ObjectReference{APIVersion: "apps/v1", Kind: "StatefulSet", Namespace: h.ns, Name: sts.Name,
				UID: sts.UID},
			Reason: "FailedCreate", Message: msg, Type: corev1.EventTypeWarning, Count: 1,
			FirstTimestamp: at, LastTimestamp: at, Source: corev1.EventSource{Component: "statefulset-controller"},
		})).To(Succeed())
	}

	h.mustRequeue(controlplane.RequeueWorkload)
	st := h.get().Status
	g.Expect(st.Router.ComponentStatus).To(Equal(datasancev3.ComponentStatus{Reason: datasancev3.ReasonWorkloadUnavailable,
		Message: `Router is not available: Deployment router has 0 of 1 replicas available; pod router-a: container ` + container +
			` is waiting: ImagePullBackOff: Back-off pulling image "x".`}))
	g.Expect(st.Nats.ComponentStatus).To(Equal(datasancev3.ComponentStatus{Reason: datasancev3.ReasonWorkloadUnavailable,
		Message: `NATS is not available: StatefulSet nats has 1 of 2 replicas ready; pods cannot be created: ` +
			`create Pod nats-1 in StatefulSet nats failed error: pods "nats-1" is forbidden: exceeded quota: compute.`}))
	g.Expect(st.Controller.Ready).To(BeTrue())
	// Both wait 5 s: the router, first, decides the condition.
	g.Expect(h.trueCondition()).To(And(HaveField("Reason", datasancev3.ReasonWorkloadUnavailable), HaveField("Message", st.Router.Message)))

	h.finishRollouts()
	h.mustBeReady()
}

// On OpenShift (the API serves SecurityContextConstraints) the ServiceAccounts of the Controller
// and NATS, whose pods run as their images' user 10000, are bound to OpenShift's ClusterRole of
// SCC nonroot-v2 in the ControlPlane's namespace; the router's, whose pods run as whoever
// restricted-v2 assigns, is not. Elsewhere no such binding is written.
func TestOpenShiftLetsTheImageUsersRun(t *testing.T) {
	t.Parallel()
	for _, openShift := range []bool{true, false} {
		h, _ := newNatsHarness(t)
		h.r.Options.OpenShiftSCC = openShift
		h.bringUpNats(h.controlPlane(testfixture.WithNATS()))
		var bindings rbacv1.RoleBindingList
		h.g.Expect(env.Client.List(h.ctx, &bindings, client.InNamespace(h.ns))).To(Succeed())
		scc := map[string][]rbacv1.Subject{}
		for _, b := range bindings.Items {
			if b.RoleRef.Kind == "ClusterRole" && b.RoleRef.Name == "system:openshift:scc:nonroot-v2" {
				scc[b.Name] = b.Subjects
			}
		}
		if !openShift {
			h.g.Expect(scc).To(BeEmpty(), "no SCC binding where there are no SCCs")
			continue
		}
		h.g.Expect(scc).To(Equal(map[string][]rbacv1.Subject{
			"controller-nonroot-v2": {{Kind: "ServiceAccount", Name: "controller", Namespace: h.ns}},
			"nats-nonroot-v2":       {{Kind: "ServiceAccount", Name: "nats", Namespace: h.ns}},
		}))
	}
}
