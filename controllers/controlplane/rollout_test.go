package controlplane_test

import (
	"testing"

	. "github.com/onsi/gomega"

	"github.com/kubeopera/kubeopera-operator/controllers/controlplane"
)

// The pod-template credentials hash is an HMAC under a per-ControlPlane random key kept in an
// owned Secret: a reader of the Deployment and the ControlPlane cannot recompute it from the
// inline values to guess the one credential that is not in the CR.
func TestCredentialsHashIsKeyed(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	g := h.g
	h.bringUp(h.controlPlane())
	key := h.secret("controller-rollout-key")
	g.Expect(key.Data["key"]).To(HaveLen(32))
	g.Expect(key.OwnerReferences).To(ConsistOf(HaveField("UID", h.get().UID)))
	creds := map[string]map[string][]byte{
		"controller-db-credentials":   h.secret("controller-db-credentials").Data,
		"controller-auth-credentials": h.secret("controller-auth-credentials").Data,
	}
	got := h.deployment("controller").Spec.Template.Annotations[controlplane.AnnotationCredentialsHash]
	g.Expect(got).To(Equal(controlplane.CredentialsHash(key.Data["key"], creds)))
	g.Expect(got).NotTo(Equal(controlplane.UnkeyedHash(creds)))
}
