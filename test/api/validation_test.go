// Package api_test checks the CRDs against a real kube-apiserver: they install, the samples are
// accepted, and every documented constraint rejects bad objects with a message naming the field.
package api_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/controller-runtime/pkg/client"

	datasancev3 "github.com/kubeopera/kubeopera-operator/api/datasance/v3"
	kubeoperav1alpha1 "github.com/kubeopera/kubeopera-operator/api/kubeopera/v1alpha1"
	"github.com/kubeopera/kubeopera-operator/test/testenv"
)

var env *testenv.Env

func TestMain(m *testing.M) {
	e, code := testenv.MainStart(testenv.Options{})
	if e == nil {
		os.Exit(code)
	}
	env = e
	code = m.Run()
	if err := env.Stop(); err != nil {
		fmt.Fprintln(os.Stderr, "stop envtest:", err)
	}
	os.Exit(code)
}

var (
	controlPlaneGVK = datasancev3.GroupVersion.WithKind("ControlPlane")
	appGVK          = kubeoperav1alpha1.GroupVersion.WithKind("KubeOperaApp")
)

func newNamespace(t *testing.T) string {
	t.Helper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "api-"}}
	if err := env.Client.Create(context.Background(), ns); err != nil {
		t.Fatalf("create namespace: %v", err)
	}
	return ns.Name
}

func TestCRDsInstalled(t *testing.T) {
	g := NewWithT(t)
	for _, name := range []string{"controlplanes.datasance.com", "kubeoperaapps.kubeopera.io", "tenants.kubeopera.io"} {
		crd := &apiextensionsv1.CustomResourceDefinition{}
		g.Expect(env.Client.Get(context.Background(), client.ObjectKey{Name: name}, crd)).To(Succeed(), name)
		established := false
		for _, c := range crd.Status.Conditions {
			if c.Type == apiextensionsv1.Established && c.Status == apiextensionsv1.ConditionTrue {
				established = true
			}
		}
		g.Expect(established).To(BeTrue(), "%s is not established", name)
	}
}

func TestSamplesAreAccepted(t *testing.T) {
	dir := filepath.Join(testenv.Root(), "config", "samples")
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[schema.GroupVersionKind]bool{}
	for _, e := range entries {
		if e.Name() == "kustomization.yaml" || !strings.HasSuffix(e.Name(), ".yaml") {
			continue
		}
		t.Run(e.Name(), func(t *testing.T) {
			g := NewWithT(t)
			data, err := os.ReadFile(filepath.Join(dir, e.Name()))
			g.Expect(err).NotTo(HaveOccurred())
			obj := &unstructured.Unstructured{}
			g.Expect(yaml.Unmarshal(data, &obj.Object)).To(Succeed())
			obj.SetNamespace(newNamespace(t))
			g.Expect(env.Client.Create(context.Background(), obj)).To(Succeed())
			seen[obj.GroupVersionKind()] = true
		})
	}
	NewWithT(t).Expect(seen).To(HaveKey(controlPlaneGVK))
	NewWithT(t).Expect(seen).To(HaveKey(appGVK))
}

func TestDefaultsApplied(t *testing.T) {
	g := NewWithT(t)
	ns := newNamespace(t)
	app := validApp()
	app.SetNamespace(ns)
	g.Expect(env.Client.Create(context.Background(), app)).To(Succeed())
	got := &kubeoperav1alpha1.KubeOperaApp{}
	g.Expect(env.Client.Get(context.Background(), client.ObjectKeyFromObject(app), got)).To(Succeed())
	g.Expect(got.Spec.Git.Branch).To(Equal("main"))
	g.Expect(got.Spec.Flux.Interval).To(Equal("1m"))
	g.Expect(got.Spec.Flux.Namespace).To(Equal("flux-system"))
	g.Expect(got.Spec.App.Replicas).To(HaveValue(BeEquivalentTo(1)))

	cp := validControlPlane()
	cp.SetNamespace(ns)
	g.Expect(env.Client.Create(context.Background(), cp)).To(Succeed())
	gotCP := &datasancev3.ControlPlane{}
	g.Expect(env.Client.Get(context.Background(), client.ObjectKeyFromObject(cp), gotCP)).To(Succeed())
	g.Expect(gotCP.Spec.Controller.ConsolePort).To(BeEquivalentTo(8008))
}

