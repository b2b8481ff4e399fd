package app_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	kustomizev1 "github.com/fluxcd/kustomize-controller/api/v1"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	tenantv1alpha1 "github.com/kubeopera/kubeopera-operator/api/external/tenant/v1alpha1"
	kubeoperav1alpha1 "github.com/kubeopera/kubeopera-operator/api/kubeopera/v1alpha1"
	"github.com/kubeopera/kubeopera-operator/internal/apptest"
	"github.com/kubeopera/kubeopera-operator/internal/render"
	"github.com/kubeopera/kubeopera-operator/internal/testfixture"
)

// badInput is one row of the bad-input matrix: a field a user writes (spec.* of the
// KubeOperaApp, a field of the Tenant the app resolves, an object the app references) and a
// wrong value of it.
type badInput struct {
	name string
	// setup creates what the row needs besides the app (Tenants, Secrets); it may return the
	// app's Tenant name (default: the fixture's Ready Tenant).
	setup func(f *fixture, app string) string
	// mutate writes the wrong value into the app.
	mutate func(f *fixture, a *kubeoperav1alpha1.KubeOperaApp)
	// admission: the API server refuses the app (CRD schema or CEL), with this text (the field)
	// in the error. Otherwise the app is admitted and the reconciler reports it:
	admission string
	// condition is the step condition that fails (Ready fails with the same reason), reason its
	// reason, and message a text the message must hold.
	condition, reason, message string
	// terminal: a retry cannot fix it, the app is not reconciled again until something changes.
	// Otherwise it is retried with the backoff.
	terminal bool
	// skipGitCleanup: the Git server keeps refusing the credentials, so deletion cannot verify
	// the folder is gone and retries; the test deletes the app the way an administrator would,
	// with the kubeopera.io/skip-git-cleanup annotation.
	skipGitCleanup bool
	// alone: the row changes what the other rows see (it pushes to the repository or creates
	// apps), or its refusal comes from other apps' Secrets (every new app of the namespace that
	// pushes with the shared Secret brings it back to a pass), so it never runs beside them.
	alone bool
}

