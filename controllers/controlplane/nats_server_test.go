package controlplane_test

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/nats-io/jwt/v2"
	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/nats-io/nkeys"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	datasancev3 "github.com/kubeopera/kubeopera-operator/api/datasance/v3"
	"github.com/kubeopera/kubeopera-operator/controllers/controlplane"
	"github.com/kubeopera/kubeopera-operator/internal/testfixture"
)

// The real NATS server (the 3.9 line's nats-server v2.15) runs what the operator rendered: two
// pods of StatefulSet nats with the mounted server.conf, certificates, creds and JWT bundle, the
// image's wrapper around each (natsPods). It starts without a configuration error; every port
// answers with the TLS the operator intended, verified with the CAs it issued against the SANs it
// chose; JetStream runs with the rendered limits, domain and encryption key; the hub system
// user's creds connect; the two servers route to each other. An application account the
// Controller adds reaches the servers through the bundle, and its stream survives an operator
// restart with a rollout, and a ControlPlane deleted and created again on the kept data.
func TestRealNatsServer(t *testing.T) {
	h, m := newNatsHarness(t)
	g := h.g
	pods := h.startRealNats()

	// Routes, and JetStream as rendered.
	jsk := string(h.secret("nats-jetstream-key-" + cpName).Data["jsk"])
	for _, p := range pods.pods {
		g.Expect(p.srv.NumRoutes()).To(BeNumerically(">=", 1), "%s routes to its peer", p.name)
		g.Expect(p.srv.Name()).To(Equal(p.name), "server_name from $SELFNAME")
		js := p.srv.JetStreamConfig()
		g.Expect(js).NotTo(BeNil(), "JetStream enabled")
		g.Expect(js.MaxStore).To(Equal(int64(10_000_000_000)))
		g.Expect(js.MaxMemory).To(Equal(int64(1_000_000_000)))
		g.Expect(js.Domain).To(Equal(h.ns))
		g.Expect(p.opts.JetStreamKey).To(Equal(jsk), "encrypted with the key of the Secret")
		g.Expect(p.opts.JetStreamCipher).To(Equal(server.ChaCha))
	}
	// The key reaches the servers from its Secret only: server.conf names it, and no ConfigMap
	// of the namespace (readable with view, and by the Controller's ServiceAccount) holds it.
	g.Expect(h.configMap("iofog-nats-config").Data["server.conf"]).To(MatchRegexp(`(?m)^\s*key: \$JETSTREAM_KEY$`))
	var configMaps corev1.ConfigMapList
	g.Expect(env.Client.List(h.ctx, &configMaps, client.InNamespace(h.ns))).To(Succeed())
	g.Expect(configMaps.Items).NotTo(BeEmpty())
	for _, cm := range configMaps.Items {
		for k, v := range cm.Data {
			g.Expect(v).NotTo(ContainSubstring(jsk), "ConfigMap %s key %s holds the JetStream key", cm.Name, k)
		}
	}
	h.checkNatsListeners(pods)

	// The system user: connects, and both servers answer its server ping.
	sys := pods.sysConn(pods.pods[0])
	g.Expect(natsPingServers(sys)).To(ConsistOf("nats-0", "nats-1"))
	sys.Close()
	_, err := nats.Connect(pods.pods[0].clientURL())
	g.Expect(err).To(HaveOccurred(), "no anonymous clients: operator mode")

	// The Controller gives an application NATS access: it adds the account to the bundle, the
	// kubelet updates the pods' volume, the wrappers mirror and push it.
	app, stream := h.applicationStream(m, pods)
	h.expectNotOnDisk(pods, []byte("ping-1"))

	// The operator restarts (a new process: nothing in memory) and reconciles; then the pods roll.
	h.restartOperator()
	bundle := h.configMap(jwtBundle).ResourceVersion
	h.mustBeReady()
	h.mustBeReady()
	g.Expect(h.configMap(jwtBundle).ResourceVersion).To(Equal(bundle), "the operator never writes the bundle")
	g.Expect(pods.restart()).To(BeEmpty(), "no account to purge after a rollout")
	expectStream(t, pods.pods[1], app, stream, "ping-2")

	// The ControlPlane is deleted (the garbage collector takes what it owns, the pods go with
	// the StatefulSet) and created again: the new pods run on the kept PVCs, key and bundle.
	old := h.get()
	g.Expect(env.Client.Delete(h.ctx, old)).To(Succeed())
	h.collectGarbage(old.UID)
	pods.stop()
	h.bringUpNats(h.controlPlane(testfixture.WithNATS(), testfixture.WithNATSReplicas(2)))
	g.Expect(pods.start()).To(BeEmpty(), "the application's account is still in the bundle")
	expectStream(t, pods.pods[0], app, stream, "ping-2")
	g.Expect(string(h.secret("nats-jetstream-key-" + cpName).Data["jsk"])).To(Equal(jsk))
}

