package chaos

import (
	"github.com/kubeopera/kubeopera-operator/test/testenv"
)

// StartManager runs bin with args against the cluster of kubeconfig; its output is appended to
// logPath (a restarted manager keeps one log). Proxy and namespace variables of the test's
// environment are not passed on.
func StartManager(bin, kubeconfig, logPath string, args ...string) (*testenv.Process, error) {
	env := append(testenv.Environ("HTTP_PROXY", "HTTPS_PROXY", "NO_PROXY", "WATCH_NAMESPACE", "KUBECONFIG", "CONTROLLER_ENDPOINT_TEMPLATE"),
		"KUBECONFIG="+kubeconfig)
	return testenv.StartProcess(bin, args, logPath, testenv.ProcessOptions{Env: env, Append: true})
}
