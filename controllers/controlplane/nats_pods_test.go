package controlplane_test

import (
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"

	"github.com/kubeopera/kubeopera-operator/test/testenv"
)

// natsPods runs the pods of StatefulSet nats as real nats-servers in this process, on loopback:
// what the kubelet would mount (the pod template's Secret, ConfigMap and js-data volumes) is
// written from the API server into one directory tree per pod, the rendered server.conf is read
// by the server's own ProcessConfigFile with its absolute paths moved into that tree, and the
// image's wrapper (nats_wrapper_test.go) runs around each server. A pod's js-data directory is
// its PVC: it outlives the pod, a restart and the ControlPlane.
//
// Two things the test bed cannot give are rewritten, and only they: the listen addresses (each
// port of the pod moves to a free loopback port) and the cluster routes (the pods dial
// nats-<i>.nats-headless, which only the cluster's DNS resolves, so each route points at the
// peer's loopback port; the peer's certificate is still verified against that name, which is
// what the server does for a route given by host name, and all pods present the one
// nats-site-server certificate).
type natsPods struct {
	h    *harness
	pods []*natsPod
}

// natsPod is one pod nats-<i>.
type natsPod struct {
	name string
	// root is the pod's file system; root/pvc is its js-data PVC.
	root  string
	ports natsPodPorts
	srv   *server.Server
	opts  *server.Options
	// env is the container's literal environment (paths as the image reads them).
	env map[string]string
}

// natsServerLog keeps the warnings and errors a nats-server logs.
type natsServerLog struct {
	pod  string
	mu   sync.Mutex
	kept []string
}

func (l *natsServerLog) add(level, format string, v ...any) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.kept = append(l.kept, l.pod+" "+level+" "+fmt.Sprintf(format, v...))
}

func (l *natsServerLog) lines() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.kept...)
}

func (l *natsServerLog) Noticef(string, ...any)         {}
func (l *natsServerLog) Debugf(string, ...any)          {}
func (l *natsServerLog) Tracef(string, ...any)          {}
func (l *natsServerLog) Warnf(format string, v ...any)  { l.add("[WRN]", format, v...) }
func (l *natsServerLog) Errorf(format string, v ...any) { l.add("[ERR]", format, v...) }
func (l *natsServerLog) Fatalf(format string, v ...any) { l.add("[FTL]", format, v...) }

// jetStreamAccount waits until every pod's server has account a with JetStream enabled: a
// server enables JetStream for an account when the account's JWT reaches it, and a stream the
// cluster places on a server that has not done so yet cannot create its store.
func (c *natsPods) jetStreamAccount(a appAccount) {
	c.h.t.Helper()
	c.h.g.Eventually(func(g Gomega) {
		for _, p := range c.pods {
			acc, err := p.srv.LookupAccount(a.pub)
			g.Expect(err).NotTo(HaveOccurred(), "%s knows account %s", p.name, a.name)
			g.Expect(acc.JetStreamEnabled()).To(BeTrue(), "%s: JetStream enabled for account %s", p.name, a.name)
		}
	}).WithTimeout(15 * time.Second).WithPolling(20 * time.Millisecond).Should(Succeed())
}

// natsPodPorts are the loopback ports standing in for a pod's five container ports.
type natsPodPorts struct{ client, cluster, leaf, mqtt, monitor int }

// newNatsPods prepares n pods with their PVC directories and free ports.
func (h *harness) newNatsPods(n int) *natsPods {
	h.t.Helper()
	ports, err := testenv.FreePorts(5 * n)
	h.g.Expect(err).NotTo(HaveOccurred())
	c := &natsPods{h: h}
	for i := range n {
		p := ports[5*i:]
		c.pods = append(c.pods, &natsPod{
			name:  "nats-" + strconv.Itoa(i),
			root:  h.t.TempDir(),
			ports: natsPodPorts{client: p[0], cluster: p[1], leaf: p[2], mqtt: p[3], monitor: p[4]},
		})
	}
	h.t.Cleanup(c.stop)
	return c
}

