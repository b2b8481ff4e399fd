package render

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"sigs.k8s.io/yaml"

	kubeoperav1alpha1 "github.com/kubeopera/kubeopera-operator/api/kubeopera/v1alpha1"
	"github.com/kubeopera/kubeopera-operator/internal/gitcred"
	"github.com/kubeopera/kubeopera-operator/internal/testfixture"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/")

// app builds the KubeOperaApp of the golden files, web in namespace cs-1 with every field the
// manifests render set, changed by mods.
func app(mods ...testfixture.AppMod) *kubeoperav1alpha1.KubeOperaApp {
	return testfixture.KubeOperaApp(append([]testfixture.AppMod{
		testfixture.AppInNamespace("cs-1"), testfixture.AppImage("ghcr.io/example/web:1.2.3"), testfixture.AppReplicas(2),
		testfixture.AppPorts(
			kubeoperav1alpha1.AppPort{Name: "http", ContainerPort: 8080, ServicePort: 80},
			kubeoperav1alpha1.AppPort{Name: "metrics", ContainerPort: 9090, Protocol: corev1.ProtocolTCP},
		),
		func(a *kubeoperav1alpha1.KubeOperaApp) {
			a.Spec.App.Env = []corev1.EnvVar{{Name: "LOG_LEVEL", Value: "info"}, {Name: "Z", Value: "last"}, {Name: "A", Value: "first"}}
			a.Spec.App.Command = []string{"/web"}
			a.Spec.App.Args = []string{"--serve"}
			a.Spec.App.Resources = corev1.ResourceRequirements{
				Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("50m"), corev1.ResourceMemory: resource.MustParse("64Mi")},
				Limits:   corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("256Mi")},
			}
			a.Spec.App.ReadinessProbe = &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/ready", Port: intstrName("http")}}}
			a.Spec.Registry = &kubeoperav1alpha1.RegistrySpec{SecretRef: kubeoperav1alpha1.LocalSecretReference{Name: "registry-credentials"}}
		},
		testfixture.AppGitURL("https://git.example.com/tenant/apps.git"), testfixture.AppGitSecret("git"), testfixture.AppFluxSecret("git-readonly"),
		testfixture.AppIngress(kubeoperav1alpha1.IngressSpec{Host: "web.example.com", TLS: true, ClusterIssuer: "letsencrypt", ClassName: "nginx"}),
	}, mods...)...)
}

func TestManifestsGolden(t *testing.T) {
	cases := map[string]*kubeoperav1alpha1.KubeOperaApp{
		"full": app(),
		"minimal": app(func(a *kubeoperav1alpha1.KubeOperaApp) {
			a.Spec.App = kubeoperav1alpha1.AppSpec{Image: "nginx:1.27"}
			a.Spec.Registry, a.Spec.Ingress = nil, nil
		}),
		"host-only-ingress": app(func(a *kubeoperav1alpha1.KubeOperaApp) {
			a.Spec.TargetNamespace = "shop"
			a.Spec.Ingress = &kubeoperav1alpha1.IngressSpec{Host: "shop.example.com"}
			a.Spec.Registry = nil
		}),
	}
	for name, a := range cases {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			files, err := Manifests(a)
			g.Expect(err).NotTo(HaveOccurred())
			var all bytes.Buffer
			for _, f := range []string{FileKustomization, FileDeployment, FileService, FileIngress} {
				if b, ok := files[f]; ok {
					all.WriteString("# " + f + "\n")
					all.Write(b)
				}
			}
			golden := filepath.Join("testdata", name+".yaml")
			if *update {
				g.Expect(os.WriteFile(golden, all.Bytes(), 0o600)).To(Succeed())
			}
			want, err := os.ReadFile(golden)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(all.String()).To(Equal(string(want)), "rerun with -update after an intended change")
		})
	}
}

func TestManifestsAreDeterministic(t *testing.T) {
	g := NewWithT(t)
	first, err := Manifests(app())
	g.Expect(err).NotTo(HaveOccurred())
	for range 50 {
		again, err := Manifests(app())
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(again).To(Equal(first))
	}
}

