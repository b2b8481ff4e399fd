package chaos

import (
	"path/filepath"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	coordinationv1 "k8s.io/api/coordination/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kubeopera/kubeopera-operator/test/testenv"
)

// Leader election timings of the failover test (production: 15s, 10s, 2s).
const (
	failoverLease   = 4 * time.Second
	failoverRenew   = 3 * time.Second
	failoverRetry   = 500 * time.Millisecond
	failoverLeaseNS = "chaos-failover"
)

// TestFailover runs two manager processes with leader election on, SIGKILLs the leader once the
// install has begun (the fake Controller saw its first request), and checks that the other one
// takes the Lease within the lease duration plus one retry period (the dead leader renewed at
// most a retry period before the kill; the standby tries every retry period), and that it
// finishes the install without a duplicate side effect (each CA imported by exactly one POST).
func TestFailover(t *testing.T) {
	ctx := t.Context()
	g := NewWithT(t)
	g.SetDefaultEventuallyTimeout(3 * time.Minute)
	g.SetDefaultEventuallyPollingInterval(50 * time.Millisecond)
	ns := failoverLeaseNS
	password := "failover-bootstrap"
	cp, f := sampleWithController(g, ns, password, host.Client)
	defer f.Close()
	dir := t.TempDir()
	args := controlPlaneArgs(f.URL(),
		"--leader-elect", "--leader-election-namespace="+ns,
		"--leader-elect-lease-duration="+failoverLease.String(),
		"--leader-elect-renew-deadline="+failoverRenew.String(),
		"--leader-elect-retry-period="+failoverRetry.String(),
	)
	credentialSecrets := createCredentials(ctx, g, host.Client, cp, password)

	holder := func() string {
		l := &coordinationv1.Lease{}
		if err := host.Client.Get(ctx, types.NamespacedName{Namespace: ns, Name: "iofog.operator"}, l); err != nil || l.Spec.HolderIdentity == nil {
			return ""
		}
		return *l.Spec.HolderIdentity
	}
	// The first process becomes the leader before the second one starts.
	a, err := StartManager(managerBin, kubeconfig, filepath.Join(dir, "a.log"), args...)
	g.Expect(err).NotTo(HaveOccurred())
	defer a.Kill()
	for _, log := range []string{filepath.Join(dir, "a.log"), filepath.Join(dir, "b.log")} {
		t.Cleanup(func() {
			if report := testenv.RaceReport(log); report != "" {
				t.Errorf("the manager's race detector reported in %s:\n%s", log, report)
			}
		})
	}
	g.Eventually(holder).ShouldNot(BeEmpty(), "process A takes the Lease (log %s)", a.Log)
	leaderA := holder()
	b, err := StartManager(managerBin, kubeconfig, filepath.Join(dir, "b.log"), args...)
	g.Expect(err).NotTo(HaveOccurred())
	defer b.Kill()

	g.Expect(host.Client.Create(ctx, cp)).To(Succeed())
	g.Eventually(func() int { return len(f.Requests()) }).Should(BeNumerically(">", 0), "A starts the install")
	g.Expect(holder()).To(Equal(leaderA), "B stayed a standby while A led")
	a.Kill()
	killed := time.Now()
	g.Eventually(holder).ShouldNot(Equal(leaderA), "B takes over (log %s)", b.Log)
	takeover := time.Since(killed)
	t.Logf("failover: B took the Lease %v after A was killed (bound %v)", takeover.Round(time.Millisecond), failoverLease+failoverRetry)
	g.Expect(takeover).To(BeNumerically("<=", failoverLease+failoverRetry+time.Second),
		"within the lease duration plus a retry period (1s allowed for the 50ms poll and API latency)")

	tr := &trial{t: t, g: g, ctx: ctx, c: host.Client, ns: ns, fake: f, mgr: b, secret: watchKeySecrets(ctx, ns, credentialSecrets...)}
	defer tr.secret.stop()
	tr.expectReady()
	tr.expectSingleCAImports()
	g.Expect(b.Exited()).To(Succeed())
}