// add prepares one more pod (nats-<n>, a new PVC directory, free ports) without starting it: a
// scale-up.
func (c *natsPods) add() *natsPod {
	h := c.h
	h.t.Helper()
	ports, err := testenv.FreePorts(5)
	h.g.Expect(err).NotTo(HaveOccurred())
	p := &natsPod{
		name:  "nats-" + strconv.Itoa(len(c.pods)),
		root:  h.t.TempDir(),
		ports: natsPodPorts{client: ports[0], cluster: ports[1], leaf: ports[2], mqtt: ports[3], monitor: ports[4]},
	}
	c.pods = append(c.pods, p)
	return p
}

// startPod starts one pod alone (the StatefulSet adding a pod): mounts, the wrapper's JWT
// mirror, nats-server.
func (c *natsPods) startPod(p *natsPod) {
	h := c.h
	h.t.Helper()
	c.mount(p, h.statefulSet())
	_, err := mirrorJWTBundle(p.path(p.env["NATS_JWT_MOUNT_DIR"]), p.path(p.env["NATS_JWT_DIR"]))
	h.g.Expect(err).NotTo(HaveOccurred())
	p.opts = c.options(p)
	srv, err := server.NewServer(p.opts)
	h.g.Expect(err).NotTo(HaveOccurred(), "%s: the rendered server.conf", p.name)
	p.srv = srv
	srv.Start()
	h.g.Expect(srv.ReadyForConnections(10*time.Second)).To(BeTrue(), "%s accepts connections", p.name)
}

// wrapperReaction is what the image's wrapper did after the kubelet updated volumes of a running
// pod.
type wrapperReaction struct {
	// causes are the watches that fired (wrapperCauses); none: the server was left alone.
	causes []string
	// reloadErr is nats-server's answer to the reload, when there was one.
	reloadErr error
	// purged are the accounts the JetStream purge removed (after a "jwt").
	purged []string
}

// kubeletSync is the kubelet updating the volumes of running pod p from the StatefulSet's
// template (those named in volumes, when any are: the kubelet updates each volume on its own
// schedule) and the image's wrapper reacting as its server mode does (docs/controlplane.md#nats-reloads):
// on any watch that fires it reloads nats-server (SIGHUP); after a change of the JWT bundle it
// first mirrors the bundle into the resolver directory, then pushes the accounts' claims and
// purges.
func (c *natsPods) kubeletSync(p *natsPod, volumes ...string) wrapperReaction {
	h := c.h
	h.t.Helper()
	r := wrapperReaction{causes: p.wrapperCauses(c.mount(p, h.statefulSet(), volumes...))}
	if len(r.causes) == 0 {
		return r
	}
	jwt := slices.Contains(r.causes, "jwt")
	if jwt {
		_, err := mirrorJWTBundle(p.path(p.env["NATS_JWT_MOUNT_DIR"]), p.path(p.env["NATS_JWT_DIR"]))
		h.g.Expect(err).NotTo(HaveOccurred())
	}
	r.reloadErr = c.reloadServer(p)
	if jwt {
		sys := c.sysConn(p)
		h.g.Expect(pushClaims(sys, p.path(p.env["NATS_JWT_DIR"]))).To(Succeed())
		sys.Close()
		r.purged = c.purge(p)
	}
	return r
}

// reloadServer is the wrapper's SIGHUP to pod p's nats-server: the server takes over what the
// mounted files say now, or refuses the reload and keeps running as it was.
func (c *natsPods) reloadServer(p *natsPod) error {
	c.h.t.Helper()
	opts := c.options(p)
	// nats-server's reload compares the old and new options field by field with
	// reflect.DeepEqual, the account resolvers included; the new directory resolver's expiry
	// goroutine already locks the resolver's mutex, which the comparison reads: a data race
	// inside nats-server that the race detector reports. Both resolvers are the same directory
	// with the same settings (the mounted server.conf names them), so the running one stays and
	// the new one is closed; the server still reloads its resolver directory (Reload).
	c.h.g.Expect(opts.AccountResolver).To(BeAssignableToTypeOf(p.opts.AccountResolver))
	opts.AccountResolver.Close()
	opts.AccountResolver = p.opts.AccountResolver
	if err := p.srv.ReloadOptions(opts); err != nil {
		return err
	}
	p.opts = opts
	return nil
}