func TestManifestsFilesAndKustomization(t *testing.T) {
	g := NewWithT(t)
	files, err := Manifests(app())
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(files).To(HaveLen(4))
	var k struct{ Resources []string }
	g.Expect(yaml.Unmarshal(files[FileKustomization], &k)).To(Succeed())
	g.Expect(k.Resources).To(Equal([]string{FileDeployment, FileService, FileIngress}))

	noIngress, err := Manifests(app(func(a *kubeoperav1alpha1.KubeOperaApp) { a.Spec.Ingress = nil }))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(noIngress).NotTo(HaveKey(FileIngress))
	g.Expect(yaml.Unmarshal(noIngress[FileKustomization], &k)).To(Succeed())
	g.Expect(k.Resources).To(Equal([]string{FileDeployment, FileService}))

	// An Ingress spec with neither TLS nor host renders none.
	empty, err := Manifests(app(func(a *kubeoperav1alpha1.KubeOperaApp) {
		a.Spec.Ingress = &kubeoperav1alpha1.IngressSpec{ClassName: "nginx"}
	}))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(empty).NotTo(HaveKey(FileIngress))
}

func TestEveryObjectHasNamespaceAndNoNamespaceObjects(t *testing.T) {
	g := NewWithT(t)
	a := app(func(a *kubeoperav1alpha1.KubeOperaApp) { a.Spec.TargetNamespace = "shop" })
	files, err := Manifests(a)
	g.Expect(err).NotTo(HaveOccurred())
	for name, b := range files {
		if name == FileKustomization {
			continue
		}
		var obj struct {
			Kind     string
			Metadata struct {
				Namespace string
				Labels    map[string]string
			}
		}
		g.Expect(yaml.Unmarshal(b, &obj)).To(Succeed())
		g.Expect(obj.Kind).NotTo(Equal("Namespace"), name)
		g.Expect(obj.Metadata.Namespace).To(Equal("shop"), name)
		g.Expect(obj.Metadata.Labels).To(HaveKeyWithValue(LabelName, "web"), name)
		g.Expect(obj.Metadata.Labels).To(HaveKeyWithValue(LabelManagedBy, ManagedBy), name)
		g.Expect(string(b)).NotTo(ContainSubstring("creationTimestamp"), name)
		g.Expect(string(b)).NotTo(ContainSubstring("status"), name)
	}
}

func TestIngressTLS(t *testing.T) {
	g := NewWithT(t)
	ing := Ingress(app())
	g.Expect(ing).NotTo(BeNil())
	g.Expect(ing.Annotations).To(HaveKeyWithValue(ClusterIssuerAnnotation, "letsencrypt"))
	g.Expect(ing.Spec.TLS).To(HaveLen(1))
	g.Expect(ing.Spec.TLS[0].Hosts).To(Equal([]string{"web.example.com"}))
	g.Expect(ing.Spec.TLS[0].SecretName).To(Equal("web-tls"))
	g.Expect(*ing.Spec.IngressClassName).To(Equal("nginx"))
	g.Expect(ing.Spec.Rules[0].HTTP.Paths[0].Backend.Service.Port.Number).To(Equal(int32(80)))
	g.Expect(URL(app())).To(Equal("https://web.example.com"))

	hostOnly := app(func(a *kubeoperav1alpha1.KubeOperaApp) {
		a.Spec.Ingress = &kubeoperav1alpha1.IngressSpec{Host: "web.example.com"}
	})
	ing = Ingress(hostOnly)
	g.Expect(ing.Annotations).NotTo(HaveKey(ClusterIssuerAnnotation))
	g.Expect(ing.Spec.TLS).To(BeEmpty())
	g.Expect(URL(hostOnly)).To(Equal("http://web.example.com"))
	g.Expect(URL(app(func(a *kubeoperav1alpha1.KubeOperaApp) { a.Spec.Ingress = nil }))).To(BeEmpty())
}