// TestBadInputMatrix tries every field a user writes with each kind of wrong value. Each one is
// refused at admission by the real API server, or reported by the reconciler with a specific
// reason on a condition and a Warning Event, and then:
//   - never a partial write: nothing is pushed to Git and nothing is written to the vCluster
//     (every request the reconciler sends to the vCluster is counted);
//   - never a hot loop: a terminal refusal is reconciled exactly once per change of the app
//     (two pokes, two passes), a retried one keeps retrying with the backoff but writes nothing
//     — no status patch, no Event, no push — over the next passes;
//   - never a panic (the manager would die and the suite with it).
//
// The window of the hot-loop check is driven by the reconciler's own passes (counted through
// Options.OnPass), never by a sleep.
func TestBadInputMatrix(t *testing.T) {
	f := newFixture(t)
	f.addTenant("t1", time.Now().Add(-time.Minute))
	tenantWithKubeconfig := func(kubeconfig string) func(*fixture, string) string {
		return func(f *fixture, app string) string {
			name := "tn-" + app
			err := apptest.CreateTenant(f.ctx, host.Client, f.tenant(name, testfixture.TenantReady(time.Now().Add(-time.Minute))))
			f.g.Expect(err).NotTo(HaveOccurred())
			f.create(apptest.KubeconfigSecret(f.ns, "vc-"+name, []byte(kubeconfig)))
			return name
		}
	}
	secret := func(name string, typ corev1.SecretType, data map[string][]byte) func(*fixture, string) string {
		return func(f *fixture, _ string) string {
			f.create(&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: f.ns, Name: name}, Type: typ, Data: data})
			return ""
		}
	}
	// fluxCredentials creates a Secret declared copyable into vClusters.
	fluxCredentials := func(name string, typ corev1.SecretType, data map[string][]byte) func(*fixture, string) string {
		return func(f *fixture, _ string) string {
			f.create(&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: f.ns, Name: name, Labels: fluxCredentialsLabel}, Type: typ, Data: data})
			return ""
		}
	}
	// otherNamespaceApp creates, in a namespace of its own, an app of the fixture's repository
	// with push and Flux Secrets of the given data; it waits for a Tenant that never comes, so it
	// never writes.
	otherNamespaceApp := func(f *fixture, app string, push, flux map[string][]byte) {
		ns, err := apptest.Namespace(f.ctx, host.Client, "other")
		f.g.Expect(err).NotTo(HaveOccurred())
		f.create(&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "push"}, Data: push},
			&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "flux", Labels: fluxCredentialsLabel}, Data: flux})
		f.create(f.newApp("neighbour-"+app, "no-such-tenant", func(a *kubeoperav1alpha1.KubeOperaApp) {
			a.Namespace = ns
			a.Spec.Git.SecretRef.Name, a.Spec.Git.FluxSecretRef.Name = "push", "flux"
		}))
	}
	withRegistry := func(name string) func(*fixture, *kubeoperav1alpha1.KubeOperaApp) {
		return func(_ *fixture, a *kubeoperav1alpha1.KubeOperaApp) {
			a.Spec.Registry = &kubeoperav1alpha1.RegistrySpec{SecretRef: kubeoperav1alpha1.LocalSecretReference{Name: name}}
		}
	}
	withGitSecret := func(name string) func(*fixture, *kubeoperav1alpha1.KubeOperaApp) {
		return func(_ *fixture, a *kubeoperav1alpha1.KubeOperaApp) {
			a.Spec.Git.SecretRef = &kubeoperav1alpha1.LocalSecretReference{Name: name}
		}
	}
	spec := func(m func(a *kubeoperav1alpha1.KubeOperaApp)) func(*fixture, *kubeoperav1alpha1.KubeOperaApp) {
		return func(_ *fixture, a *kubeoperav1alpha1.KubeOperaApp) { m(a) }
	}
	port := func(name string, containerPort, servicePort int32, protocol corev1.Protocol) kubeoperav1alpha1.AppPort {
		return kubeoperav1alpha1.AppPort{Name: name, ContainerPort: containerPort, ServicePort: servicePort, Protocol: protocol}
	}
	const (
		tenantCond = kubeoperav1alpha1.ConditionTenantResolved
		gitCond    = kubeoperav1alpha1.ConditionManifestsCommitted
		readyCond  = kubeoperav1alpha1.ConditionReady
		fluxCond   = kubeoperav1alpha1.ConditionFluxConfigured
	)

	cases := []badInput{
		// metadata.name becomes the namespace, Deployment and Service names.
		{name: "name with a dot", mutate: func(_ *fixture, a *kubeoperav1alpha1.KubeOperaApp) { a.Name = "shop.web" }, admission: "metadata.name must start with a lowercase letter"},
		{name: "name starting with a digit", mutate: func(_ *fixture, a *kubeoperav1alpha1.KubeOperaApp) { a.Name = "1web" }, admission: "metadata.name must start with a lowercase letter"},
		{name: "name too long", mutate: func(_ *fixture, a *kubeoperav1alpha1.KubeOperaApp) { a.Name = strings.Repeat("a", 64) }, admission: "metadata.name must be at most 63"},
		// spec.cloudSpaceId, spec.tenantCRName, spec.targetNamespace.
		{name: "cloudSpaceId empty", mutate: spec(func(a *kubeoperav1alpha1.KubeOperaApp) { a.Spec.CloudSpaceID = "" }), admission: "spec.cloudSpaceId"},
		{name: "cloudSpaceId too long", mutate: spec(func(a *kubeoperav1alpha1.KubeOperaApp) { a.Spec.CloudSpaceID = strings.Repeat("c", 254) }), admission: "spec.cloudSpaceId"},
		{name: "tenantCRName not a DNS name", mutate: spec(func(a *kubeoperav1alpha1.KubeOperaApp) { a.Spec.TenantCRName = "Tenant_A" }), admission: "spec.tenantCRName"},
		{name: "targetNamespace not a label", mutate: spec(func(a *kubeoperav1alpha1.KubeOperaApp) { a.Spec.TargetNamespace = "a.b" }), admission: "spec.targetNamespace"},
		{name: "targetNamespace too long", mutate: spec(func(a *kubeoperav1alpha1.KubeOperaApp) { a.Spec.TargetNamespace = strings.Repeat("n", 64) }), admission: "spec.targetNamespace"},
		// spec.app.
		{name: "image empty", mutate: spec(func(a *kubeoperav1alpha1.KubeOperaApp) { a.Spec.App.Image = "" }), admission: "spec.app.image"},
		{name: "image with spaces", mutate: spec(func(a *kubeoperav1alpha1.KubeOperaApp) { a.Spec.App.Image = "nginx latest" }), admission: "spec.app.image"},
		{name: "replicas negative", mutate: spec(func(a *kubeoperav1alpha1.KubeOperaApp) { a.Spec.App.Replicas = ptr.To[int32](-1) }), admission: "spec.app.replicas"},
		{name: "replicas too many", mutate: spec(func(a *kubeoperav1alpha1.KubeOperaApp) { a.Spec.App.Replicas = ptr.To[int32](1001) }), admission: "spec.app.replicas"},
		{name: "container port zero", mutate: spec(func(a *kubeoperav1alpha1.KubeOperaApp) {
			a.Spec.App.Ports = []kubeoperav1alpha1.AppPort{port("http", 0, 0, "")}
		}), admission: "spec.app.ports[0].containerPort"},
		{name: "container port out of range", mutate: spec(func(a *kubeoperav1alpha1.KubeOperaApp) {
			a.Spec.App.Ports = []kubeoperav1alpha1.AppPort{port("http", 70000, 0, "")}
		}), admission: "spec.app.ports[0].containerPort"},
		{name: "service port out of range", mutate: spec(func(a *kubeoperav1alpha1.KubeOperaApp) {
			a.Spec.App.Ports = []kubeoperav1alpha1.AppPort{port("http", 8080, 65536, "")}
		}), admission: "spec.app.ports[0].servicePort"},
		{name: "port protocol not in enum", mutate: spec(func(a *kubeoperav1alpha1.KubeOperaApp) {
			a.Spec.App.Ports = []kubeoperav1alpha1.AppPort{port("http", 8080, 0, "HTTP")}
		}), admission: "spec.app.ports[0].protocol"},
		{name: "port name without a letter", mutate: spec(func(a *kubeoperav1alpha1.KubeOperaApp) {
			a.Spec.App.Ports = []kubeoperav1alpha1.AppPort{port("8080", 8080, 0, "")}
		}), admission: "spec.app.ports[0].name"},
		{name: "port name with --", mutate: spec(func(a *kubeoperav1alpha1.KubeOperaApp) {
			a.Spec.App.Ports = []kubeoperav1alpha1.AppPort{port("my--http", 8080, 0, "")}
		}), admission: "spec.app.ports[0].name"},
		{name: "port names not unique", mutate: spec(func(a *kubeoperav1alpha1.KubeOperaApp) {
			a.Spec.App.Ports = []kubeoperav1alpha1.AppPort{port("http", 8080, 0, ""), port("http", 8081, 0, "")}
		}), admission: "spec.app.ports"},
		{name: "security runAsUser root", mutate: spec(func(a *kubeoperav1alpha1.KubeOperaApp) {
			a.Spec.App.Security = &kubeoperav1alpha1.AppSecurity{RunAsUser: ptr.To[int64](0)}
		}), admission: "spec.app.security.runAsUser"},
		{name: "security capability beyond restricted", mutate: spec(func(a *kubeoperav1alpha1.KubeOperaApp) {
			a.Spec.App.Security = &kubeoperav1alpha1.AppSecurity{AddCapabilities: []kubeoperav1alpha1.Capability{"SYS_ADMIN"}}
		}), admission: "spec.app.security.addCapabilities"},
		// spec.app fields admitted (CEL over the embedded corev1 types, or comparing every pair
		// of ports, exceeds the cost budget) that the pod or Service validation refuses in the
		// rendered objects: render.Validate reports them before the commit.
		{name: "ports publishing the same Service port and protocol", mutate: spec(func(a *kubeoperav1alpha1.KubeOperaApp) {
			a.Spec.App.Ports = []kubeoperav1alpha1.AppPort{port("http", 8080, 80, ""), port("web", 80, 0, corev1.ProtocolTCP)}
		}), condition: gitCond, reason: kubeoperav1alpha1.ReasonInvalidSpec, message: "spec.app.ports[1]: Duplicate value", terminal: true},
		{name: "ingress with only UDP and SCTP ports", mutate: spec(func(a *kubeoperav1alpha1.KubeOperaApp) {
			a.Spec.App.Ports = []kubeoperav1alpha1.AppPort{port("dns", 53, 0, corev1.ProtocolUDP), port("sig", 2905, 0, corev1.ProtocolSCTP)}
			a.Spec.Ingress = &kubeoperav1alpha1.IngressSpec{Host: a.Name + ".example.com"}
		}), condition: gitCond, reason: kubeoperav1alpha1.ReasonInvalidSpec, message: "all of them are UDP or SCTP", terminal: true},
		{name: "env name with =", mutate: spec(func(a *kubeoperav1alpha1.KubeOperaApp) {
			a.Spec.App.Env = []corev1.EnvVar{{Name: "A", Value: "1"}, {Name: "B=C", Value: "x"}}
		}), condition: gitCond, reason: kubeoperav1alpha1.ReasonInvalidSpec, message: "spec.app.env[1].name", terminal: true},
		{name: "env fieldRef the kubelet does not expose", mutate: spec(func(a *kubeoperav1alpha1.KubeOperaApp) {
			a.Spec.App.Env = []corev1.EnvVar{{Name: "POLICY", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "spec.restartPolicy"}}}}
		}), condition: gitCond, reason: kubeoperav1alpha1.ReasonInvalidSpec, message: "spec.app.env[0].valueFrom.fieldRef.fieldPath", terminal: true},
		{name: "resource request above its limit", mutate: spec(func(a *kubeoperav1alpha1.KubeOperaApp) {
			a.Spec.App.Resources = corev1.ResourceRequirements{
				Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2")},
				Limits:   corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("500m")},
			}
		}), condition: gitCond, reason: kubeoperav1alpha1.ReasonInvalidSpec, message: "spec.app.resources.requests[cpu]", terminal: true},
		{name: "resource quantity negative", mutate: spec(func(a *kubeoperav1alpha1.KubeOperaApp) {
			a.Spec.App.Resources = corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("-64Mi")}}
		}), condition: gitCond, reason: kubeoperav1alpha1.ReasonInvalidSpec, message: "spec.app.resources.requests[memory]", terminal: true},
		{name: "hugepages without a cpu or memory request", mutate: spec(func(a *kubeoperav1alpha1.KubeOperaApp) {
			a.Spec.App.Resources = corev1.ResourceRequirements{Limits: corev1.ResourceList{"hugepages-2Mi": resource.MustParse("4Mi")}}
		}), condition: gitCond, reason: kubeoperav1alpha1.ReasonInvalidSpec, message: "spec.app.resources: Forbidden: hugepages require", terminal: true},
		// Every app of a repository shares its size limit: one app's values are bounded at
		// admission, and its rendered folder by --app-max-folder-size.
		{name: "env value too long", mutate: spec(func(a *kubeoperav1alpha1.KubeOperaApp) {
			a.Spec.App.Env = []corev1.EnvVar{{Name: "BIG", Value: strings.Repeat("v", 32769)}}
		}), admission: "spec.app.env: a value must be at most 32768 characters"},
		{name: "env values too long together", mutate: spec(func(a *kubeoperav1alpha1.KubeOperaApp) {
			for i := range 5 {
				a.Spec.App.Env = append(a.Spec.App.Env, corev1.EnvVar{Name: fmt.Sprintf("V%d", i), Value: strings.Repeat("v", 32768)})
			}
		}), admission: "spec.app.env: the values together must be at most 131072 characters"},
		{name: "command with too many items", mutate: spec(func(a *kubeoperav1alpha1.KubeOperaApp) {
			a.Spec.App.Command = slices.Repeat([]string{"x"}, 65)
		}), admission: "spec.app.command"},
		{name: "command items too long together", mutate: spec(func(a *kubeoperav1alpha1.KubeOperaApp) {
			a.Spec.App.Command = slices.Repeat([]string{strings.Repeat("c", 4096)}, 5)
		}), admission: "spec.app.command: the items together must be at most 16384 characters"},
		{name: "arg too long", mutate: spec(func(a *kubeoperav1alpha1.KubeOperaApp) {
			a.Spec.App.Args = []string{strings.Repeat("a", 4097)}
		}), admission: "spec.app.args[0]"},
		{name: "args too long together", mutate: spec(func(a *kubeoperav1alpha1.KubeOperaApp) {
			a.Spec.App.Args = slices.Repeat([]string{strings.Repeat("a", 4096)}, 17)
		}), admission: "spec.app.args: the arguments together must be at most 65536 characters"},
		{name: "manifests larger than one app may write", mutate: spec(func(a *kubeoperav1alpha1.KubeOperaApp) {
			// Names are not bounded at admission (the pod validation sets no length); 200 names
			// of 1.5 KiB render to more than the 256 KiB default.
			for i := range 200 {
				a.Spec.App.Env = append(a.Spec.App.Env, corev1.EnvVar{Name: fmt.Sprintf("V%03d_%s", i, strings.Repeat("N", 1500)), Value: "1"})
			}
		}), condition: gitCond, reason: kubeoperav1alpha1.ReasonManifestsTooLarge, message: "--app-max-folder-size", terminal: true},
		// spec.registry.
		{name: "registry Secret not a DNS name", mutate: withRegistry("Pull_Secret"), admission: "spec.registry.secretRef.name"},
		// spec.git.
		{name: "git url with ftp scheme", mutate: spec(func(a *kubeoperav1alpha1.KubeOperaApp) { a.Spec.Git.URL = "ftp://git.example.com/apps.git" }), admission: "spec.git.url"},
		{name: "git url empty", mutate: spec(func(a *kubeoperav1alpha1.KubeOperaApp) { a.Spec.Git.URL = "" }), admission: "spec.git.url"},
		{name: "git branch starting with a dash", mutate: spec(func(a *kubeoperav1alpha1.KubeOperaApp) { a.Spec.Git.Branch = "-main" }), admission: "spec.git.branch"},
		{name: "git path escaping with ..", mutate: spec(func(a *kubeoperav1alpha1.KubeOperaApp) { a.Spec.Git.Path = "apps/../../etc" }), admission: "spec.git.path"},
		{name: "git path absolute", mutate: spec(func(a *kubeoperav1alpha1.KubeOperaApp) { a.Spec.Git.Path = "/apps/x" }), admission: "spec.git.path"},
		{name: "git path into .git", mutate: spec(func(a *kubeoperav1alpha1.KubeOperaApp) { a.Spec.Git.Path = ".git/hooks" }), admission: "spec.git.path"},
		{name: "git Secret not a DNS name", mutate: withGitSecret("Git_Creds"), admission: "spec.git.secretRef.name"},
		// spec.ingress.
		{name: "ingress tls without host", mutate: spec(func(a *kubeoperav1alpha1.KubeOperaApp) {
			a.Spec.App.Ports = []kubeoperav1alpha1.AppPort{port("http", 8080, 0, "")}
			a.Spec.Ingress = &kubeoperav1alpha1.IngressSpec{TLS: true, ClusterIssuer: "le"}
		}), admission: "spec.ingress.host"},
		{name: "ingress tls without issuer", mutate: spec(func(a *kubeoperav1alpha1.KubeOperaApp) {
			a.Spec.App.Ports = []kubeoperav1alpha1.AppPort{port("http", 8080, 0, "")}
			a.Spec.Ingress = &kubeoperav1alpha1.IngressSpec{TLS: true, Host: "a.example.com"}
		}), admission: "spec.ingress.clusterIssuer"},
		{name: "ingress host not a DNS name", mutate: spec(func(a *kubeoperav1alpha1.KubeOperaApp) {
			a.Spec.App.Ports = []kubeoperav1alpha1.AppPort{port("http", 8080, 0, "")}
			a.Spec.Ingress = &kubeoperav1alpha1.IngressSpec{Host: "Shop_Example"}
		}), admission: "spec.ingress.host"},
		{name: "ingress class not a DNS name", mutate: spec(func(a *kubeoperav1alpha1.KubeOperaApp) {
			a.Spec.App.Ports = []kubeoperav1alpha1.AppPort{port("http", 8080, 0, "")}
			a.Spec.Ingress = &kubeoperav1alpha1.IngressSpec{Host: "a.example.com", ClassName: "Nginx_Public"}
		}), admission: "spec.ingress.className"},
		{name: "ingress without ports", mutate: spec(func(a *kubeoperav1alpha1.KubeOperaApp) {
			a.Spec.App.Ports = nil
			a.Spec.Ingress = &kubeoperav1alpha1.IngressSpec{Host: "a.example.com"}
		}), admission: "spec.app.ports"},
		// spec.ingress against the operator's allow-lists (suiteOptions): what the app may claim
		// on the platform's ingress controller and with its ClusterIssuers.
		{name: "ingress host outside the allow-list", mutate: spec(func(a *kubeoperav1alpha1.KubeOperaApp) {
			a.Spec.Ingress = &kubeoperav1alpha1.IngressSpec{Host: "shop.example.org"}
		}), condition: gitCond, reason: kubeoperav1alpha1.ReasonIngressHostNotAllowed, message: `"shop.example.org" is not in --app-allowed-ingress-hosts`, terminal: true},
		{name: "ingress wildcard host broader than the allow-list", mutate: spec(func(a *kubeoperav1alpha1.KubeOperaApp) {
			a.Spec.Ingress = &kubeoperav1alpha1.IngressSpec{Host: "*.com", TLS: true, ClusterIssuer: "letsencrypt"}
		}), condition: gitCond, reason: kubeoperav1alpha1.ReasonIngressHostNotAllowed, message: `"*.com"`, terminal: true},
		{name: "ingress host of another namespace's domain", mutate: spec(func(a *kubeoperav1alpha1.KubeOperaApp) {
			a.Spec.Ingress = &kubeoperav1alpha1.IngressSpec{Host: "web.another-cloudspace.tenants.test"}
		}), condition: gitCond, reason: kubeoperav1alpha1.ReasonIngressHostNotAllowed, message: `"web.another-cloudspace.tenants.test"`, terminal: true},
		{name: "ingress clusterIssuer outside the allow-list", mutate: spec(func(a *kubeoperav1alpha1.KubeOperaApp) {
			a.Spec.Ingress = &kubeoperav1alpha1.IngressSpec{Host: "a.example.com", TLS: true, ClusterIssuer: "internal-ca"}
		}), condition: gitCond, reason: kubeoperav1alpha1.ReasonClusterIssuerNotAllowed, message: `"internal-ca" is not in --app-allowed-cluster-issuers`, terminal: true},
		// spec.flux.
		{name: "flux interval not a duration", mutate: spec(func(a *kubeoperav1alpha1.KubeOperaApp) { a.Spec.Flux.Interval = "soon" }), admission: "spec.flux.interval"},
		{name: "flux namespace not a label", mutate: spec(func(a *kubeoperav1alpha1.KubeOperaApp) { a.Spec.Flux.Namespace = "flux.system" }), admission: "spec.flux.namespace"},

		// The Tenant the app resolves (spec.tenantCRName, spec.cloudSpaceId).
		{name: "tenantCRName names no Tenant", mutate: spec(func(a *kubeoperav1alpha1.KubeOperaApp) { a.Spec.TenantCRName = "no-such-tenant" }),
			condition: tenantCond, reason: kubeoperav1alpha1.ReasonTenantNotFound, message: "no-such-tenant"},
		{name: "cloudSpaceId with no Tenant", mutate: spec(func(a *kubeoperav1alpha1.KubeOperaApp) {
			a.Spec.TenantCRName, a.Spec.CloudSpaceID = "", "cloudspace-without-tenants"
		}), condition: tenantCond, reason: kubeoperav1alpha1.ReasonTenantNotFound, message: "cloudspace-without-tenants"},
		{name: "Tenant of another CloudSpace", setup: func(f *fixture, app string) string {
			err := apptest.CreateTenant(f.ctx, host.Client,
				f.tenant("tn-"+app, testfixture.TenantCloudSpace("another-cloudspace"), testfixture.TenantReady(time.Now())))
			f.g.Expect(err).NotTo(HaveOccurred())
			return "tn-" + app
		}, condition: tenantCond, reason: kubeoperav1alpha1.ReasonTenantCloudSpaceMismatch, message: "another-cloudspace", terminal: true},
		{name: "Tenant not Ready", setup: func(f *fixture, app string) string {
			err := apptest.CreateTenant(f.ctx, host.Client, f.tenant("tn-"+app, testfixture.TenantWithoutConditions()))
			f.g.Expect(err).NotTo(HaveOccurred())
			return "tn-" + app
		}, condition: tenantCond, reason: kubeoperav1alpha1.ReasonTenantNotReady},
		// The Tenant's exported kubeconfig.
		{name: "kubeconfig Secret missing", setup: func(f *fixture, app string) string {
			err := apptest.CreateTenant(f.ctx, host.Client, f.tenant("tn-"+app, testfixture.TenantReady(time.Now().Add(-time.Minute))))
			f.g.Expect(err).NotTo(HaveOccurred())
			return "tn-" + app
		}, condition: tenantCond, reason: kubeoperav1alpha1.ReasonKubeconfigInvalid, message: "not found"},
		{name: "kubeconfig Secret key of the Tenant's status missing", setup: func(f *fixture, app string) string {
			name := tenantWithKubeconfig(string(vclusterKubeconfig))(f, app)
			tn := &tenantv1alpha1.Tenant{}
			f.g.Expect(host.Client.Get(f.ctx, client.ObjectKey{Namespace: f.ns, Name: name}, tn)).To(Succeed())
			tn.Status.KubeconfigSecretRef = &tenantv1alpha1.KubeconfigSecretReference{Name: "vc-" + name, Key: "no-such-key"}
			f.g.Expect(host.Client.Status().Update(f.ctx, tn)).To(Succeed())
			return name
		}, condition: tenantCond, reason: kubeoperav1alpha1.ReasonKubeconfigInvalid, message: "no-such-key"},
		{name: "kubeconfig not YAML", setup: tenantWithKubeconfig("{not: [yaml"),
			condition: tenantCond, reason: kubeoperav1alpha1.ReasonKubeconfigInvalid},
		{name: "kubeconfig with an exec plugin", setup: tenantWithKubeconfig(execKubeconfig),
			condition: tenantCond, reason: kubeoperav1alpha1.ReasonKubeconfigInvalid, message: "exec"},
		{name: "kubeconfig without TLS verification", setup: tenantWithKubeconfig(insecureKubeconfig),
			condition: tenantCond, reason: kubeoperav1alpha1.ReasonKubeconfigInvalid, message: "insecure"},
		{name: "kubeconfig server that does not answer", setup: func(f *fixture, app string) string {
			return tenantWithKubeconfig(string(kubeconfigWithServer(f, "https://127.0.0.1:1")))(f, app)
		}, condition: tenantCond, reason: kubeoperav1alpha1.ReasonVClusterUnreachable},
		// A kubeconfig's server outside --app-allowed-vcluster-servers (the suite's list, and the
		// default of in-cluster Services): the host's own API server at its ClusterIP is never
		// contacted with the kubeconfig's credentials.
		{name: "kubeconfig server outside the allow-list", setup: func(f *fixture, app string) string {
			return tenantWithKubeconfig(string(kubeconfigWithServer(f, "https://10.96.0.1:443")))(f, app)
		}, condition: tenantCond, reason: kubeoperav1alpha1.ReasonVClusterServerNotAllowed, message: `"10.96.0.1" is not in --app-allowed-vcluster-servers`, terminal: true},
		// spec.registry.secretRef: the object it names.
		{name: "registry Secret missing", mutate: withRegistry("no-such-pull-secret"),
			condition: readyCond, reason: kubeoperav1alpha1.ReasonRegistrySecretNotFound, message: "no-such-pull-secret"},
		{name: "registry Secret not a pull Secret", setup: secret("vc-sibling", corev1.SecretTypeOpaque, map[string][]byte{"config": []byte("sibling-s3cr3t")}),
			mutate:    withRegistry("vc-sibling"),
			condition: readyCond, reason: kubeoperav1alpha1.ReasonRegistrySecretInvalid, message: `type "Opaque"`, terminal: true},
		// spec.git.url and spec.git.secretRef: the repository and the credentials.
		{name: "git url on a cluster-internal host outside the allow-list", mutate: spec(func(a *kubeoperav1alpha1.KubeOperaApp) {
			a.Spec.Git.URL = "http://gitea.git.svc.cluster.local:3000/org/apps.git"
		}), condition: gitCond, reason: kubeoperav1alpha1.ReasonGitHostNotAllowed, message: `"gitea.git.svc.cluster.local" is not in --app-allowed-git-hosts`, terminal: true},
		{name: "git url on a cloud metadata endpoint", mutate: spec(func(a *kubeoperav1alpha1.KubeOperaApp) {
			a.Spec.Git.URL = "http://169.254.169.254/latest/meta-data.git"
		}), condition: gitCond, reason: kubeoperav1alpha1.ReasonGitHostNotAllowed, message: "a cloud metadata endpoint", terminal: true},
		{name: "git url with a password", mutate: spec(func(a *kubeoperav1alpha1.KubeOperaApp) {
			a.Spec.Git.URL = strings.Replace(a.Spec.Git.URL, "http://", "http://git:"+gitServer.Password+"@", 1)
		}), condition: gitCond, reason: kubeoperav1alpha1.ReasonGitFailed, message: "embeds a password", terminal: true},
		{name: "git Secret missing", mutate: withGitSecret("no-such-git-secret"),
			condition: gitCond, reason: kubeoperav1alpha1.ReasonGitSecretNotFound, message: "no-such-git-secret"},
		{name: "git Secret with a wrong password", setup: secret("wrong-creds", corev1.SecretTypeOpaque, map[string][]byte{"username": []byte("git"), "password": []byte("wrong-p4ssw0rd")}),
			mutate:    withGitSecret("wrong-creds"),
			condition: gitCond, reason: kubeoperav1alpha1.ReasonGitAuthFailed, skipGitCleanup: true},
		{name: "git Secret with an unusable SSH key", setup: secret("bad-ssh", corev1.SecretTypeOpaque, map[string][]byte{"identity": []byte("not a key"), "known_hosts": []byte("x")}),
			mutate: func(_ *fixture, a *kubeoperav1alpha1.KubeOperaApp) {
				a.Spec.Git.URL = "ssh://git@127.0.0.1:1/apps.git"
				a.Spec.Git.SecretRef = &kubeoperav1alpha1.LocalSecretReference{Name: "bad-ssh"}
			},
			condition: gitCond, reason: kubeoperav1alpha1.ReasonGitAuthFailed, skipGitCleanup: true},
		{name: "git repository that does not exist", setup: func(f *fixture, app string) string {
			f.g.Expect(gitServer.RemoveRepository("gone-" + f.repo)).To(Succeed())
			return ""
		}, mutate: func(f *fixture, a *kubeoperav1alpha1.KubeOperaApp) { a.Spec.Git.URL = gitServer.URL("gone-" + f.repo) },
			condition: gitCond, reason: kubeoperav1alpha1.ReasonGitFailed, message: "not found"},
		// spec.git.secretRef accepts Git credential shapes only.
		{name: "git Secret of a ServiceAccount token", setup: func(f *fixture, app string) string {
			f.create(&corev1.Secret{
				ObjectMeta: metav1.ObjectMeta{Namespace: f.ns, Name: "sa-token-" + app, Annotations: map[string]string{corev1.ServiceAccountNameKey: "default"}},
				Type:       corev1.SecretTypeServiceAccountToken,
				Data:       map[string][]byte{"token": []byte("eyJhbGciOiJSUzI1NiJ9.sa-t0ken"), "ca.crt": []byte("PEM"), "namespace": []byte(f.ns)},
			})
			return ""
		}, mutate: func(_ *fixture, a *kubeoperav1alpha1.KubeOperaApp) {
			a.Spec.Git.SecretRef = &kubeoperav1alpha1.LocalSecretReference{Name: "sa-token-" + a.Name}
		}, condition: gitCond, reason: kubeoperav1alpha1.ReasonGitSecretInvalid, message: `type "kubernetes.io/service-account-token"`, terminal: true},
		{name: "git Secret shaped like a ServiceAccount token", setup: secret("sa-shaped", corev1.SecretTypeOpaque, map[string][]byte{"token": []byte("eyJhbGciOiJSUzI1NiJ9.sa-t0ken"), "ca.crt": []byte("PEM"), "namespace": []byte("default")}),
			mutate:    withGitSecret("sa-shaped"),
			condition: gitCond, reason: kubeoperav1alpha1.ReasonGitSecretInvalid, message: `key "namespace"`, terminal: true},
		{name: "git Secret of a TLS key pair", setup: secret("tls-pair", corev1.SecretTypeTLS, map[string][]byte{"tls.crt": []byte("PEM-cert"), "tls.key": []byte("PEM-key-s3cr3t")}),
			mutate:    withGitSecret("tls-pair"),
			condition: gitCond, reason: kubeoperav1alpha1.ReasonGitSecretInvalid, message: `type "kubernetes.io/tls"`, terminal: true},
		{name: "git Secret of a pull Secret", setup: secret("pull-as-git", corev1.SecretTypeDockerConfigJson, map[string][]byte{corev1.DockerConfigJsonKey: []byte(`{"auths":{}}`)}),
			mutate:    withGitSecret("pull-as-git"),
			condition: gitCond, reason: kubeoperav1alpha1.ReasonGitSecretInvalid, message: "dockerconfigjson", terminal: true},
		{name: "git Secret with SSH keys for an HTTP URL", setup: secret("ssh-for-http", corev1.SecretTypeOpaque, map[string][]byte{"identity": []byte("-----BEGIN OPENSSH PRIVATE KEY-----"), "known_hosts": []byte("x")}),
			mutate:    withGitSecret("ssh-for-http"),
			condition: gitCond, reason: kubeoperav1alpha1.ReasonGitSecretInvalid, message: `key "identity"`, terminal: true},
		{name: "git Secret with empty values only", setup: secret("empty-values", corev1.SecretTypeOpaque, map[string][]byte{"username": {}, "password": {}}),
			mutate:    withGitSecret("empty-values"),
			condition: gitCond, reason: kubeoperav1alpha1.ReasonGitSecretInvalid, message: "no credential value", terminal: true},
		// spec.git.fluxSecretRef never names credentials the operator pushes with.
		{name: "flux Secret that is the push Secret", mutate: func(_ *fixture, a *kubeoperav1alpha1.KubeOperaApp) {
			a.Spec.Git.FluxSecretRef = &kubeoperav1alpha1.LocalSecretReference{Name: gitSecret}
		}, condition: fluxCond, reason: kubeoperav1alpha1.ReasonFluxSecretRefused, message: "also spec.git.secretRef", terminal: true, alone: true},
		{name: "flux Secret that is another app's push Secret", setup: func(f *fixture, app string) string {
			f.create(&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: f.ns, Name: "push-of-" + app}, Data: gitServer.SecretData()})
			f.create(f.newApp("pusher-"+app, "t1", func(a *kubeoperav1alpha1.KubeOperaApp) {
				a.Spec.Git.SecretRef.Name = "push-of-" + app
			}))
			f.waitReady("pusher-" + app)
			return ""
		}, mutate: func(_ *fixture, a *kubeoperav1alpha1.KubeOperaApp) {
			a.Spec.Git.FluxSecretRef = &kubeoperav1alpha1.LocalSecretReference{Name: "push-of-" + a.Name}
		}, condition: fluxCond, reason: kubeoperav1alpha1.ReasonFluxSecretRefused, message: "spec.git.secretRef of app pusher-", terminal: true, alone: true},
		{name: "flux Secret holding the push credential", setup: fluxCredentials("push-copy", corev1.SecretTypeBasicAuth, map[string][]byte{"username": []byte("someone"), "password": []byte(gitServer.Password)}),
			mutate: func(_ *fixture, a *kubeoperav1alpha1.KubeOperaApp) {
				a.Spec.Git.FluxSecretRef = &kubeoperav1alpha1.LocalSecretReference{Name: "push-copy"}
			}, condition: fluxCond, reason: kubeoperav1alpha1.ReasonFluxSecretRefused, message: "same credential", terminal: true, alone: true},
		{name: "flux Secret of a ServiceAccount token shape", setup: fluxCredentials("flux-sa-shaped", corev1.SecretTypeOpaque, map[string][]byte{"token": []byte("eyJhbGciOiJSUzI1NiJ9.sa-t0ken"), "namespace": []byte("default")}),
			mutate: func(_ *fixture, a *kubeoperav1alpha1.KubeOperaApp) {
				a.Spec.Git.FluxSecretRef = &kubeoperav1alpha1.LocalSecretReference{Name: "flux-sa-shaped"}
			}, condition: fluxCond, reason: kubeoperav1alpha1.ReasonGitSecretInvalid, message: `key "namespace"`, terminal: true},
		// No push credential in any vCluster: a copy is declared, and compared with every push
		// credential of the repository; a declared or copied credential is never pushed with.
		{name: "flux Secret without the flux-credentials label", setup: secret("unlabelled-read", corev1.SecretTypeBasicAuth, gitServer.ReadOnlySecretData()),
			mutate: func(_ *fixture, a *kubeoperav1alpha1.KubeOperaApp) {
				a.Spec.Git.FluxSecretRef = &kubeoperav1alpha1.LocalSecretReference{Name: "unlabelled-read"}
			}, condition: fluxCond, reason: kubeoperav1alpha1.ReasonFluxSecretRefused, message: "not labelled kubeopera.io/flux-credentials=true", terminal: true},
		{name: "flux Secret holding the push credential of another namespace's app of the repository", setup: func(f *fixture, app string) string {
			otherNamespaceApp(f, app, map[string][]byte{"username": []byte("neighbour"), "token": []byte("n3ighbour-push-" + app)},
				map[string][]byte{"username": []byte("neighbour"), "token": []byte("n3ighbour-read-" + app)})
			return fluxCredentials("stolen-"+app, corev1.SecretTypeOpaque, map[string][]byte{"username": []byte("x"), "password": []byte("n3ighbour-push-" + app)})(f, app)
		}, mutate: func(_ *fixture, a *kubeoperav1alpha1.KubeOperaApp) {
			a.Spec.Git.FluxSecretRef = &kubeoperav1alpha1.LocalSecretReference{Name: "stolen-" + a.Name}
		}, condition: fluxCond, reason: kubeoperav1alpha1.ReasonFluxSecretRefused, message: "same credential as the push Secret of app other-", terminal: true, alone: true},
		{name: "push Secret labelled as Flux credentials", setup: fluxCredentials("declared-copyable", corev1.SecretTypeOpaque, gitServer.SecretData()),
			mutate:    withGitSecret("declared-copyable"),
			condition: gitCond, reason: kubeoperav1alpha1.ReasonPushSecretExposed, message: "declared copyable into vClusters", terminal: true},
		{name: "push Secret holding another app's Flux credential of the repository", setup: func(f *fixture, app string) string {
			otherNamespaceApp(f, app, map[string][]byte{"username": []byte("neighbour"), "token": []byte("n3ighbour-push-" + app)},
				map[string][]byte{"username": []byte("neighbour"), "token": []byte("n3ighbour-read-" + app)})
			return secret("exposed-"+app, corev1.SecretTypeOpaque, map[string][]byte{"username": []byte("git"), "password": []byte("n3ighbour-read-" + app)})(f, app)
		}, mutate: func(_ *fixture, a *kubeoperav1alpha1.KubeOperaApp) {
			a.Spec.Git.SecretRef = &kubeoperav1alpha1.LocalSecretReference{Name: "exposed-" + a.Name}
		}, condition: gitCond, reason: kubeoperav1alpha1.ReasonPushSecretExposed, message: "same credential as the Flux Secret of app other-", terminal: true, alone: true},
		{name: "flux Secret missing", mutate: func(_ *fixture, a *kubeoperav1alpha1.KubeOperaApp) {
			a.Spec.Git.FluxSecretRef = &kubeoperav1alpha1.LocalSecretReference{Name: "no-such-flux-secret"}
		}, condition: gitCond, reason: kubeoperav1alpha1.ReasonGitSecretNotFound, message: "no-such-flux-secret"},
		// Reserved folders, folders of another namespace, and folders no app wrote.
		{name: "git path is the repository root", mutate: spec(func(a *kubeoperav1alpha1.KubeOperaApp) { a.Spec.Git.Path = "." }), admission: "spec.git.path"},
		{name: "git path in a dot-folder", mutate: spec(func(a *kubeoperav1alpha1.KubeOperaApp) { a.Spec.Git.Path = ".github/workflows" }),
			condition: gitCond, reason: kubeoperav1alpha1.ReasonGitPathNotAllowed, message: `dot-folder ".github"`, terminal: true},
		{name: "git path in a nested dot-folder", mutate: spec(func(a *kubeoperav1alpha1.KubeOperaApp) { a.Spec.Git.Path = "apps/.flux/web" }),
			condition: gitCond, reason: kubeoperav1alpha1.ReasonGitPathNotAllowed, message: `dot-folder ".flux"`, terminal: true},
		{name: "git path outside the apps prefix", mutate: spec(func(a *kubeoperav1alpha1.KubeOperaApp) { a.Spec.Git.Path = "clusters/prod" }),
			condition: gitCond, reason: kubeoperav1alpha1.ReasonGitPathNotAllowed, message: `not inside the apps prefix "apps/"`, terminal: true},
		{name: "git path is the apps prefix", mutate: spec(func(a *kubeoperav1alpha1.KubeOperaApp) { a.Spec.Git.Path = "apps" }),
			condition: gitCond, reason: kubeoperav1alpha1.ReasonGitPathNotAllowed, message: "not inside the apps prefix", terminal: true},
		{name: "git path in another namespace's folder", mutate: spec(func(a *kubeoperav1alpha1.KubeOperaApp) { a.Spec.Git.Path = "apps/someone-else/web" }),
			condition: gitCond, reason: kubeoperav1alpha1.ReasonGitPathNotAllowed, message: "an app writes only in its own namespace's folder", terminal: true},
		{name: "git path is the namespace's folder itself", mutate: func(f *fixture, a *kubeoperav1alpha1.KubeOperaApp) { a.Spec.Git.Path = "apps/" + f.ns },
			condition: gitCond, reason: kubeoperav1alpha1.ReasonGitPathNotAllowed, message: "an app writes only in its own namespace's folder", terminal: true},
		{name: "git path holding a README no app wrote", setup: func(f *fixture, app string) string {
			_, err := gitServer.PushOutsideCommit(f.repo, "main", f.path("readme-"+app)+"/README.md", "hand-written")
			f.g.Expect(err).NotTo(HaveOccurred())
			return ""
		}, mutate: func(f *fixture, a *kubeoperav1alpha1.KubeOperaApp) { a.Spec.Git.Path = f.path("readme-" + a.Name) },
			condition: gitCond, reason: kubeoperav1alpha1.ReasonFolderNotOwned, message: "without an ownership marker"},
		{name: "git path that is a file no app wrote", setup: func(f *fixture, app string) string {
			_, err := gitServer.PushOutsideCommit(f.repo, "main", f.path("file-"+app), "a file")
			f.g.Expect(err).NotTo(HaveOccurred())
			return ""
		}, mutate: func(f *fixture, a *kubeoperav1alpha1.KubeOperaApp) { a.Spec.Git.Path = f.path("file-" + a.Name) },
			condition: gitCond, reason: kubeoperav1alpha1.ReasonFolderNotOwned, message: "is a file"},
		// spec.git.branch: a branch the repository does not have (it has main).
		{name: "git branch the repository does not have", setup: func(f *fixture, app string) string {
			_, err := gitServer.PushOutsideCommit(f.repo, "main", "README.md", "tenant apps\n")
			f.g.Expect(err).NotTo(HaveOccurred())
			return ""
		}, mutate: func(_ *fixture, a *kubeoperav1alpha1.KubeOperaApp) { a.Spec.Git.Branch = "no-such-" + a.Name },
			condition: gitCond, reason: kubeoperav1alpha1.ReasonGitBranchNotFound, message: kubeoperav1alpha1.AnnotationCreateGitBranch},
		// The namespaces of the vCluster's system and of Flux are never an app's.
		{name: "targetNamespace kube-system", mutate: spec(func(a *kubeoperav1alpha1.KubeOperaApp) { a.Spec.TargetNamespace = "kube-system" }),
			condition: readyCond, reason: kubeoperav1alpha1.ReasonNamespaceReserved, message: `spec.targetNamespace "kube-system" is reserved`, terminal: true},
		{name: "targetNamespace default", mutate: spec(func(a *kubeoperav1alpha1.KubeOperaApp) { a.Spec.TargetNamespace = "default" }),
			condition: readyCond, reason: kubeoperav1alpha1.ReasonNamespaceReserved, message: `spec.targetNamespace "default" is reserved`, terminal: true},
		{name: "targetNamespace flux-system", mutate: spec(func(a *kubeoperav1alpha1.KubeOperaApp) { a.Spec.TargetNamespace = "flux-system" }),
			condition: readyCond, reason: kubeoperav1alpha1.ReasonNamespaceReserved, message: `spec.targetNamespace "flux-system" is reserved`, terminal: true},
		{name: "targetNamespace the app's Flux namespace", mutate: spec(func(a *kubeoperav1alpha1.KubeOperaApp) {
			a.Spec.TargetNamespace, a.Spec.Flux.Namespace = "gitops", "gitops"
		}), condition: readyCond, reason: kubeoperav1alpha1.ReasonNamespaceReserved, message: `spec.flux.namespace "gitops"`, terminal: true},
		{name: "app name kube-* without targetNamespace", mutate: func(_ *fixture, a *kubeoperav1alpha1.KubeOperaApp) { a.Name = "kube-" + a.Name },
			condition: readyCond, reason: kubeoperav1alpha1.ReasonNamespaceReserved, message: "the app's name, spec.targetNamespace is empty", terminal: true},
		{name: "flux namespace kube-system", mutate: spec(func(a *kubeoperav1alpha1.KubeOperaApp) { a.Spec.Flux.Namespace = "kube-system" }),
			condition: readyCond, reason: kubeoperav1alpha1.ReasonNamespaceReserved, message: `spec.flux.namespace "kube-system" is reserved`, terminal: true},
		// spec.git.path: a folder of another app.
		{name: "git path of another app's folder", setup: func(f *fixture, app string) string {
			f.create(f.newApp("owner-"+app, "t1"))
			f.waitReady("owner-" + app)
			return ""
		}, mutate: func(f *fixture, a *kubeoperav1alpha1.KubeOperaApp) { a.Spec.Git.Path = f.path("owner-" + a.Name) },
			condition: gitCond, reason: kubeoperav1alpha1.ReasonPathConflict, message: "owner-"},
	}

	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			// A terminal row spends most of its time in the quiet window of its hot-loop check;
			// those windows overlap (-test.parallel rows at once, after the other rows). Each
			// row counts only its own app's passes, writes and Events.
			if tc.terminal && !tc.alone {
				t.Parallel()
			}
			cf := *f
			cf.t, cf.g = t, NewWithT(t)
			cf.g.SetDefaultEventuallyTimeout(timeout)
			cf.g.SetDefaultEventuallyPollingInterval(20 * time.Millisecond)
			tc.run(&cf, fmt.Sprintf("bad-%d", i))
		})
	}
}