// The NATS image reloads server.conf and the certificates when the kubelet updates their
// volumes (docs/controlplane.md#nats-reloads), so the operator rolls no pod for them. A scale-up
// from 2 to 3 renews both server certificates with the new SANs and adds a route: the
// StatefulSet's pod template does not change; the two running servers, reloading the updated
// files, present the renewed certificates and route to the new pod, which starts with them. The
// kubelet's updates and the wrapper's watches are the real ones' (nats_kubelet_test.go): an
// update of the config volume alone makes the servers reload the new routes. A
// new NATS address changes leafnodes.advertise, which nats-server refuses to reload (the running
// server keeps the old one): the pod template changes, and the pods roll.
func TestNatsReloadsWithoutARollout(t *testing.T) {
	h, _ := newNatsHarness(t)
	g := h.g
	h.controllerWritesToKubernetes()
	h.bringUpNats(h.controlPlane(testfixture.WithNATS(), testfixture.WithNATSReplicas(2)))
	h.createNatsPVCs(2)
	pods := h.newNatsPods(2)
	g.Expect(pods.start()).To(BeEmpty())
	before := h.statefulSet()
	g.Expect(before.Spec.Template.Annotations).To(HaveKey(controlplane.AnnotationNatsConfigHash))
	oldSite := h.certificate("nats-site-server")
	running := []*server.Server{pods.pods[0].srv, pods.pods[1].srv}

	h.updateAndRollOut(func(cp *datasancev3.ControlPlane) { cp.Spec.Replicas.Nats = ptr.To(int32(3)) })
	sts := h.statefulSet()
	g.Expect(*sts.Spec.Replicas).To(Equal(int32(3)))
	g.Expect(sts.Spec.Template).To(Equal(before.Spec.Template), "no rollout")
	site, mqtt := h.certificate("nats-site-server"), h.certificate("nats-mqtt-server")
	g.Expect(site.SerialNumber).NotTo(Equal(oldSite.SerialNumber), "renewed")
	g.Expect(site.DNSNames).To(ContainElement("nats-2.nats-headless"))

	third := pods.add()
	for _, p := range pods.pods[:2] {
		// The kubelet updates each volume on its own schedule; the config volume comes first
		// here. That update alone makes the wrapper reload the server, which takes the new route.
		g.Expect(p.opts.Routes).To(HaveLen(1), "%s routes to its one peer", p.name)
		r := pods.kubeletSync(p, "nats-config")
		g.Expect(r.causes).To(Equal([]string{"ssl"}), "%s: server.conf lies in the TLS directory the wrapper watches", p.name)
		g.Expect(r.reloadErr).NotTo(HaveOccurred(), "%s reloads the new routes", p.name)
		g.Expect(p.opts.Routes).To(HaveLen(2), "%s routes to both peers", p.name)
		// Then the certificates.
		r = pods.kubeletSync(p)
		g.Expect(r.causes).To(Equal([]string{"ssl"}))
		g.Expect(r.reloadErr).NotTo(HaveOccurred(), "%s reloads the renewed certificates", p.name)
	}
	pods.startPod(third)
	g.Eventually(func() []int {
		var routes []int
		for _, p := range pods.pods {
			routes = append(routes, p.srv.NumRoutes())
		}
		return routes
	}).WithTimeout(20*time.Second).WithPolling(20*time.Millisecond).Should(HaveEach(BeNumerically(">=", 2)), "every pod routed to the other two")
	siteCA, localCA := certPool(h, "nats-site-ca"), certPool(h, "default-nats-local-ca")
	clientSecret := h.secret("nats-site-server")
	clientCert, err := tls.X509KeyPair(clientSecret.Data["tls.crt"], clientSecret.Data["tls.key"])
	g.Expect(err).NotTo(HaveOccurred())
	for i, p := range pods.pods {
		if i < 2 {
			g.Expect(p.srv).To(BeIdenticalTo(running[i]), "%s was not restarted", p.name)
		}
		for name, port := range map[string]int{"cluster": p.ports.cluster, "leaf": p.ports.leaf} {
			cert := tlsDial(g, port, &tls.Config{RootCAs: siteCA, ServerName: p.name + ".nats-headless", Certificates: []tls.Certificate{clientCert}, MinVersion: tls.VersionTLS12})
			g.Expect(cert.SerialNumber).To(Equal(site.SerialNumber), "%s %s presents the renewed certificate", p.name, name)
		}
		cert := tlsDial(g, p.ports.mqtt, &tls.Config{RootCAs: localCA, ServerName: "nats-server." + h.ns + ".svc.cluster.local", MinVersion: tls.VersionTLS12})
		g.Expect(cert.SerialNumber).To(Equal(mqtt.SerialNumber), "%s mqtt presents the renewed certificate", p.name)
	}

	// A new address: a setting nats-server does not reload. The pass that rolls the pods waits
	// for the rollout; the pass after it is ready.
	h.setServiceAddress("nats", "192.0.2.41")
	h.rollOut()
	h.mustBeReady()
	g.Expect(h.statefulSet().Spec.Template.Annotations[controlplane.AnnotationNatsConfigHash]).
		NotTo(Equal(before.Spec.Template.Annotations[controlplane.AnnotationNatsConfigHash]), "the pods roll")
	g.Expect(pods.kubeletSync(pods.pods[0]).reloadErr).To(MatchError(ContainSubstring("config reload not supported")),
		"a reload would leave the old advertise address in force")
}

