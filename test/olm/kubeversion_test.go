package olm

import (
	"fmt"
	"sort"
	"testing"

	. "github.com/onsi/gomega"
	"k8s.io/apiextensions-apiserver/pkg/apis/apiextensions"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	structuralschema "k8s.io/apiextensions-apiserver/pkg/apiserver/schema"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/schema/cel"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/schema/cel/model"
	"k8s.io/apimachinery/pkg/util/version"
	celconfig "k8s.io/apiserver/pkg/apis/cel"
	"k8s.io/apiserver/pkg/cel/environment"
)

// minKubeVersion must be the oldest Kubernetes that accepts the bundle's CRDs. A kube-apiserver
// compiles the x-kubernetes-validations rules of a new CRD with the CEL environment of its
// previous minor version (the n-1 compatibility version), so:
//   - every rule must compile in the environment of minKubeVersion-1: the claimed version installs
//     the CRDs;
//   - some rule must fail in the environment of minKubeVersion-2: the release before the claimed
//     one rejects the CRDs, so the claim is no higher than it needs to be.
//
// Today's floor is 1.29: the rules use CEL optional types (`?.`, orValue), which API servers accept
// in new expressions from 1.29 on.
func TestMinKubeVersionIsTheCRDsFloor(t *testing.T) {
	g := NewWithT(t)
	bundle := loadBundle(t)
	minVersion, err := version.ParseSemantic(bundle.CSV.Spec.MinKubeVersion)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(minVersion.Minor()).To(BeNumerically(">=", 2))

	claimed := version.MajorMinor(minVersion.Major(), minVersion.Minor()-1)
	older := version.MajorMinor(minVersion.Major(), minVersion.Minor()-2)

	var rules int
	for _, crd := range bundle.V1CRDs {
		n, errs := compileCRDRules(t, crd, claimed)
		rules += n
		g.Expect(errs).To(BeEmpty(), "%s: rules that Kubernetes %s rejects (raise minKubeVersion)", crd.Name, bundle.CSV.Spec.MinKubeVersion)
	}
	g.Expect(rules).To(BeNumerically(">", 0))

	var rejected []string
	for _, crd := range bundle.V1CRDs {
		_, errs := compileCRDRules(t, crd, older)
		rejected = append(rejected, errs...)
	}
	g.Expect(rejected).NotTo(BeEmpty(),
		"every CRD rule compiles for the Kubernetes release before %s too: minKubeVersion can be lowered", bundle.CSV.Spec.MinKubeVersion)
}

// compileCRDRules compiles every x-kubernetes-validations rule of every version of a CRD as new
// expressions of the CEL environment of compatibility version compat. It returns the number of
// rules and one message per rule that does not compile.
func compileCRDRules(t *testing.T, crd *apiextensionsv1.CustomResourceDefinition, compat *version.Version) (int, []string) {
	t.Helper()
	envSet := environment.MustBaseEnvSet(compat)
	var rules int
	var errs []string
	for _, v := range crd.Spec.Versions {
		internal := &apiextensions.JSONSchemaProps{}
		if err := apiextensionsv1.Convert_v1_JSONSchemaProps_To_apiextensions_JSONSchemaProps(v.Schema.OpenAPIV3Schema, internal, nil); err != nil {
			t.Fatal(err)
		}
		s, err := structuralschema.NewStructural(internal)
		if err != nil {
			t.Fatalf("%s %s: %v", crd.Name, v.Name, err)
		}
		walkStructural(s, "", true, func(path string, node *structuralschema.Structural, root bool) {
			if len(node.XValidations) == 0 {
				return
			}
			results, err := cel.Compile(node, model.SchemaDeclType(node, root || node.XEmbeddedResource),
				celconfig.PerCallLimit, envSet, cel.NewExpressionsEnvLoader())
			if err != nil {
				errs = append(errs, fmt.Sprintf("%s%s: %v", v.Name, path, err))
				return
			}
			for i, r := range results {
				rules++
				if r.Error != nil {
					errs = append(errs, fmt.Sprintf("%s%s rule %q: %s", v.Name, path, node.XValidations[i].Rule, r.Error.Detail))
				}
				if r.MessageExpressionError != nil {
					errs = append(errs, fmt.Sprintf("%s%s messageExpression %q: %s", v.Name, path, node.XValidations[i].MessageExpression, r.MessageExpressionError.Detail))
				}
			}
		})
	}
	return rules, errs
}

// walkStructural visits a structural schema and every schema below it.
func walkStructural(s *structuralschema.Structural, path string, root bool, visit func(string, *structuralschema.Structural, bool)) {
	if s == nil {
		return
	}
	visit(path, s, root)
	names := make([]string, 0, len(s.Properties))
	for name := range s.Properties {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		p := s.Properties[name]
		walkStructural(&p, path+"."+name, false, visit)
	}
	walkStructural(s.Items, path+"[]", false, visit)
	if s.AdditionalProperties != nil {
		walkStructural(s.AdditionalProperties.Structural, path+"{}", false, visit)
	}
}
