package apptest

import (
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	. "github.com/onsi/gomega"
)

// TestExitedSeesAnExitedController proves the check at the end of test/e2e TestFluxEndToEnd can fail: a
// controller process that exits while the test runs is reported, before Stop.
func TestExitedSeesAnExitedController(t *testing.T) {
	g := NewWithT(t)
	f := &Flux{LogDir: t.TempDir()}
	falseBin, err := exec.LookPath("false")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(f.run(t.Context(), falseBin, nil, nil)).To(Succeed())
	g.Eventually(f.Exited, 10*time.Second, 10*time.Millisecond).Should(MatchError(And(
		ContainSubstring("false: the process exited by itself"), ContainSubstring(filepath.Join(f.LogDir, "false.log")), ContainSubstring("exit status 1"))))
	f.Stop()

	running := &Flux{LogDir: t.TempDir()}
	sleepBin, err := exec.LookPath("sleep")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(running.run(t.Context(), sleepBin, []string{"60"}, nil)).To(Succeed())
	g.Consistently(running.Exited, 300*time.Millisecond, 50*time.Millisecond).Should(Succeed())
	running.Stop()
}
