// Package podsecurity checks that what the operator runs and renders passes the Kubernetes
// "restricted" Pod Security Standard, as enforced by the real API server's PodSecurity admission
// in a namespace labelled pod-security.kubernetes.io/enforce=restricted.
//
// PodSecurity enforces on Pods, not on Deployments, so each pod template is submitted as a Pod
// (server-side dry run: nothing is stored, nothing needs a kubelet).
//
// The ControlPlane operands (Controller, Router, NATS) are checked the same way by
// controllers/controlplane TestOperandPodsAreRestricted, beside their builders, which are
// internal to that package.
package podsecurity

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	kubeoperav1alpha1 "github.com/kubeopera/kubeopera-operator/api/kubeopera/v1alpha1"
	"github.com/kubeopera/kubeopera-operator/internal/render"
	"github.com/kubeopera/kubeopera-operator/internal/testfixture"
	"github.com/kubeopera/kubeopera-operator/test/testenv"
)

var env *testenv.Env

func TestMain(m *testing.M) {
	e, code := testenv.MainStart(testenv.Options{})
	if e == nil && code >= 0 {
		os.Exit(code)
	}
	env = e
	code = m.Run()
	_ = env.Stop()
	os.Exit(code)
}

// restrictedNamespace creates a namespace that enforces the restricted standard.
func restrictedNamespace(t *testing.T) string {
	t.Helper()
	ns, err := env.RestrictedNamespace(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return ns
}

// admitPod submits the template as a Pod in namespace ns (dry run): nil when PodSecurity admits it.
func admitPod(ns string, tpl corev1.PodTemplateSpec) error {
	return env.AdmitPod(context.Background(), ns, tpl)
}

// app builds the tenant app whose Deployment the tests submit: web in namespace team-a, image
// nginx:1.27 with one container port, changed by mods.
func app(mods ...testfixture.AppMod) *kubeoperav1alpha1.KubeOperaApp {
	return testfixture.KubeOperaApp(append([]testfixture.AppMod{
		testfixture.AppInNamespace("team-a"), testfixture.AppImage("nginx:1.27"),
		testfixture.AppPorts(kubeoperav1alpha1.AppPort{Name: "http", ContainerPort: 8080}),
		testfixture.AppGitURL("https://git.example.com/t/apps.git"),
	}, mods...)...)
}

// The negative control: the namespace really enforces, so the other cases can fail.
func TestRestrictedNamespaceRefusesAPrivilegedPod(t *testing.T) {
	g := NewWithT(t)
	ns := restrictedNamespace(t)
	tpl := corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: []corev1.Container{{
		Name: "c", Image: "busybox", SecurityContext: &corev1.SecurityContext{Privileged: ptr.To(true)},
	}}}}
	err := admitPod(ns, tpl)
	g.Expect(apierrors.IsForbidden(err)).To(BeTrue(), "PodSecurity admission is not enforcing: %v", err)
	g.Expect(err.Error()).To(ContainSubstring(`violates PodSecurity "restricted`))

	// The tenant app's template with its security settings removed is refused too.
	d := render.Deployment(app())
	d.Spec.Template.Spec.SecurityContext = nil
	d.Spec.Template.Spec.Containers[0].SecurityContext = nil
	g.Expect(apierrors.IsForbidden(admitPod(ns, d.Spec.Template))).To(BeTrue())
}

func TestTenantAppDeploymentIsRestricted(t *testing.T) {
	ns := restrictedNamespace(t)
	cases := map[string]*kubeoperav1alpha1.KubeOperaApp{
		"defaults": app(),
		"user, group and fsGroup chosen": app(func(a *kubeoperav1alpha1.KubeOperaApp) {
			a.Spec.App.Security = &kubeoperav1alpha1.AppSecurity{RunAsUser: ptr.To[int64](101), RunAsGroup: ptr.To[int64](101), FSGroup: ptr.To[int64](2000)}
		}),
		"NET_BIND_SERVICE and a read-only root": app(func(a *kubeoperav1alpha1.KubeOperaApp) {
			a.Spec.App.Security = &kubeoperav1alpha1.AppSecurity{
				AddCapabilities:        []kubeoperav1alpha1.Capability{kubeoperav1alpha1.CapabilityNetBindService},
				ReadOnlyRootFilesystem: ptr.To(true),
			}
		}),
	}
	for name, a := range cases {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			d := render.Deployment(a)
			g.Expect(admitPod(ns, d.Spec.Template)).To(Succeed())
			c := d.Spec.Template.Spec.Containers[0]
			if a.Spec.App.Security != nil && len(a.Spec.App.Security.AddCapabilities) > 0 {
				g.Expect(c.SecurityContext.Capabilities.Add).To(ConsistOf(corev1.Capability("NET_BIND_SERVICE")))
			}
		})
	}
}

// The relaxations stay inside restricted: admission refuses root and any other capability.
func TestAppSecurityAdmission(t *testing.T) {
	ns := restrictedNamespace(t)
	cases := map[string]struct {
		mod     func(*kubeoperav1alpha1.AppSecurity)
		message string
	}{
		"root user":        {func(s *kubeoperav1alpha1.AppSecurity) { s.RunAsUser = ptr.To[int64](0) }, "spec.app.security.runAsUser"},
		"root group":       {func(s *kubeoperav1alpha1.AppSecurity) { s.RunAsGroup = ptr.To[int64](0) }, "spec.app.security.runAsGroup"},
		"negative fsGroup": {func(s *kubeoperav1alpha1.AppSecurity) { s.FSGroup = ptr.To[int64](-1) }, "spec.app.security.fsGroup"},
		"another capability": {func(s *kubeoperav1alpha1.AppSecurity) {
			s.AddCapabilities = []kubeoperav1alpha1.Capability{"SYS_ADMIN"}
		}, "spec.app.security.addCapabilities"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			valid := app(func(a *kubeoperav1alpha1.KubeOperaApp) {
				a.Namespace = ns
				a.Spec.App.Security = &kubeoperav1alpha1.AppSecurity{RunAsUser: ptr.To[int64](1000)}
			})
			// The unmodified object is accepted, so the refusal below is the rule's doing.
			g.Expect(env.Client.Create(context.Background(), valid.DeepCopy(), client.DryRunAll)).To(Succeed())
			bad := valid.DeepCopy()
			tc.mod(bad.Spec.App.Security)
			err := env.Client.Create(context.Background(), bad, client.DryRunAll)
			g.Expect(apierrors.IsInvalid(err)).To(BeTrue(), "%v", err)
			g.Expect(err.Error()).To(ContainSubstring(tc.message))
		})
	}
}

// The operator's own Deployment (config/manager, which the bundle's CSV embeds) is restricted.
func TestOperatorDeploymentIsRestricted(t *testing.T) {
	g := NewWithT(t)
	data, err := os.ReadFile(filepath.Join(testenv.Root(), "config", "manager", "manager.yaml"))
	g.Expect(err).NotTo(HaveOccurred())
	var d *appsv1.Deployment
	for _, doc := range strings.Split(string(data), "\n---") {
		var probe appsv1.Deployment
		if err := yaml.Unmarshal([]byte(doc), &probe); err == nil && probe.Kind == "Deployment" {
			d = &probe
		}
	}
	g.Expect(d).NotTo(BeNil(), "no Deployment in config/manager/manager.yaml")
	g.Expect(admitPod(restrictedNamespace(t), d.Spec.Template)).To(Succeed(), fmt.Sprintf("template: %+v", d.Spec.Template.Spec.SecurityContext))
}