// status.url: https:// only with TLS, http:// otherwise, and none where there is no one address.
func TestURL(t *testing.T) {
	cases := []struct {
		name    string
		ingress *kubeoperav1alpha1.IngressSpec
		ports   bool
		want    string
	}{
		{name: "TLS", ingress: &kubeoperav1alpha1.IngressSpec{Host: "web.example.com", TLS: true, ClusterIssuer: "le"}, ports: true, want: "https://web.example.com"},
		{name: "no TLS", ingress: &kubeoperav1alpha1.IngressSpec{Host: "web.example.com"}, ports: true, want: "http://web.example.com"},
		{name: "wildcard host with TLS", ingress: &kubeoperav1alpha1.IngressSpec{Host: "*.example.com", TLS: true, ClusterIssuer: "le"}, ports: true},
		{name: "wildcard host", ingress: &kubeoperav1alpha1.IngressSpec{Host: "*.example.com"}, ports: true},
		{name: "no host", ingress: &kubeoperav1alpha1.IngressSpec{ClassName: "nginx"}, ports: true},
		{name: "no Ingress", ports: true},
		{name: "no port to route to", ingress: &kubeoperav1alpha1.IngressSpec{Host: "web.example.com"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			a := app(func(a *kubeoperav1alpha1.KubeOperaApp) {
				a.Spec.Ingress = tc.ingress
				if !tc.ports {
					a.Spec.App.Ports = nil
				}
			})
			NewWithT(t).Expect(URL(a)).To(Equal(tc.want))
		})
	}
}

func TestNoSecretMaterialRendered(t *testing.T) {
	g := NewWithT(t)
	files, err := Manifests(app())
	g.Expect(err).NotTo(HaveOccurred())
	for name, b := range files {
		g.Expect(string(b)).NotTo(ContainSubstring("kind: Secret"), name)
	}
	// The pull Secret is referenced by name only.
	g.Expect(string(files[FileDeployment])).To(ContainSubstring("imagePullSecrets:\n      - name: registry-credentials\n"))
}

func TestDefaults(t *testing.T) {
	g := NewWithT(t)
	a := app()
	g.Expect(TargetNamespace(a)).To(Equal("web"))
	g.Expect(Branch(a)).To(Equal("main"))
	g.Expect(Path(a, DefaultPathPrefix)).To(Equal("apps/cs-1/web"), "default: host namespace and name")
	g.Expect(Path(a, "/tenants/")).To(Equal("tenants/cs-1/web"), "inside the operator's apps prefix")
	g.Expect(NamespaceFolder("tenants", "cs-1")).To(Equal("tenants/cs-1"))
	g.Expect(FluxNamespace(a)).To(Equal("flux-system"))
	d, err := FluxInterval(a)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(d.String()).To(Equal("1m0s"))

	a.Spec.TargetNamespace, a.Spec.Git.Branch, a.Spec.Git.Path = "shop", "prod", "tenants/x/web"
	a.Spec.Flux = kubeoperav1alpha1.FluxSpec{Interval: "10s", Namespace: "flux"}
	g.Expect(TargetNamespace(a)).To(Equal("shop"))
	g.Expect(Branch(a)).To(Equal("prod"))
	g.Expect(Path(a, DefaultPathPrefix)).To(Equal("tenants/x/web"), "as the spec says (the App Controller checks it)")
	g.Expect(FluxNamespace(a)).To(Equal("flux"))
	d, err = FluxInterval(a)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(d.String()).To(Equal("10s"))
	a.Spec.Flux.Interval = "soon"
	_, err = FluxInterval(a)
	g.Expect(err).To(HaveOccurred())
}

func TestFluxNames(t *testing.T) {
	g := NewWithT(t)
	g.Expect(FluxName(app())).To(Equal("cs-1-web"))
	g.Expect(GitSecretName(app())).To(Equal("cs-1-web-git"))

	long := app(func(a *kubeoperav1alpha1.KubeOperaApp) {
		a.Namespace = strings.Repeat("n", 60)
		a.Name = strings.Repeat("a", 63)
	})
	other := app(func(a *kubeoperav1alpha1.KubeOperaApp) {
		a.Namespace = strings.Repeat("n", 60)
		a.Name = strings.Repeat("a", 62) + "b"
	})
	for _, n := range []string{FluxName(long), GitSecretName(long), TLSSecretName(long), FluxName(other)} {
		g.Expect(len(n)).To(BeNumerically("<=", 63), n)
		g.Expect(validation.IsDNS1123Label(n)).To(BeEmpty(), n)
	}
	g.Expect(FluxName(long)).NotTo(Equal(FluxName(other)))
	g.Expect(FluxName(long)).To(Equal(FluxName(long.DeepCopy())))
	// A cut that ends in '-' is trimmed so the name stays valid.
	g.Expect(boundedName(strings.Repeat("a", 53) + "-" + strings.Repeat("b", 20))).To(MatchRegexp(`^a{53}-[0-9a-f]{8}$`))
}