// startRealNats brings a ControlPlane with two NATS replicas to ready, with a Controller that
// writes the JWT bundle, and starts its two pods on the real nats-server (natsPods); nothing is
// purged on a first start.
func (h *harness) startRealNats() *natsPods {
	h.t.Helper()
	h.controllerWritesToKubernetes()
	h.bringUpNats(h.controlPlane(testfixture.WithNATS(), testfixture.WithNATSReplicas(2)))
	h.createNatsPVCs(2)
	pods := h.newNatsPods(2)
	h.g.Expect(pods.start()).To(BeEmpty(), "nothing to purge on a first start")
	return pods
}

// applicationStream is the Controller giving an application NATS access (its account added to the
// bundle, which the kubelet updates and the wrappers mirror and push) and the application storing
// three messages in a file stream. It returns the account and the stream's name.
func (h *harness) applicationStream(m natsMaterial, pods *natsPods) (appAccount, string) {
	h.t.Helper()
	app := h.addAppAccount(m, "sensors", 1)
	h.g.Expect(pods.bundleChanged()).To(BeEmpty())
	pods.jetStreamAccount(app)
	nc := connectAs(h.t, pods.pods[0], app, "sensor-1")
	defer nc.Close()
	return app, createStream(h.t, nc, "readings", "ping-0", "ping-1", "ping-2")
}