func validControlPlane() *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{
		"metadata": map[string]any{"name": "cp"},
		"spec": map[string]any{
			"auth": map[string]any{
				"mode":      "embedded",
				"bootstrap": map[string]any{"username": "admin", "password": "secret"},
			},
			"database": map[string]any{},
		},
	}}
	u.SetGroupVersionKind(controlPlaneGVK)
	return u
}

func validApp() *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{
		"metadata": map[string]any{"name": "app"},
		"spec": map[string]any{
			"cloudSpaceId": "cs-1",
			"app": map[string]any{
				"image": "nginx:1.27",
				"ports": []any{map[string]any{"name": "http", "containerPort": int64(8080)}},
			},
			"git": map[string]any{"url": "https://git.example.com/t/apps.git"},
		},
	}}
	u.SetGroupVersionKind(appGVK)
	return u
}

// set puts value at a dotted path, creating maps on the way; "[0]" segments index lists.
func set(u *unstructured.Unstructured, path string, value any) {
	parts := strings.Split(path, ".")
	var cur any = u.Object
	for i, p := range parts {
		last := i == len(parts)-1
		switch node := cur.(type) {
		case map[string]any:
			if last {
				node[p] = value
				return
			}
			if strings.HasPrefix(parts[i+1], "[") {
				cur = node[p]
				continue
			}
			next, ok := node[p].(map[string]any)
			if !ok {
				next = map[string]any{}
				node[p] = next
			}
			cur = next
		case []any:
			var idx int
			_, _ = fmt.Sscanf(p, "[%d]", &idx)
			if last {
				node[idx] = value
				return
			}
			cur = node[idx]
		}
	}
}

func del(u *unstructured.Unstructured, path string) {
	parts := strings.Split(path, ".")
	unstructured.RemoveNestedField(u.Object, parts...)
}

type invalidCase struct {
	name   string
	base   func() *unstructured.Unstructured
	mutate func(u *unstructured.Unstructured)
	// field must appear in the API server's message.
	field string
}

