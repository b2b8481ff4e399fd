package controlplane_test

import (
	"context"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	datasancev3 "github.com/kubeopera/kubeopera-operator/api/datasance/v3"
	"github.com/kubeopera/kubeopera-operator/controllers/controlplane"
)

// Router certificates: a bring-your-own site CA signs the generated site server certificate and
// is never touched; the other CA is generated; server certificates carry the CNs and SANs of the
// spec. A new router address renews both server certificates in place, under the same CAs, and
// rolls the router pods; the CAs are not written.
func TestRouterCertificatesWithBYOCA(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	g := h.g
	byo := h.createTLSSecret("router-site-ca")
	h.bringUp(h.controlPlane())

	site := h.secret("router-site-ca")
	g.Expect(site.ResourceVersion).To(Equal(byo.ResourceVersion), "the BYO CA is never written")
	g.Expect(site.OwnerReferences).To(BeEmpty())

	server := h.secret("router-site-server")
	g.Expect(server.Type).To(Equal(corev1.SecretTypeTLS))
	g.Expect(server.Data["ca.crt"]).To(Equal(byo.Data["tls.crt"]))
	cert := parseCert(g, server.Data["tls.crt"])
	g.Expect(cert.Subject.CommonName).To(Equal("iofog-router"))
	g.Expect(cert.DNSNames).To(Equal([]string{"router." + h.ns + ".svc.cluster.local", routerLBIP}))
	g.Expect(cert.IPAddresses).To(HaveLen(1))
	g.Expect(cert.IPAddresses[0].String()).To(Equal(routerLBIP))
	g.Expect(cert.PublicKeyAlgorithm).To(Equal(x509.RSA))
	g.Expect(cert.NotAfter.Sub(cert.NotBefore).Hours()).To(BeNumerically("~", 5*365*24, 24))
	roots := x509.NewCertPool()
	roots.AddCert(parseCert(g, byo.Data["tls.crt"]))
	_, err := cert.Verify(x509.VerifyOptions{Roots: roots, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}})
	g.Expect(err).NotTo(HaveOccurred(), "signed by the BYO CA")

	localCA := h.secret("default-router-local-ca")
	g.Expect(parseCert(g, localCA.Data["tls.crt"]).Subject.CommonName).To(Equal("default-router-local-ca"))
	g.Expect(parseCert(g, localCA.Data["tls.crt"]).IsCA).To(BeTrue())
	local := h.secret("router-local-server")
	g.Expect(parseCert(g, local.Data["tls.crt"]).Subject.CommonName).To(Equal("iofog-router-local"))
	g.Expect(local.Data["ca.crt"]).To(Equal(localCA.Data["tls.crt"]))

	// A new router address renews the server certificates (their SANs), not the CAs.
	versions, uids := map[string]string{}, map[string]types.UID{}
	for _, n := range []string{"router-site-ca", "default-router-local-ca", "router-site-server", "router-local-server"} {
		versions[n], uids[n] = h.secret(n).ResourceVersion, h.secret(n).UID
	}
	hash := h.deployment("router").Spec.Template.Annotations[controlplane.AnnotationTLSHash]
	h.setServiceAddress("router", "192.0.2.77")
	h.rollOut()
	h.mustBeReady()
	for _, n := range []string{"router-site-ca", "default-router-local-ca"} {
		g.Expect(h.secret(n).ResourceVersion).To(Equal(versions[n]), n)
	}
	for _, n := range []string{"router-site-server", "router-local-server"} {
		renewed := h.secret(n)
		g.Expect(renewed.UID).To(Equal(uids[n]), "renewed in place")
		g.Expect(renewed.ResourceVersion).NotTo(Equal(versions[n]))
		g.Expect(parseCert(g, renewed.Data["tls.crt"]).DNSNames).To(Equal([]string{"router." + h.ns + ".svc.cluster.local", "192.0.2.77"}), n)
	}
	g.Expect(h.secret("router-site-server").Data["ca.crt"]).To(Equal(byo.Data["tls.crt"]))
	_, err = parseCert(g, h.secret("router-site-server").Data["tls.crt"]).Verify(x509.VerifyOptions{Roots: roots, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}})
	g.Expect(err).NotTo(HaveOccurred(), "renewed under the same BYO CA")
	g.Expect(h.deployment("router").Spec.Template.Annotations[controlplane.AnnotationTLSHash]).NotTo(Equal(hash), "the router pods roll")
	g.Expect(h.rec.list()).To(ContainElement(And(HavePrefix("Normal CertificateIssued"), ContainSubstring("router-site-server (its hosts changed)"))))

	// A deleted server Secret is regenerated, signed by the CA in the cluster; the new
	// certificate rolls the router pods.
	g.Expect(env.Client.Delete(h.ctx, server)).To(Succeed())
	h.rollOut()
	h.mustBeReady()
	regenerated := parseCert(g, h.secret("router-site-server").Data["tls.crt"])
	g.Expect(regenerated.DNSNames).To(ContainElement("192.0.2.77"))
	_, err = regenerated.Verify(x509.VerifyOptions{Roots: roots, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}})
	g.Expect(err).NotTo(HaveOccurred())
}

