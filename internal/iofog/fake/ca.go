package fake

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"math/big"
	"net/http"
	"time"

	"github.com/kubeopera/kubeopera-operator/internal/iofog"
)

// caRecord is an imported or generated CA.
type caRecord struct {
	name      string
	subject   string
	validFrom time.Time
	validTo   time.Time
	serial    string
	certPEM   string
	keyPEM    string
}

// caView is the answer to GET /certificates/ca/{name}.
type caView struct {
	Name         string     `json:"name"`
	Subject      string     `json:"subject"`
	IsCA         bool       `json:"isCA"`
	ValidFrom    string     `json:"validFrom"`
	ValidTo      string     `json:"validTo"`
	SerialNumber string     `json:"serialNumber"`
	Data         caViewData `json:"data"`
}

type caViewData struct {
	Certificate string `json:"certificate"`
	PrivateKey  string `json:"privateKey"`
}

// caCreated is the 201 answer to POST /certificates/ca (snake_case keys).
type caCreated struct {
	Name      string `json:"name"`
	Subject   string `json:"subject"`
	Type      string `json:"type"`
	ValidFrom string `json:"valid_from"`
	ValidTo   string `json:"valid_to"`
}

func (s *Server) handleGetCA(w http.ResponseWriter, name string) {
	s.mu.Lock()
	rec, ok := s.findCA(name)
	s.mu.Unlock()
	if !ok {
		writeError(w, http.StatusNotFound, "NotFoundError", fmt.Sprintf("CA with name %s not found", name))
		return
	}
	writeJSON(w, http.StatusOK, caView{
		Name: rec.name, Subject: rec.subject, IsCA: true,
		ValidFrom: jsTime(rec.validFrom), ValidTo: jsTime(rec.validTo), SerialNumber: rec.serial,
		Data: caViewData{Certificate: rec.certPEM, PrivateKey: rec.keyPEM},
	})
}

// handleDeleteCA is DELETE /certificates/ca/{name} (src/routes/certificate.js
// of the Controller, not in the contract page): 200 with an empty body, or 404
// NotFoundError when there is no such CA. A later POST imports the Secret's
// current content again.
func (s *Server) handleDeleteCA(w http.ResponseWriter, name string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for i, rec := range s.cas {
		if rec.name == name {
			s.cas = append(s.cas[:i], s.cas[i+1:]...)
			w.WriteHeader(http.StatusOK)
			return
		}
	}
	writeError(w, http.StatusNotFound, "NotFoundError", fmt.Sprintf("CA with name %s not found", name))
}

// caCreateFields are the properties schema caCreate allows.
var caCreateFields = map[string]bool{"name": true, "type": true, "secretName": true, "subject": true, "expiration": true}

// validateCACreate applies schema caCreate and returns the first error
// message, or "".
func validateCACreate(obj map[string]any) (req iofog.CARequest, msg string) {
	for _, k := range sortedKeys(obj) {
		if !caCreateFields[k] {
			return req, notAllowedMsg(k)
		}
	}
	if req.Name, msg = requiredString(obj, "name"); msg != "" {
		return req, msg
	}
	if req.Type, msg = requiredString(obj, "type"); msg != "" {
		return req, msg
	}
	switch {
	case req.Name == "":
		return req, dumpMsg("name", "minLength", "does not meet minimum length of 1", 1)
	case len(req.Name) > 255:
		return req, dumpMsg("name", "maxLength", "does not meet maximum length of 255", 255)
	case req.Type != iofog.CATypeK8sSecret && req.Type != iofog.CATypeDirect && req.Type != iofog.CATypeSelfSigned:
		return req, dumpMsg("type", "enum", "is not one of enum values: k8s-secret,direct,self-signed",
			[]string{iofog.CATypeK8sSecret, iofog.CATypeDirect, iofog.CATypeSelfSigned})
	}
	var hasSecret, hasSubject bool
	if req.SecretName, hasSecret, msg = optionalString(obj, "secretName"); msg != "" {
		return req, msg
	}
	if req.Subject, hasSubject, msg = optionalString(obj, "subject"); msg != "" {
		return req, msg
	}
	if hasSubject && req.Subject == "" {
		return req, dumpMsg("subject", "minLength", "does not meet minimum length of 1", 1)
	}
	if v, ok := obj["expiration"]; ok {
		n, isInt := integer(v)
		switch {
		case !isInt:
			return req, typeMsg("expiration", "integer")
		case n < 0:
			return req, minimumMsg("expiration", 0)
		}
	}
	if !hasSecret && (req.Type == iofog.CATypeK8sSecret || req.Type == iofog.CATypeDirect) {
		return req, requiredMsg("secretName")
	}
	return req, ""
}

