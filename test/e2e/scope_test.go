package e2e

import (
	"archive/tar"
	"compress/gzip"
	"context"
	"errors"
	"io"
	"net/http"
	"path"
	"strings"
	"testing"
	"time"

	"github.com/fluxcd/pkg/apis/meta"
	sourcev1 "github.com/fluxcd/source-controller/api/v1"
	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kubeoperav1alpha1 "github.com/kubeopera/kubeopera-operator/api/kubeopera/v1alpha1"
	"github.com/kubeopera/kubeopera-operator/controllers/app"
	"github.com/kubeopera/kubeopera-operator/internal/apptest"
	"github.com/kubeopera/kubeopera-operator/internal/render"
)

// TestFluxTenantScope: apps of two tenants (CloudSpaces) share one repository, as the operator
// allows with --app-allow-shared-repositories, and the repository also holds a file no app
// wrote. The artifact the real source-controller builds for each app's GitRepository (the
// tarball its storage serves, which kustomize-controller downloads) holds only that app's
// folder: not the folder of the other tenant, not the folder of the app whose name starts with
// this one's ("web-2" next to "web"), not the file at the root. Two GitRepositories the test
// writes itself show that the check can fail: one without sparseCheckout and one whose
// directory lacks the trailing "/" both hold files of other apps.
func TestFluxTenantScope(t *testing.T) {
	g := NewWithT(t)
	g.SetDefaultEventuallyTimeout(90 * time.Second)
	g.SetDefaultEventuallyPollingInterval(250 * time.Millisecond)
	ctx := context.Background()
	e := startEnv(t, g, apptest.FluxOptions{}, func(o *app.Options) { o.AllowSharedRepositories = true })

	const repo = "shared-apps"
	_, err := e.git.PushOutsideCommit(repo, "main", "README.md", "apps of every tenant\n")
	g.Expect(err).NotTo(HaveOccurred())
	nsA := e.cloudSpace(g, "tenant-a", "cs-a")
	nsB := e.cloudSpace(g, "tenant-b", "cs-b")
	apps := []*kubeoperav1alpha1.KubeOperaApp{
		e.app(nsA, "web", "tenant-a", "cs-a", repo, func(a *kubeoperav1alpha1.KubeOperaApp) { a.Spec.TargetNamespace = "a-web" }),
		e.app(nsA, "web-2", "tenant-a", "cs-a", repo, func(a *kubeoperav1alpha1.KubeOperaApp) { a.Spec.TargetNamespace = "a-web-2" }),
		e.app(nsB, "web", "tenant-b", "cs-b", repo, func(a *kubeoperav1alpha1.KubeOperaApp) { a.Spec.TargetNamespace = "b-web" }),
	}
	for _, a := range apps {
		g.Expect(e.host.Client.Create(ctx, a)).To(Succeed())
	}
	for _, a := range apps {
		waitSynced(g, e.host, a.Namespace, a.Name)
	}
	head, err := e.git.Head(repo, "main")
	g.Expect(err).NotTo(HaveOccurred())

	for _, a := range apps {
		folder := render.Path(a, render.DefaultPathPrefix)
		files := artifactFiles(g, e.tenant.Client, render.FluxNamespace(a), render.FluxName(a), head)
		g.Expect(files).To(ContainElement(folder+"/deployment.yaml"), "the app's own folder is in its artifact")
		g.Expect(outside(files, folder)).To(BeEmpty(), "files of %s/%s's artifact outside its folder %s", a.Namespace, a.Name, folder)
	}

	// The check can fail: the whole repository, and a directory without its "/".
	web := apps[0]
	for name, sparse := range map[string][]string{"unscoped": nil, "unslashed": {render.Path(web, render.DefaultPathPrefix)}} {
		gr := &sourcev1.GitRepository{
			ObjectMeta: metav1.ObjectMeta{Namespace: "flux-system", Name: name},
			Spec: sourcev1.GitRepositorySpec{
				URL:            web.Spec.Git.URL,
				Interval:       metav1.Duration{Duration: 10 * time.Second},
				Reference:      &sourcev1.GitRepositoryRef{Branch: "main"},
				SecretRef:      &meta.LocalObjectReference{Name: render.GitSecretName(web)},
				SparseCheckout: sparse,
			},
		}
		g.Expect(e.tenant.Client.Create(ctx, gr)).To(Succeed())
		files := artifactFiles(g, e.tenant.Client, "flux-system", name, head)
		g.Expect(outside(files, render.Path(web, render.DefaultPathPrefix))).To(ContainElement(render.Path(apps[1], render.DefaultPathPrefix)+"/deployment.yaml"), "%s holds web-2's folder", name)
		if sparse == nil {
			g.Expect(outside(files, render.Path(web, render.DefaultPathPrefix))).To(ContainElements("README.md", render.Path(apps[2], render.DefaultPathPrefix)+"/deployment.yaml"), name)
		}
	}
	g.Expect(e.flux.Exited()).To(Succeed())
}

// artifactFiles waits until the GitRepository's artifact is of the commit head and returns the
// regular files of the tarball source-controller serves for it.
func artifactFiles(g Gomega, c client.Client, ns, name, head string) []string {
	var artifact *meta.Artifact
	g.Eventually(func(g Gomega) {
		gr := &sourcev1.GitRepository{}
		g.Expect(c.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, gr)).To(Succeed())
		g.Expect(gr.Status.Artifact).NotTo(BeNil(), "%s/%s has no artifact: %v", ns, name, gr.Status.Conditions)
		g.Expect(gr.Status.Artifact.Revision).To(Equal("main@sha1:" + head))
		artifact = gr.Status.Artifact
	}).Should(Succeed())
	req, err := http.NewRequestWithContext(context.Background(), http.MethodGet, artifact.URL, nil)
	g.Expect(err).NotTo(HaveOccurred())
	resp, err := http.DefaultClient.Do(req)
	g.Expect(err).NotTo(HaveOccurred())
	defer func() { _ = resp.Body.Close() }()
	g.Expect(resp.StatusCode).To(Equal(http.StatusOK))
	gz, err := gzip.NewReader(resp.Body)
	g.Expect(err).NotTo(HaveOccurred())
	var files []string
	tr := tar.NewReader(gz)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		g.Expect(err).NotTo(HaveOccurred())
		if h.Typeflag == tar.TypeReg {
			files = append(files, path.Clean(h.Name))
		}
	}
	return files
}

// outside returns the files not inside folder.
func outside(files []string, folder string) []string {
	var out []string
	for _, f := range files {
		if !strings.HasPrefix(f, folder+"/") {
			out = append(out, f)
		}
	}
	return out
}
