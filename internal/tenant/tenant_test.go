package tenant

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	tenantv1alpha1 "github.com/kubeopera/kubeopera-operator/api/external/tenant/v1alpha1"
	kubeoperav1alpha1 "github.com/kubeopera/kubeopera-operator/api/kubeopera/v1alpha1"
	"github.com/kubeopera/kubeopera-operator/internal/testfixture"
)

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// newTenant is Tenant name of CloudSpace cs (none when empty) in namespace ns: ready > 0 makes it
// Ready since t0+ready seconds, 0 not Ready since t0.
func newTenant(name, cs string, ready int) tenantv1alpha1.Tenant {
	readiness := testfixture.TenantNotReady(t0)
	if ready > 0 {
		readiness = testfixture.TenantReady(t0.Add(time.Duration(ready) * time.Second))
	}
	return *testfixture.Tenant(testfixture.TenantNamed(name), testfixture.TenantCloudSpace(cs), readiness)
}

// newApp is an app of CloudSpace cs-1 in namespace ns naming Tenant tenantName (none when empty),
// placed in Tenant ns/pinned when pinned is not empty.
func newApp(tenantName string, pinned string) *kubeoperav1alpha1.KubeOperaApp {
	mods := []testfixture.AppMod{testfixture.AppTenant(tenantName)}
	if pinned != "" {
		mods = append(mods, testfixture.AppPlacedIn("ns", pinned))
	}
	return testfixture.KubeOperaApp(mods...)
}

func fakeReader(tenants ...tenantv1alpha1.Tenant) client.Reader {
	s := runtime.NewScheme()
	_ = tenantv1alpha1.AddToScheme(s)
	b := fake.NewClientBuilder().WithScheme(s)
	for i := range tenants {
		b = b.WithObjects(&tenants[i])
	}
	return b.Build()
}

func TestResolve(t *testing.T) {
	other := newTenant("other-ns-tenant", "cs-1", 1)
	other.Namespace = "elsewhere"
	tenants := []tenantv1alpha1.Tenant{
		newTenant("b-late", "cs-1", 30),
		newTenant("a-early", "cs-1", 10),
		newTenant("c-not-ready", "cs-1", 0),
		newTenant("foreign", "cs-2", 1),
		newTenant("unlabelled", "", 1),
		other,
	}
	cases := []struct {
		name    string
		app     *kubeoperav1alpha1.KubeOperaApp
		tenants []tenantv1alpha1.Tenant
		want    string
		wantErr error
	}{
		{"by name", newApp("b-late", ""), tenants, "b-late", nil},
		{"by name, other CloudSpace", newApp("foreign", ""), tenants, "", ErrCloudSpaceMismatch},
		{"by name, no label", newApp("unlabelled", ""), tenants, "", ErrCloudSpaceMismatch},
		{"by name, not ready", newApp("c-not-ready", ""), tenants, "", ErrNotReady},
		{"by name, missing", newApp("nope", ""), tenants, "", ErrNotFound},
		{"by name, only in another namespace", newApp("other-ns-tenant", ""), tenants, "", ErrNotFound},
		{"by CloudSpace: earliest Ready", newApp("", ""), tenants, "a-early", nil},
		{"by CloudSpace: none", newApp("", ""), []tenantv1alpha1.Tenant{newTenant("x", "cs-2", 1)}, "", ErrNotFound},
		{"by CloudSpace: none Ready", newApp("", ""), []tenantv1alpha1.Tenant{newTenant("x", "cs-1", 0)}, "", ErrNotReady},
		{"pinned wins over earlier Ready", newApp("", "b-late"), tenants, "b-late", nil},
		{"pinned and named agree", newApp("b-late", "b-late"), tenants, "b-late", nil},
		{"pinned elsewhere than named", newApp("a-early", "b-late"), tenants, "", ErrPinned},
		{"pinned tenant gone: never moves", newApp("", "gone"), tenants, "", ErrNotFound},
		{"pinned tenant not ready: waits", newApp("", "c-not-ready"), tenants, "", ErrNotReady},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			got, err := Resolve(context.Background(), fakeReader(tc.tenants...), tc.app)
			if tc.wantErr != nil {
				g.Expect(err).To(MatchError(tc.wantErr))
				return
			}
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(got.Name).To(Equal(tc.want))
		})
	}
}

func TestSelectEarliestReady(t *testing.T) {
	g := NewWithT(t)
	deleting := newTenant("a-deleting", "cs-1", 1)
	deleting.DeletionTimestamp = &metav1.Time{Time: t0}
	tie1, tie2 := newTenant("tie-b", "cs-1", 5), newTenant("tie-a", "cs-1", 5)

	g.Expect(SelectEarliestReady(nil)).To(BeNil())
	g.Expect(SelectEarliestReady([]tenantv1alpha1.Tenant{newTenant("x", "cs-1", 0)})).To(BeNil())
	g.Expect(SelectEarliestReady([]tenantv1alpha1.Tenant{deleting, tie1}).Name).To(Equal("tie-b"))
	// Ties go to the smaller name, whatever the order.
	g.Expect(SelectEarliestReady([]tenantv1alpha1.Tenant{tie1, tie2}).Name).To(Equal("tie-a"))
	g.Expect(SelectEarliestReady([]tenantv1alpha1.Tenant{tie2, tie1}).Name).To(Equal("tie-a"))
	g.Expect(SelectEarliestReady([]tenantv1alpha1.Tenant{tie1, newTenant("z", "cs-1", 4)}).Name).To(Equal("z"))
}