// path is an absolute path of the pod's file system in the test's tree.
func (p *natsPod) path(abs string) string { return filepath.Join(p.root, "fs", abs) }

// clientURL is the pod's client port.
func (p *natsPod) clientURL() string { return "nats://127.0.0.1:" + strconv.Itoa(p.ports.client) }

// start starts every pod as the StatefulSet would: the kubelet mounts, the wrapper mirrors the
// JWT bundle, nats-server starts; once the servers are routed and JetStream has a meta leader,
// each wrapper purges the accounts its resolver directory lacks. It returns what was purged.
func (c *natsPods) start() []string {
	h := c.h
	h.t.Helper()
	sts := h.statefulSet()
	for _, p := range c.pods {
		c.mount(p, sts)
		_, err := mirrorJWTBundle(p.path(p.env["NATS_JWT_MOUNT_DIR"]), p.path(p.env["NATS_JWT_DIR"]))
		h.g.Expect(err).NotTo(HaveOccurred())
		p.opts = c.options(p)
		srv, err := server.NewServer(p.opts)
		h.g.Expect(err).NotTo(HaveOccurred(), "%s: the rendered server.conf", p.name)
		if os.Getenv("CP_TEST_LOG") != "" {
			srv.ConfigureLogger()
		} else {
			// The server's warnings and errors, shown when the test fails: the JetStream API
			// answers a failed stream creation with a generic error and logs the cause only.
			log := &natsServerLog{pod: p.name}
			srv.SetLoggerV2(log, false, false, false)
			h.t.Cleanup(func() {
				if h.t.Failed() {
					for _, l := range log.lines() {
						h.t.Log(l)
					}
				}
			})
		}
		p.srv = srv
		srv.Start()
	}
	for _, p := range c.pods {
		h.g.Expect(p.srv.ReadyForConnections(10*time.Second)).To(BeTrue(), "%s accepts connections", p.name)
	}
	h.g.Eventually(func() []int {
		var routes []int
		for _, p := range c.pods {
			routes = append(routes, p.srv.NumRoutes())
		}
		return routes
	}).WithTimeout(20*time.Second).WithPolling(20*time.Millisecond).Should(HaveEach(BeNumerically(">=", len(c.pods)-1)), "every pod routed to the others")
	h.g.Eventually(func() bool {
		for _, p := range c.pods {
			if p.srv.JetStreamIsLeader() {
				return true
			}
		}
		return false
	}).WithTimeout(30*time.Second).WithPolling(20*time.Millisecond).Should(BeTrue(), "JetStream has a meta leader")
	var purged []string
	for _, p := range c.pods {
		purged = append(purged, c.purge(p)...)
	}
	return purged
}

// stop shuts every running pod down.
func (c *natsPods) stop() {
	for _, p := range c.pods {
		if p.srv != nil {
			p.srv.Shutdown()
			p.srv.WaitForShutdown()
			p.srv = nil
		}
	}
}

// restart stops every pod and starts it again (a rollout), on the same PVCs.
func (c *natsPods) restart() []string {
	c.stop()
	return c.start()
}

// bundleChanged is the kubelet updating the JWT bundle volume of running pods and each wrapper
// reacting: mirror, reload, claims push, purge. It returns what was purged.
func (c *natsPods) bundleChanged() []string {
	h := c.h
	h.t.Helper()
	var purged []string
	for _, p := range c.pods {
		r := c.kubeletSync(p, "nats-jwt-bundle")
		h.g.Expect(r.causes).To(ContainElement("jwt"), "%s: the wrapper sees the bundle change", p.name)
		h.g.Expect(r.reloadErr).NotTo(HaveOccurred(), p.name)
		purged = append(purged, r.purged...)
	}
	return purged
}

