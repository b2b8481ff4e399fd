package controllers

import (
	"flag"
	"io"
	"testing"
	"time"

	. "github.com/onsi/gomega"
)

// The upstream iofog-operator's flags are accepted as aliases, so its Deployment's args do not
// make the process exit 2; the ControlPlane pacing flags reach the reconciler's options.
func TestFlagsAcceptUpstreamAliasesAndControlPlanePacing(t *testing.T) {
	g := NewWithT(t)
	opts := DefaultOptions()
	fs := flag.NewFlagSet("test", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	BindFlags(fs, &opts)
	g.Expect(fs.Parse([]string{
		"--metrics-addr=:9090", "--enable-leader-election",
		"--controlplane-max-concurrent-reconciles=7", "--controlplane-pass-timeout=30s", "--controller-verify-interval=1m",
	})).To(Succeed())
	g.Expect(opts.MetricsBindAddress).To(Equal(":9090"))
	g.Expect(opts.LeaderElect).To(BeTrue())
	g.Expect(opts.ControlPlane.MaxConcurrentReconciles).To(Equal(7))
	g.Expect(opts.ControlPlane.PassTimeout).To(Equal(30 * time.Second))
	g.Expect(opts.ControlPlane.ControllerVerifyInterval).To(Equal(time.Minute))

	defaults := DefaultOptions()
	g.Expect(defaults.ControlPlane.MaxConcurrentReconciles).To(BeNumerically(">", 1))
}