// handleCreateCA is POST /certificates/ca. Order as in the Controller:
// schema, Kubernetes check, duplicate check, reading the source Secret.
func (s *Server) handleCreateCA(w http.ResponseWriter, r *http.Request, body []byte) {
	obj, ok := readObject(w, r, body)
	if !ok {
		return
	}
	req, msg := validateCACreate(obj)
	if msg != "" {
		writeError(w, http.StatusBadRequest, "ValidationError", msg)
		return
	}

	// The record is stored under the secret name when there is one.
	key := req.Name
	if req.Type != iofog.CATypeSelfSigned && req.SecretName != "" {
		key = req.SecretName
	}
	subject := key
	if req.Type == iofog.CATypeSelfSigned && req.Subject != "" {
		subject = req.Subject
	}

	s.mu.Lock()
	defer s.mu.Unlock()
	if req.Type == iofog.CATypeK8sSecret && s.notKubernetes {
		writeError(w, http.StatusBadRequest, "ValidationError", "Controller is not running in Kubernetes environment")
		return
	}
	if _, exists := s.findCA(key); exists {
		writeError(w, s.conflictStatus, "ConflictError", fmt.Sprintf("CA with name %s already exists", key))
		return
	}
	if req.Type != iofog.CATypeSelfSigned && !s.secretKnown(req.SecretName) {
		writeError(w, http.StatusInternalServerError, "Error",
			fmt.Sprintf("Failed to get CA from Kubernetes secret: secrets %q not found", req.SecretName))
		return
	}
	rec, err := newCA(key, subject)
	if err != nil {
		writeError(w, http.StatusInternalServerError, "Error", "Failed to generate CA")
		return
	}
	s.cas = append(s.cas, rec)
	writeJSON(w, http.StatusCreated, caCreated{
		Name: rec.name, Subject: rec.subject, Type: req.Type,
		ValidFrom: jsTime(rec.validFrom), ValidTo: jsTime(rec.validTo),
	})
}

// findCA looks a CA up by name; s.mu must be held.
func (s *Server) findCA(name string) (caRecord, bool) {
	for _, rec := range s.cas {
		if rec.name == name {
			return rec, true
		}
	}
	return caRecord{}, false
}

// secretKnown reports whether a Kubernetes Secret exists; s.mu must be held.
func (s *Server) secretKnown(name string) bool {
	if s.knownSecrets == nil {
		return true
	}
	_, ok := s.knownSecrets[name]
	return ok
}

// ImportedCAs returns the names of the CAs the Controller knows, in import
// order.
func (s *Server) ImportedCAs() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	names := make([]string, len(s.cas))
	for i, rec := range s.cas {
		names[i] = rec.name
	}
	return names
}

// CAImports returns the recorded POST /certificates/ca requests whose body
// names CA name (schema-valid or not), in arrival order: what a test counts to
// check that a CA was imported exactly once per content.
func (s *Server) CAImports(name string) []Request {
	var out []Request
	for _, r := range s.RequestsTo(http.MethodPost, "/api/v3/certificates/ca") {
		var body struct {
			Name string `json:"name"`
		}
		if json.Unmarshal(r.Body, &body) == nil && body.Name == name {
			out = append(out, r)
		}
	}
	return out
}

// ImportCA adds a CA as if it had been imported earlier, without recording
// a request. It is a no-op for a name that already exists.
func (s *Server) ImportCA(name string) error {
	rec, err := newCA(name, name)
	if err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, exists := s.findCA(name); !exists {
		s.cas = append(s.cas, rec)
	}
	return nil
}

// SetKnownSecrets restricts the Kubernetes Secrets a CA import can read to
// names.
func (s *Server) SetKnownSecrets(names ...string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.knownSecrets = nameSet(names)
}

// AllowAllSecrets makes every Secret name readable again (the default).
func (s *Server) AllowAllSecrets() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.knownSecrets = nil
}

// SetConflictStatus sets the status of a duplicate CA import (500 or 409).
func (s *Server) SetConflictStatus(status int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.conflictStatus = status
}

// newCA generates a self-signed ECDSA P-256 CA standing in for the imported
// material.
func newCA(name, commonName string) (caRecord, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return caRecord{}, fmt.Errorf("generate CA key: %w", err)
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	if err != nil {
		return caRecord{}, fmt.Errorf("generate CA serial: %w", err)
	}
	now := time.Now().UTC().Truncate(time.Second)
	tmpl := &x509.Certificate{
		SerialNumber:          serial,
		Subject:               pkix.Name{CommonName: commonName},
		NotBefore:             now,
		NotAfter:              now.AddDate(5, 0, 0),
		IsCA:                  true,
		BasicConstraintsValid: true,
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign | x509.KeyUsageDigitalSignature,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, key.Public(), key)
	if err != nil {
		return caRecord{}, fmt.Errorf("create CA certificate: %w", err)
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return caRecord{}, fmt.Errorf("encode CA key: %w", err)
	}
	return caRecord{
		name:      name,
		subject:   commonName,
		validFrom: tmpl.NotBefore,
		validTo:   tmpl.NotAfter,
		serial:    serial.Text(16),
		certPEM:   string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})),
		keyPEM:    string(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER})),
	}, nil
}
