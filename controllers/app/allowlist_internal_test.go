package app

import (
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	kubeoperav1alpha1 "github.com/kubeopera/kubeopera-operator/api/kubeopera/v1alpha1"
	"github.com/kubeopera/kubeopera-operator/internal/gitops"
	"github.com/kubeopera/kubeopera-operator/internal/testfixture"
)

func TestHostAllowed(t *testing.T) {
	g := NewWithT(t)
	for _, tc := range []struct {
		allowed  []string
		internal bool
		url      string
		want     bool
	}{
		{nil, false, "https://anything.example.org/x.git", true},
		{[]string{"git.example.com"}, false, "https://git.example.com/x.git", true},
		{[]string{"git.example.com"}, false, "ssh://git@GIT.example.com:2222/x.git", true},
		{[]string{"git.example.com"}, false, "https://git.example.com.evil.io/x.git", false},
		{[]string{"git.example.com"}, false, "http://169.254.169.254/latest", false},
		{[]string{"git.example.com:443"}, false, "https://git.example.com:8443/x.git", false},
		{[]string{"git.example.com:443"}, false, "https://git.example.com:443/x.git", true},
		{[]string{"*.svc"}, false, "https://t1.cs-1.svc:443", true},
		{[]string{"*.svc"}, false, "https://svc", false},
		{[]string{"*.svc"}, false, "https://10.0.0.1:6443", false},
		{[]string{"a.example.com", "*.svc"}, false, "https://t1.ns.svc", true},
		{[]string{"a.example.com"}, false, "::not a url", false},
		// Entries alone decide: the opening of internal hosts adds nothing to a list.
		{[]string{"git.example.com"}, true, "https://gitea/x.git", false},
		{[]string{"git.example.com"}, true, "https://10.0.0.1/x.git", false},
		// Cloud metadata endpoints: refused with an empty list, with internal hosts allowed and
		// by wildcards, reached only when named.
		{nil, false, "http://169.254.169.254/computeMetadata/v1", false},
		{nil, true, "http://169.254.169.254/computeMetadata/v1", false},
		{nil, true, "http://metadata.google.internal/computeMetadata/v1", false},
		{nil, true, "http://METADATA.google.internal./x", false},
		{nil, true, "http://metadata/computeMetadata/v1", false},
		{nil, true, "http://[fd00:ec2::254]/latest", false},
		{nil, true, "https://[fe80::1]:443/x.git", false},
		{nil, true, "https://[fe80::1%25eth0]:443/x.git", false},
		{nil, true, "http://[::ffff:169.254.169.254]/latest", false},
		{[]string{"*.internal"}, false, "http://metadata.google.internal/x", false},
		{[]string{"169.254.169.254"}, false, "http://169.254.169.254/latest", true},
		// Cluster-internal and private hosts: refused with an empty list, allowed when an entry
		// names them (exactly, by a wildcard, with a port) or with internal hosts allowed.
		{nil, false, "https://10.0.0.1:6443", false},
		{nil, true, "https://10.0.0.1:6443", true},
		{[]string{"10.0.0.1"}, false, "https://10.0.0.1:6443", true},
		{nil, false, "http://gitea:3000/org/apps.git", false},
		{[]string{"gitea:3000"}, false, "http://gitea:3000/org/apps.git", true},
		{[]string{"gitea:3000"}, false, "http://gitea:80/org/apps.git", false},
		{nil, false, "https://gitea.git.svc.cluster.local/org/apps.git", false},
		{[]string{"*.git.svc.cluster.local"}, false, "https://gitea.git.svc.cluster.local/org/apps.git", true},
		{[]string{"*.cluster.local"}, false, "https://gitea.git.svc.cluster.local/org/apps.git", true},
		{nil, true, "https://gitea.git.svc.cluster.local/org/apps.git", true},
		{nil, false, "ssh://git@[::1]:22/apps.git", false},
		{[]string{"::1"}, false, "ssh://git@[::1]:22/apps.git", true},
		{nil, false, "https:///apps.git", false},
		{nil, true, "https:///apps.git", true},
	} {
		ok, _ := hostAllowed(tc.allowed, tc.internal, tc.url)
		g.Expect(ok).To(Equal(tc.want), "%v internal=%t %s", tc.allowed, tc.internal, tc.url)
	}
}

