package chaos

import (
	"path/filepath"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	coordinationv1 "k8s.io/api/coordination/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/leaderelection"

	"github.com/kubeopera/kubeopera-operator/test/testenv"
)

// Leader election timings of the failover test (production: 15s, 10s, 2s).
const (
	failoverLease   = 4 * time.Second
	failoverRenew   = 3 * time.Second
	failoverRetry   = 500 * time.Millisecond
	failoverLeaseNS = "chaos-failover"
)

// failoverBound is the longest a standby may take to hold the Lease after the leader dies, as
// client-go's leader election (k8s.io/client-go/tools/leaderelection/leaderelection.go) works:
//   - a standby tries the Lease in acquire through wait.JitterUntilWithContext with the retry
//     period and JitterFactor (1.2), so two of its attempts are up to 2.2 retry periods apart;
//   - isLeaseValid counts the lease duration from observedTime, the moment the standby last saw
//     the record change, not from the renewTime the leader wrote.
//
// The leader's last renewal (before the kill) is seen by the standby up to one attempt gap later,
// the lease runs out a lease duration after that, and the standby's next attempt comes up to one
// gap after that: lease duration plus two gaps. The last second is for the API calls (the
// attempts slide by their own duration) and this test's 50ms poll of the Lease.
var failoverBound = failoverLease + 2*time.Duration(float64(failoverRetry)*(1+leaderelection.JitterFactor)) + time.Second

// TestFailover runs two manager processes with leader election on, SIGKILLs the leader once the
// install has begun (the fake Controller saw its first request), and checks that the other one
// takes the Lease within failoverBound and finishes the install without a duplicate side effect
// (each CA imported by exactly one POST).
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
	t.Logf("failover: B took the Lease %v after A was killed (bound %v)", takeover.Round(time.Millisecond), failoverBound)
	g.Expect(takeover).To(BeNumerically("<=", failoverBound),
		"within the lease duration plus two of the standby's jittered attempt gaps (failoverBound)")

	tr := &trial{t: t, g: g, ctx: ctx, c: host.Client, ns: ns, fake: f, mgr: b, secret: watchKeySecrets(ctx, ns, credentialSecrets...)}
	defer tr.secret.stop()
	tr.expectReady()
	tr.expectSingleCAImports()
	g.Expect(b.Exited()).To(Succeed())
}