func TestInvalidObjectsAreRejected(t *testing.T) {
	cp, app := validControlPlane, validApp
	cases := []invalidCase{
		{"auth missing", cp, func(u *unstructured.Unstructured) { del(u, "spec.auth") }, "spec.auth"},
		{"auth mode not in enum", cp, func(u *unstructured.Unstructured) { set(u, "spec.auth.mode", "keycloak") }, "spec.auth.mode"},
		{"embedded without username", cp, func(u *unstructured.Unstructured) { del(u, "spec.auth.bootstrap.username") }, "spec.auth.bootstrap.username"},
		{"embedded without password or ref", cp, func(u *unstructured.Unstructured) { del(u, "spec.auth.bootstrap.password") }, "spec.auth.bootstrap.password"},
		{"external without issuer", cp, func(u *unstructured.Unstructured) {
			set(u, "spec.auth", map[string]any{"mode": "external", "client": map[string]any{"id": "op", "secret": "s"}})
		}, "spec.auth.issuerUrl"},
		{"external without client secret", cp, func(u *unstructured.Unstructured) {
			set(u, "spec.auth", map[string]any{"mode": "external", "issuerUrl": "https://idp.example.com", "client": map[string]any{"id": "op"}})
		}, "spec.auth.client"},
		{"issuer not a URL", cp, func(u *unstructured.Unstructured) {
			set(u, "spec.auth", map[string]any{"mode": "external", "issuerUrl": "idp", "client": map[string]any{"id": "op", "secret": "s"}})
		}, "spec.auth.issuerUrl"},
		{"session store type not in enum", cp, func(u *unstructured.Unstructured) { set(u, "spec.auth.sessionStore.type", "redis") }, "spec.auth.sessionStore.type"},
		{"nats replicas below 2", cp, func(u *unstructured.Unstructured) { set(u, "spec.replicas.nats", int64(1)) }, "spec.replicas.nats"},
		{"router not LB without address", cp, func(u *unstructured.Unstructured) { set(u, "spec.services.router.type", "ClusterIP") }, "spec.ingresses.router.address"},
		{"controller ClusterIP without ingress host", cp, func(u *unstructured.Unstructured) { set(u, "spec.services.controller.type", "ClusterIP") }, "spec.ingresses.controller.host"},
		{"controller NodePort without publicUrl", cp, func(u *unstructured.Unstructured) { set(u, "spec.services.controller.type", "NodePort") }, "spec.controller.publicUrl"},
		{"sqlite with two controller replicas", cp, func(u *unstructured.Unstructured) { set(u, "spec.replicas.controller", int64(2)) }, "spec.replicas.controller"},
		{"https without secretName", cp, func(u *unstructured.Unstructured) { set(u, "spec.controller.https", true) }, "spec.controller.secretName"},
		{"service type not in enum", cp, func(u *unstructured.Unstructured) { set(u, "spec.services.controller.type", "ExternalName") }, "spec.services.controller.type"},
		{"traffic policy not in enum", cp, func(u *unstructured.Unstructured) { set(u, "spec.services.router.externalTrafficPolicy", "Nowhere") }, "spec.services.router.externalTrafficPolicy"},
		{"nats leaf port out of range", cp, func(u *unstructured.Unstructured) { set(u, "spec.ingresses.nats.leafPort", int64(70000)) }, "spec.ingresses.nats.leafPort"},
		{"router message port negative", cp, func(u *unstructured.Unstructured) { set(u, "spec.ingresses.router.messagePort", int64(-1)) }, "spec.ingresses.router.messagePort"},
		{"console port out of range", cp, func(u *unstructured.Unstructured) { set(u, "spec.controller.consolePort", int64(70000)) }, "spec.controller.consolePort"},
		{"database port out of range", cp, func(u *unstructured.Unstructured) { set(u, "spec.database.port", int64(65536)) }, "spec.database.port"},
		{"database ca not base64", cp, func(u *unstructured.Unstructured) { set(u, "spec.database.ca", "-----BEGIN CERTIFICATE-----") }, "spec.database.ca"},
		// The Controller loads the provider module of exactly this name; a host without one runs
		// the image's SQLite default inside each pod.
		{"database provider not lower case", cp, func(u *unstructured.Unstructured) {
			set(u, "spec.database", map[string]any{"provider": "Postgres", "host": "db"})
		}, "spec.database.provider"},
		{"database provider unknown", cp, func(u *unstructured.Unstructured) {
			set(u, "spec.database", map[string]any{"provider": "mssql", "host": "db"})
		}, "spec.database.provider"},
		{"database host without provider", cp, func(u *unstructured.Unstructured) {
			set(u, "spec.database", map[string]any{"host": "db"})
		}, "spec.database.provider must be postgres or mysql when spec.database.host is set"},
		{"database host with provider sqlite", cp, func(u *unstructured.Unstructured) {
			set(u, "spec.database", map[string]any{"provider": "sqlite", "host": "db"})
		}, "spec.database.provider must be postgres or mysql when spec.database.host is set"},
		{"database provider postgres without host", cp, func(u *unstructured.Unstructured) {
			set(u, "spec.database", map[string]any{"provider": "postgres"})
		}, "spec.database.host is required when spec.database.provider is postgres or mysql"},
		{"publicUrl not a URL", cp, func(u *unstructured.Unstructured) { set(u, "spec.controller.publicUrl", "controller.example.com") }, "spec.controller.publicUrl"},
		{"vault provider not in enum", cp, func(u *unstructured.Unstructured) { set(u, "spec.vault.provider", "keepass") }, "spec.vault.provider"},
		{"jetstream size not a quantity", cp, func(u *unstructured.Unstructured) { set(u, "spec.nats.jetStream.storageSize", "ten gigs") }, "spec.nats.jetStream.storageSize"},
		{"name too long", cp, func(u *unstructured.Unstructured) { u.SetName(strings.Repeat("a", 64)) }, "metadata.name"},

		{"app without cloudSpaceId", app, func(u *unstructured.Unstructured) { del(u, "spec.cloudSpaceId") }, "spec.cloudSpaceId"},
		{"app empty image", app, func(u *unstructured.Unstructured) { set(u, "spec.app.image", "") }, "spec.app.image"},
		{"app image with spaces", app, func(u *unstructured.Unstructured) { set(u, "spec.app.image", "nginx latest") }, "spec.app.image"},
		{"app container port out of range", app, func(u *unstructured.Unstructured) { set(u, "spec.app.ports.[0].containerPort", int64(70000)) }, "spec.app.ports[0].containerPort"},
		{"app port protocol not in enum", app, func(u *unstructured.Unstructured) { set(u, "spec.app.ports.[0].protocol", "HTTP") }, "spec.app.ports[0].protocol"},
		{"app duplicate port names", app, func(u *unstructured.Unstructured) {
			set(u, "spec.app.ports", []any{
				map[string]any{"name": "http", "containerPort": int64(8080)},
				map[string]any{"name": "http", "containerPort": int64(8081)},
			})
		}, "spec.app.ports"},
		{"app negative replicas", app, func(u *unstructured.Unstructured) { set(u, "spec.app.replicas", int64(-1)) }, "spec.app.replicas"},
		{"tenantCRName not a DNS name", app, func(u *unstructured.Unstructured) { set(u, "spec.tenantCRName", "Tenant_A") }, "spec.tenantCRName"},
		{"git url with ftp scheme", app, func(u *unstructured.Unstructured) { set(u, "spec.git.url", "ftp://git.example.com/apps.git") }, "spec.git.url"},
		{"git url missing", app, func(u *unstructured.Unstructured) { del(u, "spec.git.url") }, "spec.git.url"},
		{"git path escapes with ..", app, func(u *unstructured.Unstructured) { set(u, "spec.git.path", "apps/../../etc") }, "spec.git.path"},
		{"git path absolute", app, func(u *unstructured.Unstructured) { set(u, "spec.git.path", "/apps/x") }, "spec.git.path"},
		{"git path into .git", app, func(u *unstructured.Unstructured) { set(u, "spec.git.path", ".git/hooks") }, "spec.git.path"},
		{"ingress tls without host", app, func(u *unstructured.Unstructured) {
			set(u, "spec.ingress", map[string]any{"tls": true, "clusterIssuer": "le"})
		}, "spec.ingress.host"},
		{"ingress tls without issuer", app, func(u *unstructured.Unstructured) {
			set(u, "spec.ingress", map[string]any{"tls": true, "host": "a.example.com"})
		}, "spec.ingress.clusterIssuer"},
		{"ingress without ports", app, func(u *unstructured.Unstructured) {
			del(u, "spec.app.ports")
			set(u, "spec.ingress", map[string]any{"host": "a.example.com"})
		}, "spec.app.ports"},
		{"flux interval not a duration", app, func(u *unstructured.Unstructured) { set(u, "spec.flux.interval", "soon") }, "spec.flux.interval"},
		{"target namespace not a label", app, func(u *unstructured.Unstructured) { set(u, "spec.targetNamespace", "a.b") }, "spec.targetNamespace"},
		// Every name that becomes a Kubernetes name in the rendered manifests.
		{"app name with a dot (becomes the namespace)", app, func(u *unstructured.Unstructured) { u.SetName("shop.web") }, "metadata.name must start with a lowercase letter"},
		{"app name starting with a digit (becomes the Service)", app, func(u *unstructured.Unstructured) { u.SetName("1web") }, "metadata.name must start with a lowercase letter"},
		{"app name too long", app, func(u *unstructured.Unstructured) { u.SetName(strings.Repeat("a", 64)) }, "metadata.name must be at most 63"},
		{"app port name without a letter", app, func(u *unstructured.Unstructured) { set(u, "spec.app.ports.[0].name", "8080") }, "spec.app.ports[0].name"},
		{"app port name with --", app, func(u *unstructured.Unstructured) { set(u, "spec.app.ports.[0].name", "my--http") }, "spec.app.ports[0].name"},
		{"app port name too long", app, func(u *unstructured.Unstructured) { set(u, "spec.app.ports.[0].name", "a-very-long-port-name") }, "spec.app.ports[0].name"},
		{"ingress class not a DNS name", app, func(u *unstructured.Unstructured) {
			set(u, "spec.ingress", map[string]any{"host": "a.example.com", "className": "Nginx_Public"})
		}, "spec.ingress.className"},
		{"registry Secret not a DNS name", app, func(u *unstructured.Unstructured) {
			set(u, "spec.registry", map[string]any{"secretRef": map[string]any{"name": "Pull_Secret"}})
		}, "spec.registry.secretRef.name"},
		{"flux namespace not a label", app, func(u *unstructured.Unstructured) { set(u, "spec.flux.namespace", "flux.system") }, "spec.flux.namespace"},
	}
	ns := newNamespace(t)
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			// The unmodified base must be accepted, so the rejection is caused by the mutation.
			base := tc.base()
			base.SetNamespace(ns)
			base.SetGenerateName("ok-")
			base.SetName("")
			g.Expect(env.Client.Create(context.Background(), base, client.DryRunAll)).To(Succeed())

			obj := tc.base()
			obj.SetNamespace(ns)
			tc.mutate(obj)
			err := env.Client.Create(context.Background(), obj)
			g.Expect(err).To(HaveOccurred(), "the API server accepted an invalid object")
			g.Expect(apierrors.IsInvalid(err)).To(BeTrue(), "unexpected error kind: %v", err)
			g.Expect(err.Error()).To(ContainSubstring(tc.field))
		})
	}
}