// Each class of cluster-internal or private host, told by its form alone (nothing is resolved),
// and the public hosts that resemble them.
func TestInternalHost(t *testing.T) {
	g := NewWithT(t)
	internal := map[string][]string{
		"single-label name, resolved through the pod's search domains": {"gitea", "localhost", "kubernetes", "gitea.", "0x7f000001", "2130706433"},
		"Service name":              {"gitea.git.svc", "gitea.git.svc.", "gitea.git.svc.cluster.local", "x.cluster.local"},
		"mDNS and private-use name": {"nas.local", "git.corp.internal", "app.localhost"},
		"numeric last label":        {"127.1", "10.1", "0x7f.1", "0x7f.0x1"},
		"loopback address":          {"127.0.0.1", "127.8.9.10", "::1", "::ffff:127.0.0.1"},
		"private address":           {"10.0.0.1", "172.16.0.1", "172.31.255.255", "192.168.1.1", "fc00::1", "fd12:3456::1"},
		"CGNAT address":             {"100.64.0.1", "100.127.255.254"},
		"unspecified address":       {"0.0.0.0", "::"},
		"link-local address":        {"169.254.1.1", "fe80::1", "fe80::1%eth0"},
	}
	for class, hosts := range internal {
		for _, h := range hosts {
			g.Expect(internalHost(h)).To(BeTrue(), "%s: %s", class, h)
		}
	}
	for _, h := range []string{
		"github.com", "git.example.com", "git.example.com.", "gitlab.svc.example.com", "local.example.com",
		"8.8.8.8", "172.32.0.1", "100.128.0.1", "192.169.0.1", "2001:db8::1", "xn--p1ai.xn--p1ai", "a.b0",
	} {
		g.Expect(internalHost(h)).To(BeFalse(), h)
	}
}

// A KubeOperaApp's writer chooses spec.git.url, so by default the operator never connects to a
// cluster-internal or private Git host for it. Git servers on loopback count their requests:
// each way of writing a URL that reaches one (loopback and unspecified addresses, a single-label
// name, an IPv4-mapped address) is refused with GitHostNotAllowed, terminal, before any request
// and before anything is queued for Git; naming the host in the allow-list, or
// --app-allow-internal-git-hosts, lets the same URL through to the server.
func TestInternalGitHostsAreRefusedByDefault(t *testing.T) {
	kubeconfig := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "vc-t1"}, Data: map[string][]byte{"config": []byte(testKubeconfig)}}
	// gitServer answers every request with a 404 and counts them; it returns its port.
	gitServer := func(t *testing.T) (string, *atomic.Int64) {
		var requests atomic.Int64
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			requests.Add(1)
			http.Error(w, "no repositories here", http.StatusNotFound)
		}))
		t.Cleanup(srv.Close)
		return strings.TrimPrefix(srv.URL, "http://127.0.0.1:"), &requests
	}
	reconciler := func(t *testing.T, gitURL string) *testReconciler {
		vc := fake.NewClientBuilder().WithScheme(testScheme()).Build()
		tr := newTestReconciler(t, vc, testfixture.KubeOperaApp(testfixture.AppUID("uid-1"), testfixture.AppGitURL(gitURL)),
			testfixture.Tenant(), kubeconfig)
		tr.Options.AllowInsecureGitHTTP = true // anonymous http://, so an allowed pass reaches the server
		return tr
	}
	for host, entry := range map[string]string{
		"127.0.0.1":          "127.0.0.1",
		"localhost":          "localhost",
		"0.0.0.0":            "0.0.0.0",
		"[::]":               "::",
		"[::ffff:127.0.0.1]": "::ffff:127.0.0.1",
	} {
		t.Run(host, func(t *testing.T) {
			g := NewWithT(t)
			port, requests := gitServer(t)
			tr := reconciler(t, "http://"+host+":"+port+"/apps.git")
			a, err := tr.reconcileErr(t)
			g.Expect(errors.Is(err, reconcile.TerminalError(nil))).To(BeTrue(), "%v", err)
			g.Expect(readyReason(a)).To(Equal(kubeoperav1alpha1.ReasonGitHostNotAllowed))
			g.Expect(err.Error()).To(ContainSubstring("a cluster-internal or private host"))
			g.Expect(tr.pushes.outstanding(appKey)).To(BeFalse(), "a Git write was queued")
			g.Expect(requests.Load()).To(BeZero(), "a request reached the refused host")

			for name, open := range map[string]func(o *Options, port string){
				"named":                          func(o *Options, _ string) { o.AllowedGitHosts = []string{"git.example.com", entry} },
				"named with its port":            func(o *Options, port string) { o.AllowedGitHosts = []string{net.JoinHostPort(entry, port)} },
				"--app-allow-internal-git-hosts": func(o *Options, _ string) { o.AllowInternalGitHosts = true },
			} {
				port, requests := gitServer(t)
				gitURL := "http://" + host + ":" + port + "/apps.git"
				tr := reconciler(t, gitURL)
				open(&tr.Options, port)
				_, _ = tr.Reconcile(t.Context(), reconcile.Request{NamespacedName: appKey})
				g.Eventually(requests.Load).Should(BeNumerically(">", 0), "%s: the server was never asked", name)
				// Forget waits for the Git write to end, so nothing writes into the test's
				// directories once it returns.
				g.Expect(tr.writer.Forget(gitops.Repo{URL: gitURL})).To(Succeed())
			}
		})
	}
}