func TestKubeconfigSecret(t *testing.T) {
	g := NewWithT(t)
	tn := newTenant("t1", "cs-1", 1)
	name, key := KubeconfigSecret(&tn)
	g.Expect(name).To(Equal("vc-t1"))
	g.Expect(key).To(Equal("config"))
	tn.Status.KubeconfigSecretRef = &tenantv1alpha1.KubeconfigSecretReference{Name: "exported"}
	name, key = KubeconfigSecret(&tn)
	g.Expect(name).To(Equal("exported"))
	g.Expect(key).To(Equal("config"))
	tn.Status.KubeconfigSecretRef.Key = "value"
	_, key = KubeconfigSecret(&tn)
	g.Expect(key).To(Equal("value"))
}

const kubeconfigTemplate = `apiVersion: v1
kind: Config
current-context: vc
clusters:
- name: vc
  cluster:
    server: SERVER
    certificate-authority-data: Y2E=
contexts:
- name: vc
  context: {cluster: vc, user: vc}
users:
- name: vc
  user:
USER
`

func kubeconfig(server, user string) []byte {
	s := kubeconfigTemplate
	s = replace(s, "SERVER", server)
	s = replace(s, "USER", user)
	return []byte(s)
}

func replace(s, old, repl string) string { return strings.Replace(s, old, repl, 1) }

func TestRESTConfig(t *testing.T) {
	tn := newTenant("t1", "cs-1", 1)
	token := "    token: s3cr3t-token"
	cases := []struct {
		name     string
		config   []byte
		wantHost string
		wantErr  bool
	}{
		{"localhost rewritten", kubeconfig("https://localhost:8443", token), "https://t1.ns.svc:443", false},
		{"LOCALHOST rewritten", kubeconfig("https://LOCALHOST:8443", token), "https://t1.ns.svc:443", false},
		{"loopback IP kept", kubeconfig("https://127.0.0.1:8443", token), "https://127.0.0.1:8443", false},
		{"service name kept", kubeconfig("https://t1.ns.svc:443", token), "https://t1.ns.svc:443", false},
		{"localhost-like name kept", kubeconfig("https://localhost.example.com", token), "https://localhost.example.com", false},
		{"http refused", kubeconfig("http://10.0.0.1:8080", token), "", true},
		{"exec refused", kubeconfig("https://10.0.0.1", "    exec: {apiVersion: client.authentication.k8s.io/v1, command: /bin/sh}"), "", true},
		{"token file refused", kubeconfig("https://10.0.0.1", "    tokenFile: /var/run/secrets/kubernetes.io/serviceaccount/token"), "", true},
		{"client cert file refused", kubeconfig("https://10.0.0.1", "    client-certificate: /etc/x.crt\n    client-key: /etc/x.key"), "", true},
		{"not YAML", []byte("{{{"), "", true},
		{"empty", nil, "", true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			cfg, err := RESTConfig(tc.config, &tn, ConfigOptions{Timeout: 7 * time.Second})
			if tc.wantErr {
				g.Expect(err).To(MatchError(ErrKubeconfigInvalid))
				g.Expect(err.Error()).NotTo(ContainSubstring("s3cr3t"))
				return
			}
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(cfg.Host).To(Equal(tc.wantHost))
			g.Expect(cfg.Timeout).To(Equal(7 * time.Second))
			g.Expect(cfg.BearerToken).To(Equal("s3cr3t-token"))
		})
	}

	g := NewWithT(t)
	insecure := []byte(replace(string(kubeconfig("https://10.0.0.1", token)), "certificate-authority-data: Y2E=", "insecure-skip-tls-verify: true"))
	_, err := RESTConfig(insecure, &tn, ConfigOptions{})
	g.Expect(err).To(MatchError(ErrKubeconfigInvalid))
	_, err = RESTConfig(insecure, &tn, ConfigOptions{AllowInsecureTLS: true})
	g.Expect(err).NotTo(HaveOccurred())
}

func TestClientsCache(t *testing.T) {
	g := NewWithT(t)
	built := 0
	clients := NewClients(func(*rest.Config, *http.Client) (client.Client, error) {
		built++
		return fake.NewClientBuilder().Build(), nil
	})
	loads := 0
	load := func() (*rest.Config, error) { loads++; return &rest.Config{Host: "https://x"}, nil }
	key := types.NamespacedName{Namespace: "ns", Name: "t1"}
	v1 := SecretVersion{UID: "u1", ResourceVersion: "1", Key: "config"}

	c1, err := clients.Get(key, v1, load)
	g.Expect(err).NotTo(HaveOccurred())
	c2, err := clients.Get(key, v1, load)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(c2).To(BeIdenticalTo(c1))
	g.Expect(loads).To(Equal(1))

	// An updated Secret, a recreated one, or another key each build a new client.
	for i, v := range []SecretVersion{
		{UID: "u1", ResourceVersion: "2", Key: "config"},
		{UID: "u2", ResourceVersion: "2", Key: "config"},
		{UID: "u2", ResourceVersion: "2", Key: "other"},
	} {
		c, err := clients.Get(key, v, load)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(c).NotTo(BeIdenticalTo(c1))
		g.Expect(clients.Builds()).To(Equal(2 + i))
	}
	// Another tenant has its own entry.
	_, err = clients.Get(types.NamespacedName{Namespace: "ns", Name: "t2"}, v1, load)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(built).To(Equal(5))

	clients.Forget(key)
	_, err = clients.Get(key, SecretVersion{UID: "u2", ResourceVersion: "2", Key: "other"}, load)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(built).To(Equal(6))

	// Load errors are returned and nothing is cached.
	boom := errors.New("boom")
	_, err = clients.Get(types.NamespacedName{Name: "t3"}, v1, func() (*rest.Config, error) { return nil, boom })
	g.Expect(err).To(MatchError(boom))
	g.Expect(built).To(Equal(6))
}