func TestFluxObjects(t *testing.T) {
	g := NewWithT(t)
	a := app(func(a *kubeoperav1alpha1.KubeOperaApp) {
		a.Spec.TargetNamespace = "shop"
		a.Spec.Flux = kubeoperav1alpha1.FluxSpec{Interval: "10s", Namespace: "flux"}
	})
	repo, err := GitRepository(a, Path(a, DefaultPathPrefix))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(repo.Namespace).To(Equal("flux"))
	g.Expect(repo.Name).To(Equal("cs-1-web"))
	g.Expect(repo.Spec.URL).To(Equal("https://git.example.com/tenant/apps.git"))
	g.Expect(repo.Spec.Reference.Branch).To(Equal("main"))
	g.Expect(repo.Spec.Interval.Duration.String()).To(Equal("10s"))
	g.Expect(repo.Spec.SecretRef.Name).To(Equal("cs-1-web-git"))
	// Only the app's folder, with the "/" that keeps go-git's prefix match from taking the
	// folders of apps whose names start with this one's.
	g.Expect(repo.Spec.SparseCheckout).To(Equal([]string{"apps/cs-1/web/"}))

	ks, err := Kustomization(a, Path(a, DefaultPathPrefix))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(ks.Namespace).To(Equal("flux"))
	g.Expect(ks.Spec.Prune).To(BeTrue())
	g.Expect(ks.Spec.Wait).To(BeTrue(), "Synced means healthy: Flux waits for the applied objects")
	g.Expect(ks.Spec.Path).To(Equal("./apps/cs-1/web"))
	g.Expect(ks.Spec.TargetNamespace).To(Equal("shop"))
	g.Expect(ks.Spec.SourceRef.Kind).To(Equal("GitRepository"))
	g.Expect(ks.Spec.SourceRef.Name).To(Equal("cs-1-web"))
	g.Expect(ks.Spec.SourceRef.Namespace).To(Equal("flux"))
	// Health checks get the interval, not kustomize-controller's default (interval - 30s, at
	// least 30s); Flux applies as the app's ServiceAccount, not as itself.
	g.Expect(ks.Spec.Timeout).To(Equal(&metav1.Duration{Duration: 10 * time.Second}))
	g.Expect(ks.Spec.ServiceAccountName).To(Equal("cs-1-web"))

	// Without Flux credentials Flux fetches anonymously: the push credentials (secretRef) are
	// never what the GitRepository names.
	public := app(func(a *kubeoperav1alpha1.KubeOperaApp) { a.Spec.Git.FluxSecretRef = nil })
	repo, err = GitRepository(public, Path(public, DefaultPathPrefix))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(repo.Spec.SecretRef).To(BeNil())
}