// Every class of cluster-internal or private Git host that cannot be served on loopback is
// refused the same way, through a pass: GitHostNotAllowed, terminal, and no clone is made. A
// short pass deadline bounds the connection attempt if the check were ever skipped.
func TestInternalGitHostClassesAreRefusedByDefault(t *testing.T) {
	kubeconfig := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "vc-t1"}, Data: map[string][]byte{"config": []byte(testKubeconfig)}}
	for _, gitURL := range []string{
		"https://gitea/org/apps.git",
		"ssh://git@gitea.:22/org/apps.git",
		"https://gitea.git.svc/org/apps.git",
		"https://gitea.git.svc.cluster.local/org/apps.git",
		"https://git.local/org/apps.git",
		"https://git.corp.internal/org/apps.git",
		"https://git.localhost/org/apps.git",
		"https://127.1/org/apps.git",
		"https://10.1.2.3/org/apps.git",
		"https://172.20.0.5/org/apps.git",
		"https://192.168.1.10/org/apps.git",
		"https://100.64.0.10/org/apps.git",
		"https://[fd00::10]/org/apps.git",
		"https://[fe80::1%25eth0]/org/apps.git",
	} {
		t.Run(gitURL, func(t *testing.T) {
			g := NewWithT(t)
			vc := fake.NewClientBuilder().WithScheme(testScheme()).Build()
			tr := newTestReconciler(t, vc, testfixture.KubeOperaApp(testfixture.AppGitURL(gitURL)),
				testfixture.Tenant(), kubeconfig)
			tr.Options.PassTimeout = 2 * time.Second
			a, err := tr.reconcileErr(t)
			g.Expect(errors.Is(err, reconcile.TerminalError(nil))).To(BeTrue(), "%v", err)
			g.Expect(readyReason(a)).To(Equal(kubeoperav1alpha1.ReasonGitHostNotAllowed))
			clones, err := os.ReadDir(tr.Options.GitCacheDir)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(clones).To(BeEmpty(), "a clone was started")
		})
	}
}

// The vCluster server allow-list defaults to the cluster's Services: the exported localhost
// server, replaced by https://<tenant>.<namespace>.svc:443, and a fully qualified Service name
// pass; a loopback address or an external name in a kubeconfig is VClusterServerNotAllowed,
// terminal, and no client is built for it. Naming the server lets it through.
func TestVClusterServersDefaultToClusterServices(t *testing.T) {
	pass := func(t *testing.T, server string, allowed []string) (*testReconciler, *kubeoperav1alpha1.KubeOperaApp, error) {
		t.Helper()
		kubeconfig := strings.Replace(testKubeconfig, "https://localhost:8443", server, 1)
		unreachable := fake.NewClientBuilder().WithScheme(testScheme()).Build()
		tr := newTestReconciler(t, unreachable, testfixture.KubeOperaApp(), testfixture.Tenant(),
			&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "vc-t1"}, Data: map[string][]byte{"config": []byte(kubeconfig)}})
		if allowed != nil {
			tr.Options.AllowedVClusterServers = allowed
		}
		tr.Options.AllowedGitHosts = []string{"git.invalid"} // stop at the Git step, after the vCluster
		a, err := tr.reconcileErr(t)
		return tr, a, err
	}
	for server, host := range map[string]string{
		"https://localhost:8443":          "https://t1.ns.svc:443",
		"https://t1.ns.svc:443":           "https://t1.ns.svc:443",
		"https://t1.ns.svc.cluster.local": "https://t1.ns.svc.cluster.local",
	} {
		t.Run(server, func(t *testing.T) {
			g := NewWithT(t)
			tr, a, _ := pass(t, server, nil)
			g.Expect(readyReason(a)).To(Equal(kubeoperav1alpha1.ReasonGitHostNotAllowed), "the vCluster step passed")
			g.Expect(tr.configs).To(HaveLen(1))
			g.Expect(tr.configs[0].Host).To(Equal(host))
		})
	}
	for _, server := range []string{"https://127.0.0.1:6443", "https://vcluster.example.com", "https://10.0.0.1:443"} {
		t.Run(server, func(t *testing.T) {
			g := NewWithT(t)
			tr, a, err := pass(t, server, nil)
			g.Expect(errors.Is(err, reconcile.TerminalError(nil))).To(BeTrue(), "%v", err)
			g.Expect(readyReason(a)).To(Equal(kubeoperav1alpha1.ReasonVClusterServerNotAllowed))
			g.Expect(err.Error()).To(ContainSubstring("is not in --app-allowed-vcluster-servers (*.svc,*.svc.cluster.local)"))
			g.Expect(tr.configs).To(BeEmpty(), "a client was built for the refused server")

			u, _ := url.Parse(server)
			tr, a, _ = pass(t, server, []string{u.Hostname()})
			g.Expect(readyReason(a)).To(Equal(kubeoperav1alpha1.ReasonGitHostNotAllowed), "named: the vCluster step passed")
			g.Expect(tr.configs).To(HaveLen(1))
		})
	}
}