// Invalid PEM in a BYO CA is reason InvalidCertificate, a Warning Event and a terminal error (no
// crash, no retry loop); fixing the Secret lets the next pass go on.
func TestInvalidBYOCA(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	g := h.g
	bad := &corev1.Secret{}
	bad.Name, bad.Namespace, bad.Type = "default-router-local-ca", h.ns, corev1.SecretTypeTLS
	bad.Data = map[string][]byte{"tls.crt": []byte("-----BEGIN CERTIFICATE-----\nnot base64!\n-----END CERTIFICATE-----\n"), "tls.key": []byte("garbage")}
	g.Expect(env.Client.Create(h.ctx, bad)).To(Succeed())
	h.create(h.controlPlane())
	h.mustRequeue(controlplane.RequeueTransition)
	h.assignAddressesAfterFirstPass()

	_, err := h.reconcile()
	g.Expect(err).To(HaveOccurred())
	g.Expect(errors.Is(err, reconcile.TerminalError(nil))).To(BeTrue())
	g.Expect(err.Error()).To(ContainSubstring("CA Secret default-router-local-ca does not hold a PEM certificate"))
	h.expectState(datasancev3.ConditionDeploying, datasancev3.ReasonInvalidCertificate)
	g.Expect(h.get().Status.Router.Reason).To(Equal(datasancev3.ReasonInvalidCertificate))
	g.Expect(h.rec.list()).To(ContainElement(HavePrefix("Warning InvalidCertificate")))
	g.Expect(h.exists(&corev1.Secret{}, "router-local-server")).To(BeFalse())

	// The user replaces the Secret with a real CA.
	g.Expect(env.Client.Delete(h.ctx, bad)).To(Succeed())
	fixed := h.createTLSSecret("default-router-local-ca")
	h.bringUpExisting()
	g.Expect(h.secret("router-local-server").Data["ca.crt"]).To(Equal(fixed.Data["tls.crt"]))
}

func parseCert(g Gomega, data []byte) *x509.Certificate {
	block, _ := pem.Decode(data)
	g.Expect(block).NotTo(BeNil())
	cert, err := x509.ParseCertificate(block.Bytes)
	g.Expect(err).NotTo(HaveOccurred())
	return cert
}

// A stale read (the cache has not seen a certificate Secret yet) never overwrites it: the pass
// requeues shortly and the Secret keeps its content.
func TestStaleCacheNeverOverwritesCertificates(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	g := h.g
	h.bringUp(h.controlPlane())
	before := h.secret("router-local-server")

	h.r.Client = interceptor.NewClient(h.r.Client.(client.WithWatch), interceptor.Funcs{
		Get: func(ctx context.Context, c client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
			if _, ok := obj.(*corev1.Secret); ok && key.Name == "router-local-server" {
				return apierrors.NewNotFound(corev1.Resource("secrets"), key.Name)
			}
			return c.Get(ctx, key, obj, opts...)
		},
	})
	h.mustRequeue(controlplane.RequeueTransition)
	g.Expect(h.get().Status.Router.Reason).To(Equal(datasancev3.ReasonProgressing))
	after := h.secret("router-local-server")
	g.Expect(after.ResourceVersion).To(Equal(before.ResourceVersion))
	g.Expect(after.Data).To(Equal(before.Data))
}
