package fake

import (
	"encoding/json"
	"net/http"
	"time"

	"github.com/kubeopera/kubeopera-operator/internal/iofog"
)

// Default router ports the Controller applies to a missing port.
const (
	DefaultMessagingPort   = 5671
	DefaultEdgeRouterPort  = 45671
	DefaultInterRouterPort = 55671
)

// routerRow is the 200 answer to PUT /router: the stored database row.
type routerRow struct {
	ID              int             `json:"id"`
	IsEdge          bool            `json:"isEdge"`
	MessagingPort   int             `json:"messagingPort"`
	EdgeRouterPort  int             `json:"edgeRouterPort"`
	InterRouterPort int             `json:"interRouterPort"`
	Host            string          `json:"host"`
	IsDefault       bool            `json:"isDefault"`
	CreatedAt       string          `json:"createdAt"`
	UpdatedAt       string          `json:"updatedAt"`
	IofogUUID       json.RawMessage `json:"iofogUuid,omitempty"`
}

// routerView is the answer to GET /router.
type routerView struct {
	Host            string `json:"host"`
	MessagingPort   int    `json:"messagingPort"`
	EdgeRouterPort  int    `json:"edgeRouterPort"`
	InterRouterPort int    `json:"interRouterPort"`
}

// handlePutRouter upserts the default router (schema defaultRouterCreate:
// host required string, ports integers 1-65535, extra properties allowed).
func (s *Server) handlePutRouter(w http.ResponseWriter, r *http.Request, body []byte) {
	obj, ok := readObject(w, r, body)
	if !ok {
		return
	}
	host, msg := requiredString(obj, "host")
	var ports [3]int
	for i, field := range []string{"messagingPort", "edgeRouterPort", "interRouterPort"} {
		if msg != "" {
			break
		}
		ports[i], msg = port(obj, field)
	}
	if msg != "" {
		writeError(w, http.StatusBadRequest, "ValidationError", msg)
		return
	}

	rec := iofog.Router{
		Host:            host,
		MessagingPort:   orDefault(ports[0], DefaultMessagingPort),
		EdgeRouterPort:  orDefault(ports[1], DefaultEdgeRouterPort),
		InterRouterPort: orDefault(ports[2], DefaultInterRouterPort),
	}
	now := jsTime(time.Now())
	row := routerRow{
		ID: 1, MessagingPort: rec.MessagingPort, EdgeRouterPort: rec.EdgeRouterPort,
		InterRouterPort: rec.InterRouterPort, Host: rec.Host, IsDefault: true,
		CreatedAt: now, UpdatedAt: now,
	}

	s.mu.Lock()
	if s.router != nil {
		row.CreatedAt = s.routerCreatedAt
		row.IofogUUID = json.RawMessage("null")
	} else {
		s.routerCreatedAt = now
	}
	s.router = &rec
	err := s.saveLocked()
	s.mu.Unlock()
	if err != nil {
		writeError(w, http.StatusInternalServerError, "SequelizeDatabaseError", err.Error())
		return
	}

	writeJSON(w, http.StatusOK, row)
}

func (s *Server) handleGetRouter(w http.ResponseWriter) {
	rec, ok := s.Router()
	if !ok {
		writeError(w, http.StatusNotFound, "NotFoundError", "Invalid router 'default-router'")
		return
	}
	writeJSON(w, http.StatusOK, routerView(*rec))
}

// Router returns a copy of the registered default router, with the
// Controller's defaults applied, and whether one was registered.
func (s *Server) Router() (*iofog.Router, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.router == nil {
		return nil, false
	}
	r := *s.router
	return &r, true
}

// jsTime formats t like JavaScript's Date.prototype.toISOString.
func jsTime(t time.Time) string { return t.UTC().Format("2006-01-02T15:04:05.000Z") }