func (tc badInput) run(f *fixture, name string) {
	tenant := "t1"
	if tc.setup != nil {
		if tn := tc.setup(f, name); tn != "" {
			tenant = tn
		}
	}
	a := f.newApp(name, tenant)
	if tc.mutate != nil {
		tc.mutate(f, a)
	}
	headBefore := f.head()
	// A reserved namespace (kube-system, flux-system) exists before the app: only the app's own
	// objects count there.
	appNamespace := render.AppNamespace(a).Name
	namespaceExisted := f.vc(&corev1.Namespace{}, "", appNamespace)
	vclusterBefore := vclusterRequests.mark()
	err := host.Client.Create(f.ctx, a)
	if tc.admission != "" {
		f.g.Expect(err).To(HaveOccurred(), "the API server admitted the app")
		f.g.Expect(apierrors.IsInvalid(err)).To(BeTrue(), "not refused as invalid: %v", err)
		f.g.Expect(err.Error()).To(ContainSubstring(tc.admission))
		return
	}
	f.g.Expect(err).NotTo(HaveOccurred())
	name = a.Name
	f.t.Cleanup(func() {
		if tc.skipGitCleanup {
			f.update(name, func(a *kubeoperav1alpha1.KubeOperaApp) {
				a.Annotations = map[string]string{kubeoperav1alpha1.AnnotationSkipGitCleanup: "true"}
			})
		}
		f.deleteApp(name)
		f.waitGone(name)
	})

	// A specific reason on the step condition and on Ready, and a Warning Event.
	got := f.waitCondition(name, tc.condition, metav1.ConditionFalse, tc.reason)
	f.waitCondition(name, kubeoperav1alpha1.ConditionReady, metav1.ConditionFalse, tc.reason)
	f.g.Expect(conditionMessage(got, tc.condition)).To(ContainSubstring(tc.message))
	assertNoSecretsIn(f, conditionMessage(got, tc.condition))
	f.waitEvent(name, corev1.EventTypeWarning, tc.reason)

	// No hot loop: a window of the reconciler's own passes.
	start := passes.of(f.ns, name)
	hostBefore := hostRequests.mark()
	warnings := countWarnings(f, name)
	if tc.terminal {
		// Never retried: each change of the app is one pass. One pass more may come from an
		// unrelated watch event the suite's other tests cause (a CI run under load once saw one).
		// A retry makes more: over the second after the pokes, the backoff (RetryBase 200ms,
		// doubling) would add at least two.
		for i := 1; i <= 2; i++ {
			f.poke(name)
			f.g.Eventually(func() int { return passes.of(f.ns, name) }).Should(BeNumerically(">=", start+i), "passes after poke %d", i)
		}
		f.g.Consistently(func() int { return passes.of(f.ns, name) }, time.Second, 50*time.Millisecond).
			Should(BeNumerically("<=", start+3), "reconciled without a change")
	} else {
		// Retried with the backoff: the next passes find the same and write nothing.
		f.g.Eventually(func() int { return passes.of(f.ns, name) }).Should(BeNumerically(">=", start+2))
	}
	f.g.Expect(hostRequests.writesSince(hostBefore, "kubeoperaapps", name)).To(BeEmpty(), "status written again for the same refusal")
	f.g.Expect(countWarnings(f, name)).To(Equal(warnings), "Events recorded again for the same refusal")
	f.waitCondition(name, kubeoperav1alpha1.ConditionReady, metav1.ConditionFalse, tc.reason)

	// No partial write: nothing pushed, nothing written to the vCluster.
	f.g.Expect(f.head()).To(Equal(headBefore), "pushed to Git")
	// The vCluster is shared by the suite and by the rows running at once: apps of earlier tests
	// may still be cleaned up there, so only the writes naming this app's namespace or Flux
	// objects count (the namespace and the Kustomization are also checked to be absent below).
	writes := vclusterRequests.writesSince(vclusterBefore, render.FluxName(got))
	if !namespaceExisted {
		writes = mergeCounts(writes, vclusterRequests.writesSince(vclusterBefore, "namespaces", appNamespace))
		f.g.Expect(f.vc(&corev1.Namespace{}, "", appNamespace)).To(BeFalse())
	}
	f.g.Expect(writes).To(BeEmpty(), "written to the vCluster")
	f.g.Expect(f.vc(&kustomizev1.Kustomization{}, render.FluxNamespace(got), render.FluxName(got))).To(BeFalse())
}