// Every database provider the Controller has, with and without a host as it needs.
func TestDatabaseProvidersAreAccepted(t *testing.T) {
	ns := newNamespace(t)
	for name, db := range map[string]map[string]any{
		"embedded SQLite":         {},
		"sqlite named":            {"provider": "sqlite"},
		"postgres":                {"provider": "postgres", "host": "postgres.db.svc", "port": int64(5432)},
		"mysql with TLS and a CA": {"provider": "mysql", "host": "mysql.db.svc", "ssl": true, "ca": "QUJD"},
	} {
		t.Run(name, func(t *testing.T) {
			obj := validControlPlane()
			obj.SetNamespace(ns)
			obj.SetGenerateName("db-")
			obj.SetName("")
			set(obj, "spec.database", db)
			NewWithT(t).Expect(env.Client.Create(context.Background(), obj, client.DryRunAll)).To(Succeed())
		})
	}
}

func TestImmutableFields(t *testing.T) {
	ns := newNamespace(t)
	cases := []struct {
		name  string
		path  string
		first any
		next  any
	}{
		{"cloudSpaceId", "spec.cloudSpaceId", "cs-1", "cs-2"},
		{"tenantCRName", "spec.tenantCRName", "tenant-a", "tenant-b"},
		{"targetNamespace", "spec.targetNamespace", "web", "web2"},
		{"fluxNamespace", "spec.flux.namespace", "flux-system", "flux-apps"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			obj := validApp()
			obj.SetNamespace(ns)
			obj.SetName("immutable-" + strings.ToLower(tc.name))
			set(obj, tc.path, tc.first)
			g.Expect(env.Client.Create(context.Background(), obj)).To(Succeed())
			set(obj, tc.path, tc.next)
			err := env.Client.Update(context.Background(), obj)
			g.Expect(err).To(HaveOccurred())
			g.Expect(apierrors.IsInvalid(err)).To(BeTrue(), "unexpected error kind: %v", err)
			g.Expect(err.Error()).To(ContainSubstring(tc.path))
		})
	}
}
