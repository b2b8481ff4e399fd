package controllers_test

import (
	"context"
	"net/http"
	"strings"
	"sync"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kubeopera/kubeopera-operator/controllers/controlplane"
	"github.com/kubeopera/kubeopera-operator/internal/testfixture"
)

// cacheScopeObjects creates, before the manager starts, what assertCacheScope looks for: an
// unrelated and an owned ConfigMap, and a user Secret with labels and annotations.
func cacheScopeObjects(ctx context.Context, g Gomega, c client.Client) {
	g.Expect(c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: scopeNS}})).To(Succeed())
	owned := controlplane.OwnedLabels()
	for _, obj := range []client.Object{
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: scopeNS, Name: "unrelated"}},
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: scopeNS, Name: "owned", Labels: owned}},
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: scopeNS, Name: "user", Labels: map[string]string{"team": "a"},
			Annotations: map[string]string{"note": "x"}}, Data: map[string][]byte{"password": []byte("p")}},
	} {
		g.Expect(c.Create(ctx, obj)).To(Succeed())
	}
}

const scopeNS = "cache-scope"

// assertCacheScope: the manager's cache holds only what the operator owns — an unrelated
// ConfigMap is not cached, a labelled one is; Secrets are cached as trimmed metadata only. (Called
// from TestManagerStartsWithoutTenantCRD: controller names are unique per process, so the tests
// of this package start one manager.)
func assertCacheScope(ctx context.Context, g Gomega, c cache.Cache) {
	g.Eventually(func() error {
		return c.Get(ctx, client.ObjectKey{Namespace: scopeNS, Name: "owned"}, &corev1.ConfigMap{})
	}, 30*time.Second, 100*time.Millisecond).Should(Succeed())
	err := c.Get(ctx, client.ObjectKey{Namespace: scopeNS, Name: "unrelated"}, &corev1.ConfigMap{})
	g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "an unrelated ConfigMap is cached: %v", err)

	meta := &metav1.PartialObjectMetadata{}
	meta.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("Secret"))
	g.Eventually(func() error {
		return c.Get(ctx, client.ObjectKey{Namespace: scopeNS, Name: "user"}, meta)
	}, 30*time.Second, 100*time.Millisecond).Should(Succeed())
	g.Expect(meta.UID).NotTo(BeEmpty())
	g.Expect(meta.ResourceVersion).NotTo(BeEmpty())
	g.Expect(meta.Labels).To(BeEmpty())
	g.Expect(meta.Annotations).To(BeEmpty())
	g.Expect(meta.ManagedFields).To(BeEmpty())
}

// scopeRequests counts the manager's requests by "<METHOD> <path>?<query>".
var scopeRequests = &requestLog{}

type requestLog struct {
	mu   sync.Mutex
	seen []string
}

func (l *requestLog) wrap(rt http.RoundTripper) http.RoundTripper {
	return roundTripperFunc(func(req *http.Request) (*http.Response, error) {
		l.mu.Lock()
		l.seen = append(l.seen, req.Method+" "+req.URL.Path+"?"+req.URL.RawQuery)
		l.mu.Unlock()
		return rt.RoundTrip(req)
	})
}

// count is the number of requests whose "<METHOD> <path>?<query>" starts with prefix and
// contains every one of parts.
func (l *requestLog) count(prefix string, parts ...string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
next:
	for _, r := range l.seen {
		if !strings.HasPrefix(r, prefix) {
			continue
		}
		for _, p := range parts {
			if !strings.Contains(r, p) {
				continue next
			}
		}
		n++
	}
	return n
}

type roundTripperFunc func(*http.Request) (*http.Response, error)

func (f roundTripperFunc) RoundTrip(req *http.Request) (*http.Response, error) { return f(req) }

// assertSecretScope: Secrets are never listed or watched cluster-wide, nor in a namespace that
// holds no ControlPlane or app (scopeNS: the user Secret above was read from the API server);
// once an app appears in a namespace, that namespace's Secrets are watched and read from the
// cache (no further request).
func assertSecretScope(ctx context.Context, g Gomega, c client.Client, mgrCache cache.Cache) {
	g.Expect(scopeRequests.count("GET /api/v1/secrets")).To(BeZero(), "Secrets listed or watched cluster-wide")
	g.Expect(scopeRequests.count("GET /api/v1/namespaces/"+scopeNS+"/secrets?")).To(BeZero(),
		"Secrets of a namespace without ControlPlanes or apps listed or watched")

	const appNS = "cache-scope-apps"
	g.Expect(c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: appNS}})).To(Succeed())
	g.Expect(c.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: appNS, Name: "git"},
		Data: map[string][]byte{"password": []byte("p")}})).To(Succeed())
	g.Expect(c.Create(ctx, testfixture.KubeOperaApp(
		testfixture.AppInNamespace(appNS), testfixture.AppNamed("a"), testfixture.AppCloudSpace("cs"),
		testfixture.AppTenant(""), testfixture.AppExampleWorkload("a"), testfixture.AppGitURL("https://git.example.com/apps.git"),
	))).To(Succeed())
	g.Eventually(func() int {
		return scopeRequests.count("GET /api/v1/namespaces/"+appNS+"/secrets?", "watch=true")
	}, 30*time.Second, 100*time.Millisecond).Should(BeNumerically(">=", 1), "the app's namespace is not watched")

	meta := &metav1.PartialObjectMetadata{}
	meta.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("Secret"))
	g.Eventually(func() error {
		return mgrCache.Get(ctx, client.ObjectKey{Namespace: appNS, Name: "git"}, meta)
	}, 30*time.Second, 100*time.Millisecond).Should(Succeed())
	// Once the namespace's informer synced, a read costs no request.
	g.Eventually(func(g Gomega) {
		before := scopeRequests.count("GET /api/v1/namespaces/" + appNS + "/secrets/git")
		g.Expect(mgrCache.Get(ctx, client.ObjectKey{Namespace: appNS, Name: "git"}, meta)).To(Succeed())
		g.Expect(scopeRequests.count("GET /api/v1/namespaces/"+appNS+"/secrets/git")).To(Equal(before),
			"a Secret of a watched namespace was read from the API server")
	}, 30*time.Second, 100*time.Millisecond).Should(Succeed())
	g.Expect(meta.UID).NotTo(BeEmpty())
}