// checkNatsListeners dials every port of each pod with the TLS the operator intended: client
// plain (operator-mode auth), monitor plain HTTP with the probe's health endpoint, cluster and
// leaf TLS first with mutual verification under nats-site-ca, MQTT TLS first under
// default-nats-local-ca; each certificate carries the expected SANs.
func (h *harness) checkNatsListeners(pods *natsPods) {
	h.t.Helper()
	g := h.g
	siteCA, localCA := certPool(h, "nats-site-ca"), certPool(h, "default-nats-local-ca")
	site := h.secret("nats-site-server")
	clientCert, err := tls.X509KeyPair(site.Data["tls.crt"], site.Data["tls.key"])
	g.Expect(err).NotTo(HaveOccurred())
	sans := natsSANs(h.ns, 2, natsLBIP)
	for _, p := range pods.pods {
		headless := p.name + ".nats-headless"
		for name, port := range map[string]int{"cluster": p.ports.cluster, "leaf": p.ports.leaf} {
			cert := tlsDial(g, port, &tls.Config{RootCAs: siteCA, ServerName: headless, Certificates: []tls.Certificate{clientCert}, MinVersion: tls.VersionTLS12})
			g.Expect(cert.DNSNames).To(Equal(sans), "%s %s", p.name, name)
			g.Expect(cert.Issuer.CommonName).To(Equal("nats-site-ca"))
			g.Expect(tlsHandshakeFails(port, &tls.Config{RootCAs: siteCA, ServerName: headless, MinVersion: tls.VersionTLS12})).
				To(BeTrue(), "%s %s requires a client certificate (verify: true)", p.name, name)
		}
		mqtt := tlsDial(g, p.ports.mqtt, &tls.Config{RootCAs: localCA, ServerName: "nats-server." + h.ns + ".svc.cluster.local", MinVersion: tls.VersionTLS12})
		g.Expect(mqtt.DNSNames).To(Equal(sans))
		g.Expect(mqtt.Issuer.CommonName).To(Equal("default-nats-local-ca"))
		g.Expect(tlsHandshakeFails(p.ports.mqtt, &tls.Config{RootCAs: siteCA, ServerName: headless, MinVersion: tls.VersionTLS12})).
			To(BeTrue(), "the MQTT certificate is not the site CA's")

		req, err := http.NewRequestWithContext(h.ctx, http.MethodGet, "http://127.0.0.1:"+strconv.Itoa(p.ports.monitor)+"/healthz?js-enabled-only=true", nil)
		g.Expect(err).NotTo(HaveOccurred())
		resp, err := http.DefaultClient.Do(req)
		g.Expect(err).NotTo(HaveOccurred())
		_ = resp.Body.Close()
		g.Expect(resp.StatusCode).To(Equal(http.StatusOK), "%s: the probe's health check", p.name)
	}
}

// restartOperator replaces the reconciler by a new one with the same wiring and nothing in
// memory, as a restarted operator process.
func (h *harness) restartOperator() {
	h.r = &controlplane.Reconciler{
		Client: h.r.Client, Options: h.r.Options, Recorder: h.r.Recorder,
		NewControllerClient: h.r.NewControllerClient, KeyGenerator: h.r.KeyGenerator,
	}
}

// expectNotOnDisk checks that no file of the pods' JetStream stores holds plain.
func (h *harness) expectNotOnDisk(pods *natsPods, plain []byte) {
	h.t.Helper()
	files := 0
	for _, p := range pods.pods {
		store := p.path(p.env["NATS_JETSTREAM_STORE_DIR"])
		h.g.Expect(filepath.WalkDir(store, func(path string, d os.DirEntry, err error) error {
			if err != nil || d.IsDir() {
				return err
			}
			data, err := os.ReadFile(path)
			files++
			h.g.Expect(bytes.Contains(data, plain)).To(BeFalse(), "%s holds the message in clear", path)
			return err
		})).To(Succeed())
	}
	h.g.Expect(files).To(BeNumerically(">", 0))
}

func certPool(h *harness, caSecret string) *x509.CertPool {
	pool := x509.NewCertPool()
	h.g.Expect(pool.AppendCertsFromPEM(h.secret(caSecret).Data["tls.crt"])).To(BeTrue())
	return pool
}

// tlsDial opens a TLS connection to a loopback port with no plaintext first (handshake_first)
// and returns the server's certificate.
func tlsDial(g Gomega, port int, cfg *tls.Config) *x509.Certificate {
	conn, err := dialTLS(port, cfg)
	g.ExpectWithOffset(1, err).NotTo(HaveOccurred(), "TLS to port %d", port)
	defer conn.Close()
	return conn.ConnectionState().PeerCertificates[0]
}

// dialTLS opens a TLS connection with cfg to a loopback port, handshake included, within 5 s.
func dialTLS(port int, cfg *tls.Config) (*tls.Conn, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	d := &tls.Dialer{NetDialer: &net.Dialer{}, Config: cfg}
	conn, err := d.DialContext(ctx, "tcp", "127.0.0.1:"+strconv.Itoa(port))
	if err != nil {
		return nil, err
	}
	return conn.(*tls.Conn), nil
}