// The Kustomization's ServiceAccount lives in the Flux namespace; its Role, in the app
// namespace, grants the kinds the app renders and reads what their health checks read: no
// wildcard, no Secrets, nothing cluster-wide.
func TestFluxServiceAccount(t *testing.T) {
	g := NewWithT(t)
	a := app(func(a *kubeoperav1alpha1.KubeOperaApp) {
		a.Spec.TargetNamespace = "shop"
		a.Spec.Flux.Namespace = "flux"
	})
	sa := FluxServiceAccount(a)
	g.Expect(sa.Namespace).To(Equal("flux"))
	g.Expect(sa.Name).To(Equal("cs-1-web"))
	g.Expect(sa.Labels).To(HaveKeyWithValue(LabelManagedBy, ManagedBy))

	role := FluxRole(a)
	g.Expect(role.Namespace).To(Equal("shop"))
	g.Expect(role.Name).To(Equal("cs-1-web"))
	g.Expect(role.Labels).To(HaveKeyWithValue(LabelManagedBy, ManagedBy))
	granted := map[string][]string{}
	for _, r := range role.Rules {
		g.Expect(r.ResourceNames).To(BeEmpty())
		for _, group := range r.APIGroups {
			for _, res := range r.Resources {
				granted[group+"/"+res] = r.Verbs
			}
		}
	}
	write := []string{"get", "list", "watch", "create", "update", "patch", "delete"}
	read := []string{"get", "list", "watch"}
	g.Expect(granted).To(Equal(map[string][]string{
		"apps/deployments": write, "/services": write, "networking.k8s.io/ingresses": write,
		"apps/replicasets": read, "/pods": read,
	}))

	rb := FluxRoleBinding(a)
	g.Expect(rb.Namespace).To(Equal("shop"))
	g.Expect(rb.Labels).To(HaveKeyWithValue(LabelManagedBy, ManagedBy))
	g.Expect(rb.RoleRef).To(Equal(rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "Role", Name: "cs-1-web"}))
	g.Expect(rb.Subjects).To(Equal([]rbacv1.Subject{{Kind: "ServiceAccount", Name: "cs-1-web", Namespace: "flux"}}))

	// A long app name: the names stay valid and the same for the three objects.
	long := app(func(a *kubeoperav1alpha1.KubeOperaApp) {
		a.Namespace, a.Name = strings.Repeat("n", 63), strings.Repeat("w", 63)
	})
	g.Expect(len(FluxServiceAccountName(long))).To(BeNumerically("<=", 63))
	g.Expect(validation.IsDNS1123Label(FluxServiceAccountName(long))).To(BeEmpty())
	g.Expect(FluxRoleBinding(long).Subjects[0].Name).To(Equal(FluxServiceAccount(long).Name))
	g.Expect(FluxRoleBinding(long).RoleRef.Name).To(Equal(FluxRole(long).Name))
}

func TestFluxGitSecret(t *testing.T) {
	g := NewWithT(t)
	s := FluxGitSecret(app(), map[string][]byte{"username": []byte("u"), "password": []byte("p"), "extra": []byte("x")})
	g.Expect(s.Namespace).To(Equal("flux-system"))
	g.Expect(s.Name).To(Equal("cs-1-web-git"))
	g.Expect(s.Data).To(Equal(map[string][]byte{"username": []byte("u"), "password": []byte("p")}))

	s = FluxGitSecret(app(), map[string][]byte{"token": []byte("t")})
	g.Expect(s.Data).To(Equal(map[string][]byte{"username": []byte("git"), "password": []byte("t")}))

	// HTTPS: an SSH key in the same Secret stays on the host.
	both := map[string][]byte{
		"username": []byte("u"), "password": []byte("p"), "ca.crt": []byte("ca"), "bearerToken": []byte("b"),
		"identity": []byte("k"), "known_hosts": []byte("h"), "kubeconfig": []byte("other tenant"),
	}
	s = FluxGitSecret(app(), both)
	g.Expect(s.Data).To(Equal(map[string][]byte{"username": []byte("u"), "password": []byte("p"), "ca.crt": []byte("ca"), "bearerToken": []byte("b")}))

	// SSH: key, known_hosts and the key's passphrase only.
	ssh := app(func(a *kubeoperav1alpha1.KubeOperaApp) { a.Spec.Git.URL = "ssh://git@git.example.com/tenant/apps.git" })
	s = FluxGitSecret(ssh, both)
	g.Expect(s.Data).To(Equal(map[string][]byte{"identity": []byte("k"), "known_hosts": []byte("h"), "password": []byte("p")}))
	s = FluxGitSecret(ssh, map[string][]byte{"identity": []byte("k"), "known_hosts": []byte("h"), "token": []byte("t")})
	g.Expect(s.Data).To(Equal(map[string][]byte{"identity": []byte("k"), "known_hosts": []byte("h")}))
}