func countWarnings(f *fixture, name string) int {
	n := 0
	for _, e := range f.events(name) {
		if e.Type == corev1.EventTypeWarning {
			n++
		}
	}
	return n
}

// kubeconfigWithServer is the vCluster's kubeconfig with another server.
func kubeconfigWithServer(f *fixture, server string) []byte {
	f.t.Helper()
	cfg, err := clientcmd.Load(vclusterKubeconfig)
	f.g.Expect(err).NotTo(HaveOccurred())
	for _, c := range cfg.Clusters {
		c.Server = server
	}
	kubeconfig, err := clientcmd.Write(*cfg)
	f.g.Expect(err).NotTo(HaveOccurred())
	return kubeconfig
}

const execKubeconfig = `apiVersion: v1
kind: Config
current-context: vc
clusters:
- name: vc
  cluster: {server: "https://127.0.0.1:6443"}
contexts:
- name: vc
  context: {cluster: vc, user: vc}
users:
- name: vc
  user:
    exec: {apiVersion: client.authentication.k8s.io/v1, command: /bin/sh, args: ["-c", "cat /etc/shadow"]}
`

const insecureKubeconfig = `apiVersion: v1
kind: Config
current-context: vc
clusters:
- name: vc
  cluster: {server: "https://127.0.0.1:6443", insecure-skip-tls-verify: true}
contexts:
- name: vc
  context: {cluster: vc, user: vc}
users:
- name: vc
  user: {token: t0ken}
`

