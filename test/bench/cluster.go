package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kubeopera/kubeopera-operator/internal/scheme"
	"github.com/kubeopera/kubeopera-operator/test/testenv"
)

// auditPolicy logs every request that can change state, at Metadata level (no bodies); reads and
// watches are not logged. The benchmarks count writes from this log, per user.
const auditPolicy = `apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: ["RequestReceived", "ResponseStarted"]
rules:
- level: None
  verbs: ["get", "list", "watch"]
- level: Metadata
`

// cluster is one envtest API server (real kube-apiserver + etcd) with an audit log.
type cluster struct {
	*testenv.Env
	name  string
	audit string
}

func startCluster(dir, name string, crdDirs []string) (*cluster, error) {
	if err := os.MkdirAll(dir, 0o750); err != nil {
		return nil, err
	}
	policy := filepath.Join(dir, name+"-audit-policy.yaml")
	if err := os.WriteFile(policy, []byte(auditPolicy), 0o600); err != nil {
		return nil, err
	}
	audit := filepath.Join(dir, name+"-audit.log")
	env, err := testenv.Start(testenv.Options{CRDDirs: crdDirs, APIServerFlags: map[string]string{
		"audit-policy-file": policy,
		"audit-log-path":    audit,
		// Blocking: an event is in the file before the response is sent, so a count taken after
		// a window holds every write of the window.
		"audit-log-mode": "blocking",
		// envtest's default Service range is a /24: 100 ControlPlanes need more than 256 cluster
		// IPs (a real cluster has a /12 or so).
		"service-cluster-ip-range": "10.96.0.0/16",
		// Nor do 2768 node ports suffice for 100 ControlPlanes and their floor (nothing binds
		// them: envtest has no kube-proxy).
		"service-node-port-range": "20000-60000",
	}})
	if err != nil {
		return nil, fmt.Errorf("start %s API server: %w", name, err)
	}
	return &cluster{Env: env, name: name, audit: audit}, nil
}

// kubeconfigFile writes the kubeconfig of a new cluster-admin user into dir.
func (c *cluster) kubeconfigFile(dir, user string) (string, []byte, error) {
	kc, err := c.Kubeconfig(user)
	if err != nil {
		return "", nil, err
	}
	path := filepath.Join(dir, c.name+"-"+user+".kubeconfig")
	return path, kc, os.WriteFile(path, kc, 0o600)
}

// adminConfig is the REST config of a new cluster-admin user (no file written).
func (c *cluster) adminConfig(user string) (*rest.Config, error) {
	kc, err := c.Kubeconfig(user)
	if err != nil {
		return nil, err
	}
	return clientcmd.RESTConfigFromKubeConfig(kc)
}

// kubeconfigClient is a floor's client (the operator's scheme) of the kubeconfig kc, without a
// client-side rate limit: a floor is the work at the API server's speed. (With client-go's
// default of 5 requests/s, P5's floor spent 399 s on 4,000 host reads, run of 2026-12-05 20:32.)
func kubeconfigClient(kc []byte) (client.Client, error) {
	cfg, err := clientcmd.RESTConfigFromKubeConfig(kc)
	if err != nil {
		return nil, err
	}
	cfg.QPS = -1 // no rate limiter (rest.Config: only a QPS above zero builds one)
	return client.New(cfg, client.Options{Scheme: scheme.New()})
}

// clientAndCache are a client and an informer cache (not started) of cfg, the operator's scheme.
func clientAndCache(cfg *rest.Config) (client.Client, cache.Cache, error) {
	c, err := client.New(cfg, client.Options{Scheme: scheme.New()})
	if err != nil {
		return nil, nil, err
	}
	ca, err := cache.New(cfg, cache.Options{Scheme: scheme.New()})
	return c, ca, err
}

type auditEvent struct {
	Stage string `json:"stage"`
	Verb  string `json:"verb"`
	User  struct {
		Username string `json:"username"`
	} `json:"user"`
	ObjectRef struct {
		Resource    string `json:"resource"`
		Subresource string `json:"subresource"`
	} `json:"objectRef"`
}

// writes counts the completed writes of user so far, by "verb resource[/subresource]".
func (c *cluster) writes(user string) (map[string]int, error) {
	f, err := os.Open(c.audit)
	if err != nil {
		return nil, fmt.Errorf("open audit log: %w", err)
	}
	defer func() { _ = f.Close() }()
	out := map[string]int{}
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for sc.Scan() {
		var e auditEvent
		if json.Unmarshal(sc.Bytes(), &e) != nil || e.Stage != "ResponseComplete" || e.User.Username != user {
			continue
		}
		key := e.Verb + " " + e.ObjectRef.Resource
		if e.ObjectRef.Subresource != "" {
			key += "/" + e.ObjectRef.Subresource
		}
		out[key]++
	}
	return out, sc.Err()
}

// diff returns after-before, without zero entries, and the total.
func diff(before, after map[string]int) (map[string]int, int) {
	out, total := map[string]int{}, 0
	for k, v := range after {
		if d := v - before[k]; d != 0 {
			out[k] = d
			total += d
		}
	}
	return out, total
}
