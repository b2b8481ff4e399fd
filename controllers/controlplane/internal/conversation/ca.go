package conversation

import (
	"context"
	"errors"
	"fmt"
	"strings"

	datasancev3 "github.com/kubeopera/kubeopera-operator/api/datasance/v3"
	"github.com/kubeopera/kubeopera-operator/internal/iofog"
	"github.com/kubeopera/kubeopera-operator/internal/outcome"
)

// CA is the Controller's copy of a CA (GET /certificates/ca/{name}): certificate and private
// key, PEM.
type CA struct {
	Certificate []byte
	PrivateKey  []byte
}

// CA reads the Controller's copy of CA name; nil when the Controller has none.
func (s *Session) CA(ctx context.Context, name string) (*CA, error) {
	api, err := s.loggedInClient(ctx)
	if err != nil {
		return nil, err
	}
	info, err := api.GetCA(ctx, name)
	switch {
	case errors.Is(err, iofog.ErrNotFound):
		return nil, nil
	case err != nil:
		return nil, s.registrationFailure(ctx, err)
	}
	return &CA{Certificate: []byte(info.Data.Certificate), PrivateKey: []byte(info.Data.PrivateKey)}, nil
}

// ImportCA imports the CA of the Kubernetes Secret name into the Controller, which reads the
// Secret itself. A CA of that name that appeared meanwhile is a wait: compared on the next pass.
func (s *Session) ImportCA(ctx context.Context, name string) error {
	api, err := s.loggedInClient(ctx)
	if err != nil {
		return err
	}
	if err := api.ImportCA(ctx, name); err != nil {
		if errors.Is(err, iofog.ErrConflict) {
			return outcome.Wait(datasancev3.ReasonProgressing, RequeueRegistration,
				fmt.Sprintf("The Controller got a CA %s meanwhile; comparing it with the Secret's.", name))
		}
		return s.registrationFailure(ctx, err)
	}
	return nil
}

// DeleteCA removes the Controller's copy of CA name (none is no error). The Controller refuses
// while a certificate it signed exists: a certificate signed since the caller listed them is a
// wait, decided again on the next pass.
func (s *Session) DeleteCA(ctx context.Context, name string) error {
	api, err := s.loggedInClient(ctx)
	if err != nil {
		return err
	}
	switch err := api.DeleteCA(ctx, name); {
	case errors.Is(err, iofog.ErrCAInUse):
		return outcome.Wait(datasancev3.ReasonProgressing, RequeueRegistration,
			fmt.Sprintf("The Controller signed a certificate with its CA %s meanwhile; deciding again which CA stays.", name))
	case err != nil && !errors.Is(err, iofog.ErrNotFound):
		return s.registrationFailure(ctx, err)
	}
	return nil
}

// execSessionCertificatePrefix starts the name of the client certificate a Controller process
// makes under default-router-local-ca for its exec sessions (followed by "-<pod hostname>").
const execSessionCertificatePrefix = "controller-exec-session-client"

// CertificatesSignedBy lists the certificates the Controller's CA name signed: its own
// exec-session client certificates, and the others (agents').
func (s *Session) CertificatesSignedBy(ctx context.Context, name string) (own, agents []string, err error) {
	api, err := s.loggedInClient(ctx)
	if err != nil {
		return nil, nil, err
	}
	certs, err := api.ListCertificates(ctx)
	if err != nil {
		return nil, nil, s.registrationFailure(ctx, err)
	}
	for _, c := range certs {
		switch {
		case c.CAName != name:
		case strings.HasPrefix(c.Name, execSessionCertificatePrefix):
			own = append(own, c.Name)
		default:
			agents = append(agents, c.Name)
		}
	}
	return own, agents, nil
}

// DeleteCertificates deletes certificates the Controller issued (those gone already are no
// error), releasing the CA that signed them.
func (s *Session) DeleteCertificates(ctx context.Context, names []string) error {
	api, err := s.loggedInClient(ctx)
	if err != nil {
		return err
	}
	for _, cert := range names {
		if err := api.DeleteCertificate(ctx, cert); err != nil && !errors.Is(err, iofog.ErrNotFound) {
			return s.registrationFailure(ctx, err)
		}
	}
	return nil
}

// CAOutcome is this pass's outcome of comparing CA name with the Controller's copy, if the pass
// compared it (checked): nil when the Controller holds the CA, else the failure, reported once
// and not asked again.
func (s *Session) CAOutcome(name string) (checked bool, err error) {
	err, checked = s.caChecks[name]
	return checked, err
}

// RememberCA keeps the outcome for CA name (nil: the Controller holds it) for the rest of the
// pass.
func (s *Session) RememberCA(name string, err error) {
	if s.caChecks == nil {
		s.caChecks = map[string]error{}
	}
	s.caChecks[name] = err
}
