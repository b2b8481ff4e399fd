package apptest

import (
	"os"
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
	logFile, err := os.Create(filepath.Join(f.LogDir, "false.log"))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(f.run(exec.CommandContext(t.Context(), "false"), logFile)).To(Succeed())
	g.Eventually(f.Exited, 10*time.Second, 10*time.Millisecond).Should(MatchError(ContainSubstring("false exited (see false.log): exit status 1")))
	f.Stop()

	running := &Flux{LogDir: t.TempDir()}
	logFile, err = os.Create(filepath.Join(running.LogDir, "sleep.log"))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(running.run(exec.CommandContext(t.Context(), "sleep", "60"), logFile)).To(Succeed())
	g.Consistently(running.Exited, 300*time.Millisecond, 50*time.Millisecond).Should(Succeed())
	running.Stop()
}
