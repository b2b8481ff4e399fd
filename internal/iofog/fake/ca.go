package fake

import (
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/kubeopera/kubeopera-operator/internal/iofog"
)

// caRecord is an imported or generated CA. signed are the certificates the
// Controller issued under it (an agent's router and NATS certificates): while
// there is one, the CA cannot be deleted.
type caRecord struct {
	name      string
	subject   string
	validFrom time.Time
	validTo   time.Time
	serial    string
	certPEM   string
	keyPEM    string
	signed    []string
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

// handleDeleteCA is DELETE /certificates/ca/{name} (the Controller's
// deleteCAEndpoint): 200 {} , or 404 NotFoundError when there is no such CA.
// A CA that has signed a certificate is refused with ValidationError "Cannot
// delete CA that has signed certificates": the route maps only 401 and 404,
// so the answer is a 500 carrying that error class. A later POST imports the
// Secret's current content again.
func (s *Server) handleDeleteCA(w http.ResponseWriter, name string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	i := slices.IndexFunc(s.cas, func(rec caRecord) bool { return rec.name == name })
	if i < 0 {
		writeError(w, http.StatusNotFound, "NotFoundError", fmt.Sprintf("CA with name %s not found", name))
		return
	}
	if signed := s.cas[i].signed; len(signed) > 0 {
		writeError(w, http.StatusInternalServerError, "ValidationError",
			"Cannot delete CA that has signed certificates. Please delete the following certificates first: "+strings.Join(signed, ", "))
		return
	}
	s.cas = slices.Delete(s.cas, i, i+1)
	if err := s.saveLocked(); err != nil {
		writeError(w, http.StatusInternalServerError, "SequelizeDatabaseError", err.Error())
		return
	}
	writeJSON(w, http.StatusOK, struct{}{})
}

// handleDeleteCertificate is DELETE /certificates/{name} (the Controller's
// deleteCertificateEndpoint): it deletes a certificate the Controller issued,
// which releases its CA. A CA name or an unknown name is 404 NotFoundError.
func (s *Server) handleDeleteCertificate(w http.ResponseWriter, name string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for i := range s.cas {
		if j := slices.Index(s.cas[i].signed, name); j >= 0 {
			s.cas[i].signed = slices.Delete(s.cas[i].signed, j, j+1)
			if err := s.saveLocked(); err != nil {
				writeError(w, http.StatusInternalServerError, "SequelizeDatabaseError", err.Error())
				return
			}
			writeJSON(w, http.StatusOK, struct{}{})
			return
		}
	}
	writeError(w, http.StatusNotFound, "NotFoundError", fmt.Sprintf("Certificate with name %s not found", name))
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
// schema, Kubernetes check, duplicate check, reading the source Secret. With
// a SecretReader a k8s-secret import stores the Secret's tls.crt and tls.key,
// as the Controller does; without one it stores a generated stand-in.
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
	notKubernetes, reader := s.notKubernetes, s.secrets
	_, exists := s.findCA(key)
	known := s.secretKnown(req.SecretName)
	conflictStatus := s.conflictStatus
	s.mu.Unlock()
	switch {
	case req.Type == iofog.CATypeK8sSecret && notKubernetes:
		writeError(w, http.StatusBadRequest, "ValidationError", "Controller is not running in Kubernetes environment")
		return
	case exists:
		writeError(w, conflictStatus, "ConflictError", fmt.Sprintf("CA with name %s already exists", key))
		return
	}

	var rec caRecord
	var err error
	switch {
	case req.Type == iofog.CATypeK8sSecret && reader != nil:
		var status int
		var name, message string
		rec, status, name, message = readCA(r.Context(), reader, key, req.SecretName)
		if status != 0 {
			writeError(w, status, name, message)
			return
		}
	case req.Type != iofog.CATypeSelfSigned && !known:
		writeError(w, http.StatusInternalServerError, "Error",
			fmt.Sprintf("Failed to get CA from Kubernetes secret: secrets %q not found", req.SecretName))
		return
	default:
		if rec, err = newCA(key, subject); err != nil {
			writeError(w, http.StatusInternalServerError, "Error", "Failed to generate CA")
			return
		}
	}

	s.mu.Lock()
	defer s.mu.Unlock()
	if _, exists := s.findCA(key); exists { // imported meanwhile
		writeError(w, s.conflictStatus, "ConflictError", fmt.Sprintf("CA with name %s already exists", key))
		return
	}
	s.cas = append(s.cas, rec)
	if err := s.saveLocked(); err != nil {
		writeError(w, http.StatusInternalServerError, "SequelizeDatabaseError", err.Error())
		return
	}
	writeJSON(w, http.StatusCreated, caCreated{
		Name: rec.name, Subject: rec.subject, Type: req.Type,
		ValidFrom: jsTime(rec.validFrom), ValidTo: jsTime(rec.validTo),
	})
}

// readCA reads the CA of Kubernetes Secret secretName through reader, as the
// Controller's getCAFromK8sSecret does: a Secret that cannot be read is a 500
// Error "Failed to get CA from Kubernetes secret", one without tls.crt or
// tls.key a 500 TypeError, a certificate that does not parse a 400
// ValidationError "Invalid certificate". status is 0 on success.
func readCA(ctx context.Context, reader SecretReader, key, secretName string) (rec caRecord, status int, name, message string) {
	data, found, err := reader(ctx, secretName)
	switch {
	case err != nil:
		return rec, http.StatusInternalServerError, "Error", "Failed to get CA from Kubernetes secret: " + err.Error()
	case !found:
		return rec, http.StatusInternalServerError, "Error",
			fmt.Sprintf("Failed to get CA from Kubernetes secret: HTTP-Code: 404 Message: secrets %q not found", secretName)
	case len(data["tls.crt"]) == 0 || len(data["tls.key"]) == 0:
		return rec, http.StatusInternalServerError, "TypeError", "Cannot read properties of undefined (reading 'replace')"
	}
	block, _ := pem.Decode(data["tls.crt"])
	if block == nil || block.Type != "CERTIFICATE" {
		return rec, http.StatusBadRequest, "ValidationError", "Invalid certificate: no PEM certificate"
	}
	cert, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		return rec, http.StatusBadRequest, "ValidationError", "Invalid certificate: " + err.Error()
	}
	return caRecord{
		name: key, subject: cert.Subject.CommonName,
		validFrom: cert.NotBefore, validTo: cert.NotAfter, serial: cert.SerialNumber.Text(16),
		certPEM: normalizeLineEndings(string(data["tls.crt"])), keyPEM: normalizeLineEndings(string(data["tls.key"])),
	}, 0, "", ""
}