// tlsHandshakeFails reports whether a TLS connection with cfg is refused; with TLS 1.3 a missing
// client certificate shows on the first read.
func tlsHandshakeFails(port int, cfg *tls.Config) bool {
	conn, err := dialTLS(port, cfg)
	if err != nil {
		return true
	}
	defer conn.Close()
	_ = conn.SetReadDeadline(time.Now().Add(5 * time.Second))
	_, err = conn.Read(make([]byte, 1))
	var netErr net.Error
	return err != nil && (!errors.As(err, &netErr) || !netErr.Timeout())
}

// natsPingServers asks every server for itself over the system account and returns their names.
func natsPingServers(sys *nats.Conn) []string {
	inbox := nats.NewInbox()
	sub, err := sys.SubscribeSync(inbox)
	if err != nil {
		return nil
	}
	defer func() { _ = sub.Unsubscribe() }()
	if err := sys.PublishRequest("$SYS.REQ.SERVER.PING", inbox, nil); err != nil {
		return nil
	}
	var names []string
	for len(names) < 2 {
		msg, err := sub.NextMsg(5 * time.Second)
		if err != nil {
			break
		}
		var resp struct {
			Server struct {
				Name string `json:"name"`
			} `json:"server"`
		}
		if json.Unmarshal(msg.Data, &resp) == nil {
			names = append(names, resp.Server.Name)
		}
	}
	return names
}

// connectAs connects to pod p as a new user of account a (issued with the account's key, as
// the Controller issues application users).
func connectAs(t *testing.T, p *natsPod, a appAccount, user string) *nats.Conn {
	t.Helper()
	g := NewWithT(t)
	kp, err := nkeys.CreateUser()
	g.Expect(err).NotTo(HaveOccurred())
	pub, err := kp.PublicKey()
	g.Expect(err).NotTo(HaveOccurred())
	claims := jwt.NewUserClaims(pub)
	claims.Name = user
	token, err := claims.Encode(a.key)
	g.Expect(err).NotTo(HaveOccurred())
	seed, err := kp.Seed()
	g.Expect(err).NotTo(HaveOccurred())
	nc, err := nats.Connect(p.clientURL(), nats.UserJWTAndSeed(token, string(seed)))
	g.Expect(err).NotTo(HaveOccurred(), "user %s of %s connects to %s", user, a.name, p.name)
	return nc
}

// createStream creates a file stream in the connection's account and stores msgs.
func createStream(t *testing.T, nc *nats.Conn, name string, msgs ...string) string {
	t.Helper()
	g := NewWithT(t)
	js, err := jetstream.New(nc)
	g.Expect(err).NotTo(HaveOccurred())
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	_, err = js.CreateStream(ctx, jetstream.StreamConfig{Name: name, Subjects: []string{name + ".>"}, Storage: jetstream.FileStorage})
	g.Expect(err).NotTo(HaveOccurred())
	for i, msg := range msgs {
		_, err := js.Publish(ctx, name+"."+strconv.Itoa(i), []byte(msg))
		g.Expect(err).NotTo(HaveOccurred())
	}
	return name
}

// expectStream checks, as a new user of a on pod p, that the stream holds its messages and the
// last one is last.
func expectStream(t *testing.T, p *natsPod, a appAccount, name, last string) {
	t.Helper()
	g := NewWithT(t)
	nc := connectAs(t, p, a, "reader")
	defer nc.Close()
	js, err := jetstream.New(nc)
	g.Expect(err).NotTo(HaveOccurred())
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var s jetstream.Stream
	g.Eventually(func() error { s, err = js.Stream(ctx, name); return err }).WithTimeout(15*time.Second).WithPolling(50*time.Millisecond).
		Should(Succeed(), "stream %s of %s exists", name, a.name)
	info, err := s.Info(ctx)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(info.State.Msgs).To(Equal(uint64(3)))
	msg, err := s.GetLastMsgForSubject(ctx, name+".>")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(string(msg.Data)).To(Equal(last))
}
