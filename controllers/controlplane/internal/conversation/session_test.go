package conversation_test

import (
	"context"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"

	"k8s.io/apimachinery/pkg/types"

	datasancev3 "github.com/kubeopera/kubeopera-operator/api/datasance/v3"
	"github.com/kubeopera/kubeopera-operator/controllers/controlplane/internal/conversation"
	"github.com/kubeopera/kubeopera-operator/internal/iofog/fake"
	"github.com/kubeopera/kubeopera-operator/internal/outcome"
	"github.com/kubeopera/kubeopera-operator/internal/testfixture"
)

// peer is the Kubernetes side of a pass, counting what the Session asks of it.
type peer struct {
	baseURL     string
	password    string
	endpoints   int
	credentials int
	refusals    []error
}

func (p *peer) Endpoint(context.Context) (conversation.Endpoint, error) {
	p.endpoints++
	return conversation.Endpoint{BaseURL: p.baseURL}, nil
}

func (p *peer) HoldLogin() error { return nil }

func (p *peer) Credentials(context.Context) (conversation.Credentials, error) {
	p.credentials++
	return conversation.Credentials{Fingerprint: "fp-" + p.password, Username: "admin", Password: p.password}, nil
}

func (p *peer) LoginRejected(refused error) { p.refusals = append(p.refusals, refused) }

func session(cp *datasancev3.ControlPlane, mem *conversation.Memory, p *peer) *conversation.Session {
	return conversation.NewSession(conversation.Config{
		ControlPlane: cp, Now: time.Now(), VerifyInterval: 30 * time.Second,
		NewClient: conversation.NewClientFactory(""), Memory: mem, Peer: p,
	})
}

// count is how many requests the Controller received whose call ends with suffix.
func count(srv *fake.Server, suffix string) int {
	n := 0
	for _, c := range srv.Calls() {
		if strings.HasSuffix(c, suffix) {
			n++
		}
	}
	return n
}

func TestSessionAsksNothingUntilUsed(t *testing.T) {
	g := NewWithT(t)
	srv := fake.NewServer(fake.WithCredentials("admin", "pw"))
	defer srv.Close()
	p := &peer{baseURL: srv.URL(), password: "pw"}
	s := session(testfixture.ControlPlane(), &conversation.Memory{}, p)
	g.Expect(s.VerificationDue()).To(BeTrue(), "a ControlPlane never verified is due")
	s.Close()
	g.Expect(p.endpoints+p.credentials).To(BeZero(), "nothing read from Kubernetes")
	g.Expect(srv.Calls()).To(BeEmpty(), "nothing called")
}

func TestSessionAsksStatusAndLogsInOncePerPass(t *testing.T) {
	g := NewWithT(t)
	srv := fake.NewServer(fake.WithCredentials("admin", "pw"))
	defer srv.Close()
	p := &peer{baseURL: srv.URL(), password: "pw"}
	s := session(testfixture.ControlPlane(), &conversation.Memory{}, p)
	defer s.Close()
	ctx := context.Background()
	g.Expect(s.LogIn(ctx)).To(Succeed())
	g.Expect(s.LogIn(ctx)).To(Succeed())
	ca, err := s.CA(ctx, "router-site-ca")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(ca).To(BeNil(), "the Controller holds no such CA")
	g.Expect(count(srv, "/status")).To(Equal(1))
	g.Expect(count(srv, "/user/login")).To(Equal(1))
	g.Expect(p.endpoints).To(Equal(1))
	g.Expect(p.credentials).To(Equal(1))
}

func TestRejectedLoginIsToldOnceAndHeldAcrossPasses(t *testing.T) {
	g := NewWithT(t)
	srv := fake.NewServer(fake.WithCredentials("admin", "pw"))
	defer srv.Close()
	ctx := context.Background()
	cp := testfixture.ControlPlane()
	mem := &conversation.Memory{}
	p := &peer{baseURL: srv.URL(), password: "wrong"}

	first := session(cp, mem, p)
	err := first.LogIn(ctx)
	g.Expect(outcome.IsWait(err)).To(BeTrue(), "a slow retry is left: %v", err)
	reason, _ := outcome.ReasonOf(err)
	g.Expect(reason).To(Equal(datasancev3.ReasonLoginFailed))
	g.Expect(first.LogIn(ctx)).To(MatchError(err.Error()), "every caller of the pass gets the same failure")
	_, caErr := first.CA(ctx, "router-site-ca")
	g.Expect(caErr).To(MatchError(err.Error()), "nothing is called without a token")
	first.Close()
	g.Expect(p.refusals).To(HaveLen(1), "told once per rejected login")
	g.Expect(cp.Status.Controller.RejectedLogins).NotTo(BeNil())
	g.Expect(cp.Status.Controller.RejectedLogins.Count).To(BeEquivalentTo(1))

	second := session(cp, mem, p)
	defer second.Close()
	g.Expect(second.LogIn(ctx)).To(MatchError(err.Error()), "the same credentials wait for the slow retry")
	g.Expect(count(srv, "/user/login")).To(Equal(1), "no second login with the rejected credentials")
	g.Expect(p.refusals).To(HaveLen(1))

	p.password = "pw"
	third := session(cp, mem, p)
	defer third.Close()
	g.Expect(third.LogIn(ctx)).To(Succeed(), "changed credentials are tried at once")
	g.Expect(cp.Status.Controller.RejectedLogins).To(BeNil())
}

func TestForgottenControlPlaneIsVerifiedAgain(t *testing.T) {
	g := NewWithT(t)
	srv := fake.NewServer(fake.WithCredentials("admin", "pw"))
	defer srv.Close()
	ctx := context.Background()
	cp := testfixture.ControlPlane()
	mem := &conversation.Memory{}
	p := &peer{baseURL: srv.URL(), password: "pw"}

	s := session(cp, mem, p)
	reg := conversation.NewRegistration(&cp.Spec, srv.URL(), "1.2.3.4", nil)
	g.Expect(s.Register(ctx, reg)).To(Succeed())
	s.RecordRegistration()
	s.Close()

	next := session(cp, mem, p)
	defer next.Close()
	g.Expect(next.VerificationDue()).To(BeFalse(), "just registered")
	held, err := next.HoldsRegistration(ctx, reg)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(held).To(BeTrue(), "the process seen holding it needs no read-back")
	g.Expect(count(srv, "/router")).To(Equal(1), "only the PUT")

	mem.Forget(types.NamespacedName{Namespace: cp.Namespace, Name: cp.Name})
	g.Expect(session(cp, mem, p).VerificationDue()).To(BeTrue(), "a forgotten ControlPlane is verified again")
}