// purge runs the wrapper's JetStream purge of pod p.
func (c *natsPods) purge(p *natsPod) []string {
	c.h.t.Helper()
	sys := c.sysConn(p)
	defer sys.Close()
	purged, err := purgeAccountsNotInResolver(sys, p.path(p.env["NATS_JETSTREAM_STORE_DIR"]), p.path(p.env["NATS_JWT_DIR"]))
	c.h.g.Expect(err).NotTo(HaveOccurred())
	return purged
}

// sysConn connects to pod p as the hub system user, with the creds the pod mounts.
func (c *natsPods) sysConn(p *natsPod) *nats.Conn {
	c.h.t.Helper()
	nc, err := nats.Connect(p.clientURL(), nats.UserCredentials(p.path(p.env["NATS_SYS_USER_CRED_PATH"])), nats.Name("wrapper"))
	c.h.g.Expect(err).NotTo(HaveOccurred(), "the system user's creds connect to %s", p.name)
	return nc
}

// mount writes what the kubelet mounts into pod p from the pod template of sts: the Secret and
// ConfigMap volumes (keys or items as files) as the kubelet's atomic writer does (writeVolume;
// only the volumes named in only, when any are), the js-data claim as the pod's PVC directory
// (kept), and the container filesystem's writable directories afresh on a start. It returns the
// file system events of the volume updates.
func (c *natsPods) mount(p *natsPod, sts *appsv1.StatefulSet, only ...string) []fsEvent {
	h := c.h
	h.t.Helper()
	spec := sts.Spec.Template.Spec
	h.g.Expect(spec.Containers).To(HaveLen(1))
	container := spec.Containers[0]
	// The container's environment as the kubelet resolves it: literal values, keys of Secrets
	// and the pod's name from the downward API.
	p.env = map[string]string{}
	for _, e := range container.Env {
		switch {
		case e.ValueFrom == nil:
			p.env[e.Name] = e.Value
		case e.ValueFrom.SecretKeyRef != nil:
			ref := e.ValueFrom.SecretKeyRef
			value, ok := h.secret(ref.Name).Data[ref.Key]
			h.g.Expect(ok).To(BeTrue(), "env %s: Secret %s has key %s", e.Name, ref.Name, ref.Key)
			p.env[e.Name] = string(value)
		case e.ValueFrom.FieldRef != nil && e.ValueFrom.FieldRef.FieldPath == "metadata.name":
			p.env[e.Name] = p.name
		default:
			h.t.Fatalf("env %s: a source the test bed does not resolve", e.Name)
		}
	}
	volumes := map[string]corev1.Volume{}
	for _, v := range spec.Volumes {
		volumes[v.Name] = v
	}
	var events []fsEvent
	for _, vm := range container.VolumeMounts {
		if len(only) > 0 && !slices.Contains(only, vm.Name) {
			continue
		}
		dir := p.path(vm.MountPath)
		v, ok := volumes[vm.Name]
		if !ok { // the claim template: the PVC
			h.g.Expect(sts.Spec.VolumeClaimTemplates[0].Name).To(Equal(vm.Name))
			h.g.Expect(os.MkdirAll(dir, 0o750)).To(Succeed())
			continue
		}
		var data map[string][]byte
		var items []corev1.KeyToPath
		switch {
		case v.Secret != nil:
			data, items = h.secret(v.Secret.SecretName).Data, v.Secret.Items
		case v.ConfigMap != nil:
			data = map[string][]byte{}
			for k, val := range h.configMap(v.ConfigMap.Name).Data {
				data[k] = []byte(val)
			}
			items = v.ConfigMap.Items
		default:
			h.t.Fatalf("volume %s: not a Secret or ConfigMap", v.Name)
		}
		files := map[string][]byte{}
		for k, v := range data {
			files[k] = v
		}
		if len(items) > 0 {
			files = map[string][]byte{}
			for _, it := range items {
				files[it.Path] = data[it.Key]
			}
		}
		written, err := writeVolume(dir, files)
		h.g.Expect(err).NotTo(HaveOccurred(), "volume %s", vm.Name)
		events = append(events, written...)
	}
	// The container's own file system: the resolver directory and the pid file's directory.
	if p.srv == nil {
		for _, d := range []string{p.env["NATS_JWT_DIR"], "/home/runner/run"} {
			h.g.Expect(os.RemoveAll(p.path(d))).To(Succeed())
			h.g.Expect(os.MkdirAll(p.path(d), 0o750)).To(Succeed())
		}
	}
	return events
}