// The annotations the controller honours are escapes for a deletion that cannot finish; only
// the value "true" applies. Any other value is ignored, and the condition that keeps the app
// says so, naming the value: the deletion goes on waiting (no Flux or Git step is skipped by
// mistake) and writes nothing for the same state. The same value set to "true" then lets the
// deletion finish.
func TestBadInputMatrixAnnotations(t *testing.T) {
	cases := []struct {
		name, annotation, value string
		// block makes the deletion wait for what the annotation would skip.
		block  func(f *fixture, app, fluxName string)
		reason string
	}{
		{name: "abandon-kustomization not true", annotation: kubeoperav1alpha1.AnnotationAbandonKustomization, value: "yes",
			block: func(f *fixture, _, fluxName string) {
				// Flux's finalizer stands in: the Kustomization stays until "Flux" prunes.
				ks := &kustomizev1.Kustomization{}
				f.g.Expect(f.vc(ks, "flux-system", fluxName)).To(BeTrue())
				ks.Finalizers = append(ks.Finalizers, "test/hold")
				f.g.Expect(vcluster.Client.Update(f.ctx, ks)).To(Succeed())
				f.t.Cleanup(func() {
					_ = vcluster.Client.Get(f.ctx, client.ObjectKeyFromObject(ks), ks)
					ks.Finalizers = nil
					_ = vcluster.Client.Update(f.ctx, ks)
				})
			}, reason: kubeoperav1alpha1.ReasonKustomizationStuck},
		{name: "skip-git-cleanup not true", annotation: kubeoperav1alpha1.AnnotationSkipGitCleanup, value: "True",
			block: func(f *fixture, _, _ string) {
				// The Git server refuses the credentials from now on.
				creds := &corev1.Secret{}
				f.g.Expect(host.Client.Get(f.ctx, client.ObjectKey{Namespace: f.ns, Name: gitSecret}, creds)).To(Succeed())
				creds.Data["password"] = []byte("revoked-p4ss")
				f.g.Expect(host.Client.Update(f.ctx, creds)).To(Succeed())
			}, reason: kubeoperav1alpha1.ReasonDeleteFailed},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t)
			fluxName := deployedApp(f, "escape")
			tc.block(f, "escape", fluxName)
			f.update("escape", func(a *kubeoperav1alpha1.KubeOperaApp) {
				a.Annotations = map[string]string{tc.annotation: tc.value}
			})
			f.deleteApp("escape")
			a := f.waitCondition("escape", kubeoperav1alpha1.ConditionReady, metav1.ConditionFalse, tc.reason)
			f.g.Expect(conditionMessage(a, kubeoperav1alpha1.ConditionReady)).To(ContainSubstring(fmt.Sprintf("%s is %q, which is ignored", tc.annotation, tc.value)))
			f.waitEvent("escape", corev1.EventTypeWarning, tc.reason)
			f.g.Expect(a.Finalizers).To(ContainElement(kubeoperav1alpha1.Finalizer))

			// No hot loop: the next passes find the same and write no status and no Event.
			start := passes.of(f.ns, "escape")
			statusWrites := hostRequests.writes("/kubeoperaapps/escape")
			warnings := countWarnings(f, "escape")
			f.poke("escape")
			f.g.Eventually(func() int { return passes.of(f.ns, "escape") }).Should(BeNumerically(">=", start+1))
			f.g.Expect(hostRequests.writes("/kubeoperaapps/escape")).To(Equal(statusWrites))
			f.g.Expect(countWarnings(f, "escape")).To(Equal(warnings))
			f.g.Expect(f.get("escape").Finalizers).To(ContainElement(kubeoperav1alpha1.Finalizer))

			// "true" applies.
			f.update("escape", func(a *kubeoperav1alpha1.KubeOperaApp) {
				a.Annotations = map[string]string{tc.annotation: "true"}
			})
			f.waitGone("escape")
		})
	}
}
