package fake

import (
	"fmt"
	"net/http"
	"slices"
)

// The Controller makes CAs and certificates itself, besides the CAs the operator imports
// (Datasance/Controller v3.7.3):
//
//   - Provisioning an agent on Kubernetes (src/services/iofog-service.js,
//     _handleRouterCertificates) ensures CA router-site-ca, creating a missing one as a
//     self-signed CA (ensureCA: createCAEndpoint type self-signed, subject the CA's name, 60
//     months). An agent whose router mode is none also ensures default-router-local-ca and gets
//     certificate router-local-agent-<fog> signed by it; any other mode gets
//     router-site-server-<fog> under router-site-ca and a CA router-local-ca-<fog> of its own.
//   - Each Controller process that opens an exec session through the router creates its client
//     certificate controller-exec-session-client-<pod hostname> under default-router-local-ca
//     (src/services/router-connection-service.js, _createControllerCertificate; the CA must
//     exist), and keeps it in memory for the life of the process.
//
// A CA with a signed certificate cannot be deleted (deleteCAEndpoint) until the certificates are.

// Names of the Controller's own CAs and certificates.
const (
	routerSiteCA         = "router-site-ca"
	defaultRouterLocalCA = "default-router-local-ca"
	// execSessionCertificatePrefix starts the name of the client certificate each Controller
	// process makes for its exec sessions, followed by "-" and the pod's hostname.
	execSessionCertificatePrefix = "controller-exec-session-client"
	// controllerCAMonths is the validity ensureCA gives a CA it creates.
	controllerCAMonths = 60
)

// ProvisionAgent is what provisioning agent fog on Kubernetes does to the CA catalog (see above):
// router-site-ca and, with routerModeNone, default-router-local-ca are created when missing, and
// the agent's certificates are signed.
func (s *Server) ProvisionAgent(fog string, routerModeNone bool) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.ensureControllerCALocked(routerSiteCA); err != nil {
		return err
	}
	if routerModeNone {
		if err := s.ensureControllerCALocked(defaultRouterLocalCA); err != nil {
			return err
		}
		return s.signLocked("router-local-agent-"+fog, defaultRouterLocalCA)
	}
	if err := s.signLocked("router-site-server-"+fog, routerSiteCA); err != nil {
		return err
	}
	local := "router-local-ca-" + fog
	if err := s.ensureControllerCALocked(local); err != nil {
		return err
	}
	if err := s.signLocked("router-local-server-"+fog, local); err != nil {
		return err
	}
	return s.signLocked("router-local-agent-"+fog, local)
}

// ExecSession is a Controller process on pod podHostname opening its first exec session: its
// client certificate is signed by default-router-local-ca, which must exist.
func (s *Server) ExecSession(podHostname string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.signLocked(execSessionCertificatePrefix+"-"+podHostname, defaultRouterLocalCA)
}

// SignedBy returns the names of the certificates CA caName has signed.
func (s *Server) SignedBy(caName string) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	rec, _ := s.findCA(caName)
	return slices.Clone(rec.signed)
}

// ensureControllerCALocked creates CA name as ensureCA does when the catalog lacks it.
func (s *Server) ensureControllerCALocked(name string) error {
	if _, ok := s.findCA(name); ok {
		return nil
	}
	rec, err := newControllerCA(name, name, controllerCAMonths)
	if err != nil {
		return err
	}
	s.cas = append(s.cas, rec)
	return s.saveLocked()
}

// signLocked records certificate name as signed by CA caName.
func (s *Server) signLocked(name, caName string) error {
	i := slices.IndexFunc(s.cas, func(rec caRecord) bool { return rec.name == caName })
	if i < 0 {
		return fmt.Errorf("fake: no CA %q", caName)
	}
	if !slices.Contains(s.cas[i].signed, name) {
		s.cas[i].signed = append(s.cas[i].signed, name)
	}
	return s.saveLocked()
}

// certificateView is one entry of GET /certificates (listCertificatesEndpoint; the validity
// fields are left out).
type certificateView struct {
	Name    string  `json:"name"`
	Subject string  `json:"subject"`
	IsCA    bool    `json:"isCA"`
	CAName  *string `json:"caName"`
}

// handleListCertificates is GET /certificates: every CA, and every certificate with the CA that
// signed it.
func (s *Server) handleListCertificates(w http.ResponseWriter) {
	s.mu.Lock()
	out := []certificateView{}
	for _, rec := range s.cas {
		out = append(out, certificateView{Name: rec.name, Subject: rec.subject, IsCA: true})
		for _, name := range rec.signed {
			out = append(out, certificateView{Name: name, Subject: name, CAName: &rec.name})
		}
	}
	s.mu.Unlock()
	writeJSON(w, http.StatusOK, map[string]any{"certificates": out})
}
