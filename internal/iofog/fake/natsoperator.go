package fake

import (
	"context"
	"crypto/sha512"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/kubeopera/kubeopera-operator/internal/iofog"
)

// The NATS operator lives in the Controller's database, as in Datasance/Controller v3.7.3
// src/services/nats-auth-service.js:
//
//   - ensureOperator returns the operator row, and creates one (with the system account and the
//     hub's system user, ensureSystemAccount and ensureSysUserForServer) when the database has
//     none. GET /nats/operator, GET /nats/bootstrap and POST /nats/operator/rotate all ensure
//     it, so a Controller on an empty database answers them with a new operator. Creating the
//     system account queues the NATS reconcile task, which writes the hub JWT bundle.
//   - rotateOperator (POST /nats/operator/rotate, scheduleRotateOperator: the answer is the
//     operator before the rotation, the rotation runs in the background) makes a new operator key
//     and JWT and re-signs every account JWT under it; the account keys, and so the users' JWTs
//     and creds, stay. Then the reconcile task writes the re-signed JWTs into the bundle.
//
// The fake keeps the operator with the rest of its database (store.go), so Wipe and a Restart on
// another directory lose it, and runs the background rotation and the reconcile task before the
// answer is written: a request that follows sees their result.

// operatorName is the operator's name: the Controller's `${config.get('app.name')}-operator`.
const operatorName = "iofog-operator"

// ensureOperatorLocked returns the operator material of the database, creating it when there is
// none (reported by created). s.mu is held.
func (s *Server) ensureOperatorLocked() (b iofog.NatsBootstrap, created bool, err error) {
	if s.bootstrap != nil {
		return *s.bootstrap, false, nil
	}
	nb, err := generateBootstrap()
	if err != nil {
		return iofog.NatsBootstrap{}, false, err
	}
	s.bootstrap = &nb
	return nb, true, s.saveLocked()
}

// ensureOperator is ensureOperatorLocked with the NATS reconcile task a new operator queues.
func (s *Server) ensureOperator(ctx context.Context) (iofog.NatsBootstrap, error) {
	s.mu.Lock()
	b, created, err := s.ensureOperatorLocked()
	s.mu.Unlock()
	if err != nil || !created {
		return b, err
	}
	// The real task only logs a failed write; the operator exists either way.
	_ = s.reconcileHubBundle(ctx)
	return b, nil
}

// operatorOf is the GET /nats/operator answer for b.
func operatorOf(b iofog.NatsBootstrap) iofog.NatsOperator {
	return iofog.NatsOperator{Name: operatorName, PublicKey: b.OperatorPublicKey, JWT: b.OperatorJwt}
}

// handleGetOperator is GET /nats/operator: {name, publicKey, jwt}.
func (s *Server) handleGetOperator(w http.ResponseWriter, r *http.Request) {
	b, err := s.ensureOperator(r.Context())
	if err != nil {
		writeError(w, http.StatusInternalServerError, "Error", err.Error())
		return
	}
	writeJSON(w, http.StatusOK, operatorOf(b))
}

// handleRotateOperator is POST /nats/operator/rotate: the operator as it was, then the rotation.
func (s *Server) handleRotateOperator(w http.ResponseWriter, r *http.Request) {
	b, err := s.ensureOperator(r.Context())
	if err == nil {
		err = s.RotateNatsOperator(r.Context())
	}
	if err != nil {
		writeError(w, http.StatusInternalServerError, "Error", err.Error())
		return
	}
	writeJSON(w, http.StatusOK, operatorOf(b))
}

// RotateNatsOperator is what POST /nats/operator/rotate runs in the background: a new operator
// key and JWT, every account JWT (the system account's and those of AddNatsAccount) re-signed
// by it with its key and claims kept, and the hub JWT bundle written (see SetKubernetes). The
// hub's system user and its creds stay: they are signed by the system account.
func (s *Server) RotateNatsOperator(ctx context.Context) error {
	s.mu.Lock()
	err := s.rotateOperatorLocked()
	s.mu.Unlock()
	if err != nil {
		return err
	}
	_ = s.reconcileHubBundle(ctx)
	return nil
}

func (s *Server) rotateOperatorLocked() error {
	b, _, err := s.ensureOperatorLocked()
	if err != nil {
		return err
	}
	operator := newNkey(prefixOperator)
	operatorJWT, err := signJWT(operator, natsClaims{
		Name: operatorName, Subject: operator.public(),
		Nats: map[string]any{"system_account": b.SystemAccountPublicKey, "type": "operator", "version": 2},
	})
	if err != nil {
		return err
	}
	sys, err := resignJWT(b.SystemAccountJwt, operator)
	if err != nil {
		return fmt.Errorf("re-sign the system account: %w", err)
	}
	accounts := make([]iofog.NatsAccount, len(s.accounts))
	for i, a := range s.accounts {
		if a.JWT, err = resignJWT(a.JWT, operator); err != nil {
			return fmt.Errorf("re-sign account %s: %w", a.Name, err)
		}
		accounts[i] = a
	}
	b.OperatorJwt, b.OperatorPublicKey, b.OperatorSeed, b.SystemAccountJwt = operatorJWT, operator.public(), operator.seed(), sys
	s.bootstrap, s.accounts = &b, accounts
	return s.saveLocked()
}

// resignJWT returns token's claims signed by issuer: the issuer, issue time and ID change, the
// subject and every other claim stay.
func resignJWT(token string, issuer nkey) (string, error) {
	parts := strings.Split(token, ".")
	if len(parts) != 3 {
		return "", fmt.Errorf("not a JWT")
	}
	payload, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil {
		return "", fmt.Errorf("decode claims: %w", err)
	}
	var claims map[string]any
	if err := json.Unmarshal(payload, &claims); err != nil {
		return "", fmt.Errorf("decode claims: %w", err)
	}
	claims["iss"], claims["iat"], claims["jti"] = issuer.public(), time.Now().Unix(), ""
	unsigned, err := json.Marshal(claims)
	if err != nil {
		return "", err
	}
	sum := sha512.Sum512_256(unsigned)
	claims["jti"] = nkeyEncoding.EncodeToString(sum[:])
	return encodeSigned(issuer, claims)
}
