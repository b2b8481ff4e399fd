package api_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"testing"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/controller-runtime/pkg/client"

	datasancev3 "github.com/kubeopera/kubeopera-operator/api/datasance/v3"
	kubeoperav1alpha1 "github.com/kubeopera/kubeopera-operator/api/kubeopera/v1alpha1"
	"github.com/kubeopera/kubeopera-operator/test/testenv"
)

// heredoc matches the objects the README's quick start applies (kubectl apply -f - <<'YAML').
var heredoc = regexp.MustCompile(`(?ms)<<'YAML'\n(.*?)^YAML$`)

// The README's quick start works as written against the CRDs: every object it applies is
// accepted with strict field validation (no unknown or misspelt field), and the conditions and
// status field it waits for and reads are the ones the operator writes.
func TestReadmeQuickStartIsAccepted(t *testing.T) {
	g := NewWithT(t)
	data, err := os.ReadFile(filepath.Join(testenv.Root(), "README.md"))
	g.Expect(err).NotTo(HaveOccurred())
	readme := string(data)
	blocks := heredoc.FindAllStringSubmatch(readme, -1)
	g.Expect(blocks).To(HaveLen(2), "the quick start applies a ControlPlane and a KubeOperaApp")
	kinds := map[string]bool{}
	for _, b := range blocks {
		obj := &unstructured.Unstructured{}
		g.Expect(yaml.Unmarshal([]byte(b[1]), &obj.Object)).To(Succeed())
		obj.SetNamespace(newNamespace(t))
		g.Expect(env.Client.Create(context.Background(), obj, client.FieldValidation("Strict"))).To(Succeed(), b[1])
		kinds[obj.GetKind()] = true
	}
	g.Expect(kinds).To(HaveKey("ControlPlane"))
	g.Expect(kinds).To(HaveKey("KubeOperaApp"))

	g.Expect(readme).To(ContainSubstring("wait controlplane/pot --for=condition=" + datasancev3.ConditionReady + " "))
	g.Expect(readme).To(ContainSubstring("wait kubeoperaapp/web --for=condition=" + kubeoperav1alpha1.ConditionSynced + " "))
	status, err := json.Marshal(datasancev3.ControlPlaneStatus{Controller: datasancev3.ControllerStatus{PublicURL: "https://u"}})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(string(status)).To(MatchRegexp(`"controller":\{[^}]*"publicUrl":"https://u"`))
	g.Expect(readme).To(ContainSubstring("jsonpath='{.status.controller.publicUrl}"))
}
