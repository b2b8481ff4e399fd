package chaos

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"

	"github.com/kubeopera/kubeopera-operator/test/testenv"
)

// BuildManager builds main.go, as it ships, into dir and returns the binary's path.
func BuildManager(ctx context.Context, dir string) (string, error) {
	bin := filepath.Join(dir, "kubeopera-operator")
	cmd := exec.CommandContext(ctx, "go", "build", "-o", bin, ".") //nolint:gosec // G204: the test's own directory
	cmd.Dir = testenv.Root()
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("build the manager: %w: %s", err, out)
	}
	return bin, nil
}

// errUnexpectedExit is a manager process that ended without the test killing it.
var errUnexpectedExit = errors.New("the manager exited by itself")

// Manager is one run of the manager binary as a child process.
type Manager struct {
	cmd    *exec.Cmd
	Log    string
	done   chan struct{}
	err    error
	killed bool
	mu     sync.Mutex
}

// StartManager runs bin with args against the cluster of kubeconfig; its output is appended to
// logPath. Proxy and namespace variables of the test's environment are not passed on.
func StartManager(bin, kubeconfig, logPath string, args ...string) (*Manager, error) {
	logFile, err := os.OpenFile(logPath, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o600) //nolint:gosec // G304: the test's own directory
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(bin, args...) //nolint:gosec,noctx // G204: the binary this run built; it lives until Kill or Stop
	var env []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		switch strings.ToUpper(k) {
		case "HTTP_PROXY", "HTTPS_PROXY", "NO_PROXY", "WATCH_NAMESPACE", "KUBECONFIG", "CONTROLLER_ENDPOINT_TEMPLATE":
			continue
		}
		env = append(env, kv)
	}
	cmd.Env = append(env, "KUBECONFIG="+kubeconfig)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	if err := cmd.Start(); err != nil {
		_ = logFile.Close()
		return nil, fmt.Errorf("start the manager: %w", err)
	}
	m := &Manager{cmd: cmd, Log: logPath, done: make(chan struct{})}
	go func() {
		m.err = cmd.Wait()
		_ = logFile.Close()
		close(m.done)
	}()
	return m, nil
}

// Kill sends SIGKILL and waits for the process to be gone.
func (m *Manager) Kill() {
	m.mu.Lock()
	m.killed = true
	m.mu.Unlock()
	_ = m.cmd.Process.Kill()
	<-m.done
}

// Exited reports an exit the test did not cause (nil while the process runs or after Kill).
func (m *Manager) Exited() error {
	select {
	case <-m.done:
		m.mu.Lock()
		defer m.mu.Unlock()
		if m.killed {
			return nil
		}
		if m.err == nil {
			return fmt.Errorf("%w with status 0 (log %s)", errUnexpectedExit, m.Log)
		}
		return fmt.Errorf("%w (log %s): %w", errUnexpectedExit, m.Log, m.err)
	default:
		return nil
	}
}