// FluxGitSecret copies exactly the keys the App Controller accepts for the URL's transport
// (gitcred.HTTPKeys, gitcred.SSHKeys), the token aside (Flux has none; TestFluxGitSecret): the
// renderer keeps no list of keys of its own that could drift from the Git writer's.
func TestFluxGitSecretCopiesTheGitCredentialKeys(t *testing.T) {
	g := NewWithT(t)
	data := map[string][]byte{"kubeconfig": []byte("not a Git credential")}
	for _, k := range append(gitcred.HTTPKeys(), gitcred.SSHKeys()...) {
		if k != gitcred.Token {
			data[k] = []byte("value of " + k)
		}
	}
	for _, tt := range []struct {
		url  string
		keys []string
	}{
		{url: "https://git.example.com/tenant/apps.git", keys: gitcred.HTTPKeys()},
		{url: "ssh://git@git.example.com/tenant/apps.git", keys: gitcred.SSHKeys()},
	} {
		want := map[string][]byte{}
		for _, k := range tt.keys {
			if k != gitcred.Token {
				want[k] = data[k]
			}
		}
		s := FluxGitSecret(app(func(a *kubeoperav1alpha1.KubeOperaApp) { a.Spec.Git.URL = tt.url }), data)
		g.Expect(s.Data).To(Equal(want), tt.url)
	}
}

func TestRegistrySecret(t *testing.T) {
	g := NewWithT(t)
	host := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "registry-credentials", Namespace: "cs-1", Labels: map[string]string{"host": "only"}},
		Type:       corev1.SecretTypeDockerConfigJson,
		Data:       map[string][]byte{corev1.DockerConfigJsonKey: []byte(`{"auths":{}}`)},
	}
	s := RegistrySecret(app(), host)
	g.Expect(s.Name).To(Equal("registry-credentials"))
	g.Expect(s.Namespace).To(Equal("web"))
	g.Expect(s.Type).To(Equal(corev1.SecretTypeDockerConfigJson))
	g.Expect(s.Data).To(Equal(host.Data))
	g.Expect(s.Labels).NotTo(HaveKey("host"))
}

// An Ingress carries HTTP: it routes to the first TCP port, after UDP and SCTP ones, and an app
// whose ports are none of them TCP gets no Ingress and is refused by Validate.
func TestIngressRoutesToTheFirstTCPPort(t *testing.T) {
	g := NewWithT(t)
	withPorts := func(ports ...kubeoperav1alpha1.AppPort) *kubeoperav1alpha1.KubeOperaApp {
		return app(func(a *kubeoperav1alpha1.KubeOperaApp) {
			a.Spec.App.Ports = ports
			a.Spec.Ingress = &kubeoperav1alpha1.IngressSpec{Host: "shop.example.com"}
		})
	}
	ing := Ingress(withPorts(
		kubeoperav1alpha1.AppPort{Name: "dns", ContainerPort: 53, Protocol: corev1.ProtocolUDP},
		kubeoperav1alpha1.AppPort{Name: "sig", ContainerPort: 2905, Protocol: corev1.ProtocolSCTP},
		kubeoperav1alpha1.AppPort{Name: "http", ContainerPort: 8080, ServicePort: 80},
	))
	g.Expect(ing).NotTo(BeNil())
	g.Expect(ing.Spec.Rules[0].HTTP.Paths[0].Backend.Service.Port.Number).To(Equal(int32(80)))

	g.Expect(Ingress(withPorts(kubeoperav1alpha1.AppPort{Name: "dns", ContainerPort: 53, Protocol: corev1.ProtocolUDP}))).To(BeNil())
	files, err := Manifests(withPorts(kubeoperav1alpha1.AppPort{Name: "dns", ContainerPort: 53, Protocol: corev1.ProtocolUDP}))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(files).NotTo(HaveKey(FileIngress))
	err = Validate(withPorts(kubeoperav1alpha1.AppPort{Name: "dns", ContainerPort: 53, Protocol: corev1.ProtocolUDP}))
	g.Expect(err).To(MatchError(ContainSubstring("spec.ingress: Invalid value")))
	g.Expect(err).To(MatchError(ContainSubstring("all of them are UDP or SCTP")))
	g.Expect(Validate(withPorts(kubeoperav1alpha1.AppPort{Name: "http", ContainerPort: 8080}))).To(Succeed())
}
