package app

import (
	"context"
	"errors"
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	kubeoperav1alpha1 "github.com/kubeopera/kubeopera-operator/api/kubeopera/v1alpha1"
	"github.com/kubeopera/kubeopera-operator/internal/testfixture"
)

// Credentials are never sent over plain http:// unless the operator runs with
// --app-allow-insecure-git-http; anonymous access over http:// is not refused (nothing to leak).
func TestCredentialsOverPlainHTTPAreRefusedByDefault(t *testing.T) {
	g := NewWithT(t)
	creds := map[string][]byte{"username": []byte("git"), "password": []byte("pw-123456")}
	r := &Reconciler{Options: Options{}.withDefaults()}
	_, err := r.gitAuth("http://git.example.com/apps.git", creds, "spec.git.secretRef")
	g.Expect(err).To(MatchError(errGitInsecureTransport))
	g.Expect(err.Error()).To(ContainSubstring("git.example.com"))
	g.Expect(err.Error()).NotTo(ContainSubstring("pw-123456"))
	_, err = r.gitAuth("http://git.example.com/apps.git", nil, "spec.git.secretRef")
	g.Expect(err).NotTo(HaveOccurred(), "anonymous")
	_, err = r.gitAuth("https://git.example.com/apps.git", creds, "spec.git.secretRef")
	g.Expect(err).NotTo(HaveOccurred())
	r.Options.AllowInsecureGitHTTP = true
	_, err = r.gitAuth("http://git.example.com/apps.git", creds, "spec.git.secretRef")
	g.Expect(err).NotTo(HaveOccurred(), "explicitly allowed")

	// Through a pass: terminal, the reason on Ready, nothing recorded or written (status.path
	// stays empty: placement is recorded right before the first write).
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "creds"}, Data: creds}
	app := testfixture.KubeOperaApp(testfixture.AppGitURL("http://git.example.com/apps.git"), testfixture.AppGitSecret("creds"))
	kubeconfig := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "vc-t1"}, Data: map[string][]byte{"config": []byte(testKubeconfig)}}
	tr := newTestReconciler(t, nil, app, secret, testfixture.Tenant(), kubeconfig)
	a, err := tr.reconcileErr(t)
	g.Expect(errors.Is(err, reconcile.TerminalError(nil))).To(BeTrue())
	g.Expect(readyReason(a)).To(Equal(kubeoperav1alpha1.ReasonGitInsecureTransport))
	g.Expect(a.Status.Path).To(BeEmpty())
}

// The repository root, dot-folders, folders outside the apps prefix and folders outside the
// app's namespace folder are refused.
func TestCheckGitPath(t *testing.T) {
	r := &Reconciler{Options: Options{}.withDefaults()}
	for p, want := range map[string]string{
		"":                      "repository root",
		".":                     "repository root",
		".github/workflows":     "dot-folder",
		"apps/.flux/web":        "dot-folder",
		"apps/ns/.hidden":       "dot-folder",
		"clusters/prod":         "not inside the apps prefix",
		"flux-system":           "not inside the apps prefix",
		"apps":                  "not inside the apps prefix",
		"appsx/web":             "not inside the apps prefix",
		"apps//web":             "not a clean",
		"apps/ns/web":           "",
		"apps/shared/web/inner": "not inside \"apps/ns/\"",
		"apps/ns-evil/web":      "not inside \"apps/ns/\"",
		"apps/ns":               "not inside \"apps/ns/\"",
		"apps/ns/web/inner":     "",
	} {
		t.Run(p, func(t *testing.T) {
			g := NewWithT(t)
			err := r.checkGitPath(p, "ns")
			if want == "" {
				g.Expect(err).NotTo(HaveOccurred())
				return
			}
			g.Expect(err).To(MatchError(errGitPathNotAllowed))
			g.Expect(err.Error()).To(ContainSubstring(want))
		})
	}
	g := NewWithT(t)
	custom := &Reconciler{Options: Options{GitPathPrefix: "/tenants/"}.withDefaults()}
	g.Expect(custom.checkGitPath("tenants/a/web", "a")).To(Succeed())
	g.Expect(custom.checkGitPath("apps/a/web", "a")).To(MatchError(errGitPathNotAllowed))
	g.Expect(custom.checkGitPath("tenants/b/web", "a")).To(MatchError(errGitPathNotAllowed))
	g.Expect(Options{}.withDefaults().GitPathPrefix).To(Equal(DefaultGitPathPrefix))
}

// The credentials of a repository's other apps: a Secret one app pushes with and another gives
// Flux is listed in both roles (read once), a Flux Secret only when declared copyable, and a
// Secret the metadata cache does not hold is skipped without a request to the API server.
func TestRepositoryCredentialsListEverySecretInEachRole(t *testing.T) {
	g := NewWithT(t)
	const url = "https://git.example.com/apps.git"
	secret := func(name string, labels map[string]string, password string) *corev1.Secret {
		return &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, Labels: labels},
			Data: map[string][]byte{"username": []byte("git"), "password": []byte(password)}}
	}
	copyableLabel := map[string]string{kubeoperav1alpha1.LabelFluxCredentials: "true"}
	appOf := func(name, push, flux string) *kubeoperav1alpha1.KubeOperaApp {
		return testfixture.KubeOperaApp(testfixture.AppNamed(name), testfixture.AppUID(types.UID("uid-"+name)), testfixture.AppGitURL(url),
			testfixture.AppGitSecret(push), testfixture.AppFluxSecret(flux))
	}
	tr := newTestReconciler(t, nil,
		secret("shared", copyableLabel, "sh4red"), secret("plain-read", nil, "r3ad"),
		appOf("pusher", "shared", "missing"), appOf("reader", "missing-too", "shared"), appOf("plain", "shared", "plain-read"))
	reads := 0
	tr.apiReader = countingReader{Reader: tr.host, gets: &reads}

	creds, err := tr.repositoryCredentials(context.Background(), appOf("self", "", ""))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(creds.push).To(HaveLen(1), "shared, once, although two apps push with it")
	g.Expect(creds.push[0].app).To(BeElementOf("ns/pusher", "ns/plain"))
	g.Expect(creds.flux).To(HaveLen(1), "shared is also a (copyable) Flux Secret; plain-read is not copyable")
	g.Expect(creds.flux[0].app).To(Equal("ns/reader"))
	g.Expect(reads).To(Equal(2), "each Secret the cache holds read once; the missing ones not at all")
}

// countingReader counts the Gets of a client.Reader.
type countingReader struct {
	client.Reader
	gets *int
}

func (c countingReader) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	*c.gets++
	return c.Reader.Get(ctx, key, obj, opts...)
}