// normalizeLineEndings turns \r\n and \r into \n, as the Controller does
// before it answers a CA's PEM.
func normalizeLineEndings(s string) string {
	return strings.ReplaceAll(strings.ReplaceAll(s, "\r\n", "\n"), "\r", "\n")
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
// a request, with generated material. It is a no-op for a name that already
// exists.
func (s *Server) ImportCA(name string) error {
	rec, err := newCA(name, name)
	if err != nil {
		return err
	}
	s.addCA(rec)
	return nil
}

// AddCA adds CA name with the given certificate and key as if it had been
// imported earlier (a Controller that holds this CA in its database), without
// recording a request. It is a no-op for a name that already exists.
func (s *Server) AddCA(name string, certPEM, keyPEM []byte) error {
	block, _ := pem.Decode(certPEM)
	if block == nil {
		return errors.New("fake: AddCA: no PEM certificate")
	}
	cert, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		return fmt.Errorf("fake: AddCA: %w", err)
	}
	s.addCA(caRecord{
		name: name, subject: cert.Subject.CommonName, validFrom: cert.NotBefore, validTo: cert.NotAfter,
		serial: cert.SerialNumber.Text(16), certPEM: string(certPEM), keyPEM: string(keyPEM),
	})
	return nil
}

func (s *Server) addCA(rec caRecord) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, exists := s.findCA(rec.name); !exists {
		s.cas = append(s.cas, rec)
		_ = s.saveLocked() // test setup: a failed write shows in the next answer's state
	}
}

// CA returns the certificate and private key PEM the Controller holds for CA
// name, as GET /certificates/ca/{name} answers them.
func (s *Server) CA(name string) (certPEM, keyPEM []byte, ok bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	rec, ok := s.findCA(name)
	if !ok {
		return nil, nil, false
	}
	return []byte(rec.certPEM), []byte(rec.keyPEM), true
}

// IssueCertificate records that the Controller signed certificate name with
// CA caName, as it does for every agent's router and NATS certificates when
// the agent is provisioned (ProvisionAgent does it as the Controller does).
// From then on the CA cannot be deleted until the certificate is
// (DELETE /certificates/{name}).
func (s *Server) IssueCertificate(name, caName string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.signLocked(name, caName)
}

// SecretReader reads a Kubernetes Secret of the Controller's namespace, as the
// Controller does with its ServiceAccount when it imports a CA of type
// k8s-secret. found is false when the Secret does not exist.
type SecretReader func(ctx context.Context, name string) (data map[string][]byte, found bool, err error)

// WithSecretReader makes k8s-secret CA imports read the Secret through
// reader and store its tls.crt and tls.key, so that GET /certificates/ca
// answers the imported material, as the Controller does.
func WithSecretReader(reader SecretReader) Option {
	return func(s *Server) { s.secrets = reader }
}

// SetSecretReader is WithSecretReader on a running fake.
func (s *Server) SetSecretReader(reader SecretReader) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.secrets = reader
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
	return signCA(name, commonName, key, 5*12)
}

// newControllerCA generates a CA as the Controller's createCAEndpoint of type self-signed does
// (src/utils/cert.js: node-forge, an RSA 2048 key), valid for months.
func newControllerCA(name, commonName string, months int) (caRecord, error) {
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return caRecord{}, fmt.Errorf("generate CA key: %w", err)
	}
	return signCA(name, commonName, key, months)
}

// signCA self-signs a CA certificate for key.
func signCA(name, commonName string, key crypto.Signer, months int) (caRecord, error) {
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	if err != nil {
		return caRecord{}, fmt.Errorf("generate CA serial: %w", err)
	}
	now := time.Now().UTC().Truncate(time.Second)
	tmpl := &x509.Certificate{
		SerialNumber:          serial,
		Subject:               pkix.Name{CommonName: commonName},
		NotBefore:             now,
		NotAfter:              now.AddDate(0, months, 0),
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
