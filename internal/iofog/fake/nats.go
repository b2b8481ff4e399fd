package fake

import (
	"fmt"
	"net/http"

	"github.com/kubeopera/kubeopera-operator/internal/iofog"
)

// Default NATS hub ports the Controller applies to a missing port.
const (
	DefaultServerPort  = 4222
	DefaultClusterPort = 6222
	DefaultLeafPort    = 7422
	DefaultMqttPort    = 8883
	DefaultHTTPPort    = 8222
)

// hubView is the answer to PUT and GET /nats/hub (JetStream sizes are not
// echoed).
type hubView struct {
	Host        string `json:"host"`
	ServerPort  int    `json:"serverPort"`
	ClusterPort int    `json:"clusterPort"`
	LeafPort    int    `json:"leafPort"`
	MqttPort    int    `json:"mqttPort"`
	HTTPPort    int    `json:"httpPort"`
}

func viewOfHub(h iofog.NatsHub) hubView {
	return hubView{
		Host: h.Host, ServerPort: h.ServerPort, ClusterPort: h.ClusterPort,
		LeafPort: h.LeafPort, MqttPort: h.MqttPort, HTTPPort: h.HTTPPort,
	}
}

// handlePutHub upserts the default NATS hub. The stored record is replaced
// as a whole.
func (s *Server) handlePutHub(w http.ResponseWriter, r *http.Request, body []byte) {
	obj, ok := readObject(w, r, body)
	if !ok {
		return
	}
	host, msg := requiredString(obj, "host")
	var ports [5]int
	for i, field := range []string{"serverPort", "clusterPort", "leafPort", "mqttPort", "httpPort"} {
		if msg != "" {
			break
		}
		ports[i], msg = port(obj, field)
	}
	var sizes [2]string
	for i, field := range []string{"jsStorageSize", "jsMemoryStoreSize"} {
		if msg != "" {
			break
		}
		sizes[i], msg = size(obj, field)
	}
	if msg != "" {
		writeError(w, http.StatusBadRequest, "ValidationError", msg)
		return
	}

	rec := iofog.NatsHub{
		Host:              host,
		ServerPort:        orDefault(ports[0], DefaultServerPort),
		ClusterPort:       orDefault(ports[1], DefaultClusterPort),
		LeafPort:          orDefault(ports[2], DefaultLeafPort),
		MqttPort:          orDefault(ports[3], DefaultMqttPort),
		HTTPPort:          orDefault(ports[4], DefaultHTTPPort),
		JsStorageSize:     sizes[0],
		JsMemoryStoreSize: sizes[1],
	}
	s.mu.Lock()
	s.hub = &rec
	err := s.saveLocked()
	s.mu.Unlock()
	if err != nil {
		writeError(w, http.StatusInternalServerError, "SequelizeDatabaseError", err.Error())
		return
	}
	writeJSON(w, http.StatusOK, viewOfHub(rec))
}

func (s *Server) handleGetHub(w http.ResponseWriter) {
	rec, ok := s.Hub()
	if !ok {
		writeError(w, http.StatusNotFound, "NotFoundError", "NATS hub not found")
		return
	}
	writeJSON(w, http.StatusOK, viewOfHub(*rec))
}

// Hub returns a copy of the registered NATS hub, with defaults applied, and
// whether one was registered.
func (s *Server) Hub() (*iofog.NatsHub, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.hub == nil {
		return nil, false
	}
	h := *s.hub
	return &h, true
}

// handleBootstrap is GET /nats/bootstrap: the operator of the database (created when there is
// none), its seed, the system account and the hub system user's creds.
func (s *Server) handleBootstrap(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	notKubernetes, missing := s.notKubernetes, s.bootstrapMissingSecret
	s.mu.Unlock()
	switch {
	case notKubernetes:
		writeError(w, http.StatusForbidden, "ForbiddenError",
			"NATS bootstrap is only available when the Controller runs on the Kubernetes control plane")
		return
	case missing != "":
		writeError(w, http.StatusNotFound, "NotFoundError", fmt.Sprintf("Secret with name %q not found", missing))
		return
	}
	b, err := s.ensureOperator(r.Context())
	if err != nil {
		writeError(w, http.StatusInternalServerError, "Error", err.Error())
		return
	}
	writeJSON(w, http.StatusOK, b)
}

// SetBootstrap replaces the NATS operator material of the database, e.g. with real NATS JWTs:
// GET /nats/bootstrap answers it until the next call, a rotation or the loss of the database.
func (s *Server) SetBootstrap(b iofog.NatsBootstrap) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.bootstrap = &b
	_ = s.saveLocked()
}

// Bootstrap returns what GET /nats/bootstrap answers now. On an empty database that is the
// operator material the next NATS call creates; it is created here, without the bundle write
// that call makes.
func (s *Server) Bootstrap() iofog.NatsBootstrap {
	s.mu.Lock()
	defer s.mu.Unlock()
	b, _, _ := s.ensureOperatorLocked()
	return b
}

// SetBootstrapSecretMissing makes GET /nats/bootstrap answer 404
// NotFoundError for the named Secret (the operator seed or creds Secret);
// an empty name restores the 200 answer.
func (s *Server) SetBootstrapSecretMissing(secretName string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.bootstrapMissingSecret = secretName
}

// SetKubernetesControlPlane switches CONTROL_PLANE=kubernetes (the default)
// on or off. Off, GET /nats/bootstrap answers 403 ForbiddenError and a
// k8s-secret CA import answers 400 ValidationError.
func (s *Server) SetKubernetesControlPlane(on bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.notKubernetes = !on
}