// quotedAbsPath is the double-quoted absolute path of a path setting in server.conf (pid_file,
// store_dir, the resolver's dir, the TLS files). Other quoted values are left alone: the
// JetStream key is random base64 and may start with a slash.
var quotedAbsPath = regexp.MustCompile(`(?m)^\s*(?:pid_file|store_dir|dir|ca_file|cert_file|key_file)\s*[:=]?\s*"/[^"]*"`)

// options reads the pod's mounted server.conf with ProcessConfigFile, its paths moved into the
// pod's tree and the variables it refers to ($SELFNAME, $JETSTREAM_KEY) resolved from the pod's
// environment as the wrapper passes it on to nats-server (this process's, set here), then moves
// the listeners to the pod's loopback ports and the routes to the peers' (see natsPods).
func (c *natsPods) options(p *natsPod) *server.Options {
	h := c.h
	h.t.Helper()
	raw, err := os.ReadFile(p.path(p.env["NATS_CONF"]))
	h.g.Expect(err).NotTo(HaveOccurred())
	conf := quotedAbsPath.ReplaceAllStringFunc(string(raw), func(setting string) string {
		open := strings.IndexByte(setting, '"')
		return setting[:open] + `"` + p.path(strings.Trim(setting[open:], `"`)) + `"`
	})
	file := filepath.Join(p.root, "server.conf")
	h.g.Expect(os.WriteFile(file, []byte(conf), 0o600)).To(Succeed())
	for name, value := range p.env {
		h.t.Setenv(name, value)
	}
	opts, err := server.ProcessConfigFile(file)
	h.g.Expect(err).NotTo(HaveOccurred(), "%s: server.conf has no configuration error", p.name)

	opts.NoSigs = true
	opts.Host, opts.Port = "127.0.0.1", p.ports.client
	opts.HTTPHost, opts.HTTPPort = "127.0.0.1", p.ports.monitor
	opts.Cluster.Host, opts.Cluster.Port = "127.0.0.1", p.ports.cluster
	opts.LeafNode.Host, opts.LeafNode.Port = "127.0.0.1", p.ports.leaf
	opts.MQTT.Host, opts.MQTT.Port = "127.0.0.1", p.ports.mqtt
	var routes []*url.URL
	for _, r := range opts.Routes {
		peer := c.podOfRoute(r)
		h.g.Expect(peer).NotTo(BeNil(), "route %s names a pod", r)
		if peer == p {
			continue
		}
		routes = append(routes, &url.URL{Scheme: "nats", Host: fmt.Sprintf("127.0.0.1:%d", peer.ports.cluster)})
		opts.Cluster.TLSConfig.ServerName = r.Hostname()
	}
	opts.Routes = routes
	return opts
}

// podOfRoute is the pod a rendered route nats://nats-<i>.nats-headless:6222 points at.
func (c *natsPods) podOfRoute(r *url.URL) *natsPod {
	for _, p := range c.pods {
		if r.Hostname() == p.name+".nats-headless" && r.Port() == "6222" {
			return p
		}
	}
	return nil
}
