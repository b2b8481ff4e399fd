package controlplane_test

import (
	"errors"
	"testing"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kubeopera/kubeopera-operator/controllers/controlplane"
)

// failingMapper is a RESTMapper whose discovery fails.
type failingMapper struct{ meta.RESTMapper }

func (failingMapper) RESTMapping(schema.GroupKind, ...string) (*meta.RESTMapping, error) {
	return nil, errors.New("the server is currently unable to handle the request")
}

// OpenShift is told by its API: a cluster that serves SecurityContextConstraints admits pods
// with them; one that does not (no match) does not; a discovery that fails is an error, not a
// guess.
func TestServesSCC(t *testing.T) {
	g := NewWithT(t)
	scc := schema.GroupVersion{Group: "security.openshift.io", Version: "v1"}
	openShift := meta.NewDefaultRESTMapper([]schema.GroupVersion{scc})
	openShift.Add(scc.WithKind("SecurityContextConstraints"), meta.RESTScopeRoot)
	served, err := controlplane.ServesSCC(openShift)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(served).To(BeTrue())

	served, err = controlplane.ServesSCC(meta.NewDefaultRESTMapper(nil))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(served).To(BeFalse())

	_, err = controlplane.ServesSCC(failingMapper{})
	g.Expect(err).To(MatchError(ContainSubstring("unable to handle the request")))
}
