// Package kstatus checks what GitOps tools read from the operator's resources, as documented:
// what kstatus (sigs.k8s.io/cli-utils) computes for ControlPlanes, and that the health checks the
// docs give for Flux (CEL, evaluated with cel-go as Flux does) and Argo CD (Lua, run with
// gopher-lua as Argo CD does) classify each state as the docs say. The KubeOperaApp's own
// kstatus conditions are tested in controllers/app.
package kstatus

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/google/cel-go/cel"
	. "github.com/onsi/gomega"
	lua "github.com/yuin/gopher-lua"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/cli-utils/pkg/kstatus/status"
	"sigs.k8s.io/yaml"

	datasancev3 "github.com/kubeopera/kubeopera-operator/api/datasance/v3"
	kubeoperav1alpha1 "github.com/kubeopera/kubeopera-operator/api/kubeopera/v1alpha1"
	"github.com/kubeopera/kubeopera-operator/internal/testfixture"
	"github.com/kubeopera/kubeopera-operator/test/testenv"
)

// A ControlPlane state: the True condition of the state machine, at generation gen, the status
// recording observed (0: no status yet).
type cpState struct {
	name             string
	gen, observed    int64
	condType, reason string
	// What the docs say: kstatus, the Flux health check (Current, Failed or InProgress) and
	// Argo CD's health.
	kstatus, flux, argo string
}

var cpStates = []cpState{
	{name: "just created", gen: 1, kstatus: "Current", flux: "InProgress", argo: "Progressing"},
	{name: "waiting for a load balancer", gen: 1, observed: 1, condType: datasancev3.ConditionDeploying, reason: datasancev3.ReasonWaitingForLoadBalancer,
		kstatus: "Current", flux: "InProgress", argo: "Progressing"},
	{name: "cannot log in", gen: 1, observed: 1, condType: datasancev3.ConditionDeploying, reason: datasancev3.ReasonLoginFailed,
		kstatus: "Current", flux: "Failed", argo: "Degraded"},
	{name: "a crash-looping router", gen: 1, observed: 1, condType: datasancev3.ConditionDeploying, reason: datasancev3.ReasonWorkloadUnavailable,
		kstatus: "Current", flux: "InProgress", argo: "Progressing"},
	{name: "a referenced Secret is missing", gen: 1, observed: 1, condType: datasancev3.ConditionDeploying, reason: datasancev3.ReasonSecretNotFound,
		kstatus: "Current", flux: "Failed", argo: "Degraded"},
	{name: "an immutable field changed", gen: 2, observed: 2, condType: datasancev3.ConditionUpdating, reason: datasancev3.ReasonImmutableFieldChanged,
		kstatus: "Current", flux: "Failed", argo: "Degraded"},
	{name: "a second ControlPlane in the namespace", gen: 1, condType: datasancev3.ConditionDeploying, reason: datasancev3.ReasonDuplicateControlPlane,
		kstatus: "Current", flux: "Failed", argo: "Degraded"},
	{name: "a workload of someone else's under an operand's name", gen: 1, observed: 1, condType: datasancev3.ConditionDeploying, reason: datasancev3.ReasonForeignWorkload,
		kstatus: "Current", flux: "Failed", argo: "Degraded"},
	{name: "taking over from the Datasance operator", gen: 1, observed: 1, condType: datasancev3.ConditionReady, reason: datasancev3.ReasonTakingOver,
		kstatus: "Current", flux: "InProgress", argo: "Progressing"},
	{name: "ready", gen: 1, observed: 1, condType: datasancev3.ConditionReady, reason: datasancev3.ReasonReconciled,
		kstatus: "Current", flux: "Current", argo: "Healthy"},
	{name: "ready, drift repair failing", gen: 1, observed: 1, condType: datasancev3.ConditionReady, reason: datasancev3.ReasonControllerUnavailable,
		kstatus: "Current", flux: "InProgress", argo: "Progressing"},
	{name: "spec changed, not seen yet", gen: 2, observed: 1, condType: datasancev3.ConditionReady, reason: datasancev3.ReasonReconciled,
		kstatus: "InProgress", flux: "InProgress", argo: "Progressing"},
}

func (s cpState) object(t *testing.T) *unstructured.Unstructured {
	t.Helper()
	cp := &datasancev3.ControlPlane{
		TypeMeta:   metav1.TypeMeta{APIVersion: datasancev3.GroupVersion.String(), Kind: "ControlPlane"},
		ObjectMeta: metav1.ObjectMeta{Name: "pot", Namespace: "iofog", Generation: s.gen},
	}
	cp.Status.ObservedGeneration = s.observed
	// The conditions describe the recorded generation; one recorded without status.observedGeneration
	// (a refused duplicate) describes the current one.
	condGen := s.observed
	if condGen == 0 {
		condGen = s.gen
	}
	if s.condType != "" {
		for _, ct := range []string{datasancev3.ConditionDeploying, datasancev3.ConditionUpdating, datasancev3.ConditionReady} {
			c := metav1.Condition{Type: ct, Status: metav1.ConditionFalse, Reason: datasancev3.ReasonTransitioned,
				Message: "not the state", ObservedGeneration: condGen, LastTransitionTime: metav1.Now()}
			if ct == s.condType {
				c.Status, c.Reason, c.Message = metav1.ConditionTrue, s.reason, "the state"
			}
			cp.Status.Conditions = append(cp.Status.Conditions, c)
		}
	}
	return toUnstructured(t, cp)
}

func toUnstructured(t *testing.T, obj runtime.Object) *unstructured.Unstructured {
	t.Helper()
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		t.Fatal(err)
	}
	return &unstructured.Unstructured{Object: m}
}

// What kstatus reports for a ControlPlane (docs/controlplane.md, "What kstatus reports"):
// Current once the generation is recorded, whatever the state machine says.
func TestControlPlaneKstatus(t *testing.T) {
	for _, s := range cpStates {
		t.Run(s.name, func(t *testing.T) {
			res, err := status.Compute(s.object(t))
			NewWithT(t).Expect(err).NotTo(HaveOccurred())
			NewWithT(t).Expect(res.Status.String()).To(Equal(s.kstatus))
		})
	}
}

// doc reads a file of docs/.
func doc(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(testenv.Root(), "docs", name))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

var fluxBlock = regexp.MustCompile("(?s)<!-- kstatus-flux-health-checks[^>]*-->\n```yaml\n(.*?)```")

// The Flux CEL health checks of docs/controlplane.md, evaluated as Flux evaluates them (the
// object's top-level fields as variables, CEL optional types): failed first, then current;
// neither is InProgress.
func TestFluxHealthChecksInDocs(t *testing.T) {
	g := NewWithT(t)
	m := fluxBlock.FindStringSubmatch(doc(t, "controlplane.md"))
	g.Expect(m).NotTo(BeNil(), "no Flux health check block in docs/controlplane.md")
	var checks struct {
		HealthCheckExprs []struct {
			APIVersion, Kind, Current, Failed string
		} `json:"healthCheckExprs"`
	}
	g.Expect(yaml.UnmarshalStrict([]byte(m[1]), &checks)).To(Succeed())
	g.Expect(checks.HealthCheckExprs).To(HaveLen(1))
	hc := checks.HealthCheckExprs[0]
	g.Expect(hc.APIVersion + "/" + hc.Kind).To(Equal(datasancev3.GroupVersion.String() + "/ControlPlane"))

	env, err := cel.NewEnv(cel.OptionalTypes(),
		cel.Variable("apiVersion", cel.StringType), cel.Variable("kind", cel.StringType),
		cel.Variable("metadata", cel.DynType), cel.Variable("spec", cel.DynType), cel.Variable("status", cel.DynType))
	g.Expect(err).NotTo(HaveOccurred())
	program := func(expr string) cel.Program {
		ast, iss := env.Compile(expr)
		g.Expect(iss.Err()).NotTo(HaveOccurred(), expr)
		g.Expect(ast.OutputType()).To(Equal(cel.BoolType), expr)
		p, err := env.Program(ast)
		g.Expect(err).NotTo(HaveOccurred())
		return p
	}
	failed, current := program(hc.Failed), program(hc.Current)
	eval := func(p cel.Program, obj map[string]any) bool {
		vars := map[string]any{"apiVersion": obj["apiVersion"], "kind": obj["kind"], "metadata": obj["metadata"],
			"spec": orEmpty(obj["spec"]), "status": orEmpty(obj["status"])}
		out, _, err := p.Eval(vars)
		g.Expect(err).NotTo(HaveOccurred())
		return out.Value().(bool)
	}
	for _, s := range cpStates {
		obj := s.object(t).Object
		got := "InProgress"
		switch {
		case eval(failed, obj):
			got = "Failed"
		case eval(current, obj):
			got = "Current"
		}
		g.Expect(got).To(Equal(s.flux), s.name)
	}
}

func orEmpty(v any) any {
	if v == nil {
		return map[string]any{}
	}
	return v
}

var argoBlock = regexp.MustCompile("(?m)^resource\\.customizations\\.health\\.(\\S+): \\|\n((?:  .*\n)+)")

// argoChecks returns the Lua health checks of a doc, by Argo CD's key (group_Kind).
func argoChecks(t *testing.T, name string) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, m := range argoBlock.FindAllStringSubmatch(doc(t, name), -1) {
		var lines []string
		for l := range strings.SplitSeq(strings.TrimRight(m[2], "\n"), "\n") {
			lines = append(lines, strings.TrimPrefix(l, "  "))
		}
		out[m[1]] = strings.Join(lines, "\n")
	}
	return out
}

// argoHealth runs a Lua health check as Argo CD does: the object as the global obj, the script's
// return value a table with status and message.
func argoHealth(t *testing.T, script string, obj map[string]any) string {
	t.Helper()
	state := lua.NewState()
	defer state.Close()
	state.SetGlobal("obj", toLua(t, state, obj))
	if err := state.DoString(script); err != nil {
		t.Fatalf("lua: %v", err)
	}
	ret, ok := state.Get(-1).(*lua.LTable)
	if !ok {
		t.Fatalf("the health check returned %s, not a table", state.Get(-1).Type())
	}
	return lua.LVAsString(ret.RawGetString("status"))
}

// toLua converts a JSON value to Lua, as Argo CD hands the object to its health checks.
func toLua(t *testing.T, state *lua.LState, v any) lua.LValue {
	switch v := v.(type) {
	case map[string]any:
		tb := state.NewTable()
		for k, e := range v {
			tb.RawSetString(k, toLua(t, state, e))
		}
		return tb
	case []any:
		tb := state.NewTable()
		for _, e := range v {
			tb.Append(toLua(t, state, e))
		}
		return tb
	case string:
		return lua.LString(v)
	case bool:
		return lua.LBool(v)
	case int64:
		return lua.LNumber(v)
	case float64:
		return lua.LNumber(v)
	case nil:
		return lua.LNil
	default:
		t.Fatalf("toLua: %T", v)
		return lua.LNil
	}
}

// The Argo CD health checks of the docs classify ControlPlanes (docs/controlplane.md) and
// KubeOperaApps (docs/app-controller.md) as the docs say.
func TestArgoCDHealthChecksInDocs(t *testing.T) {
	g := NewWithT(t)
	cpCheck := argoChecks(t, "controlplane.md")["datasance.com_ControlPlane"]
	g.Expect(cpCheck).NotTo(BeEmpty(), "no Argo CD health check in docs/controlplane.md")
	for _, s := range cpStates {
		g.Expect(argoHealth(t, cpCheck, s.object(t).Object)).To(Equal(s.argo), s.name)
	}

	appCheck := argoChecks(t, "app-controller.md")["kubeopera.io_KubeOperaApp"]
	g.Expect(appCheck).NotTo(BeEmpty(), "no Argo CD health check in docs/app-controller.md")
	app := func(observed int64, conds ...metav1.Condition) map[string]any {
		a := testfixture.KubeOperaApp(testfixture.AppInNamespace("cs"), testfixture.AppGeneration(2), func(a *kubeoperav1alpha1.KubeOperaApp) {
			a.TypeMeta = metav1.TypeMeta{APIVersion: kubeoperav1alpha1.GroupVersion.String(), Kind: "KubeOperaApp"}
			a.Status = kubeoperav1alpha1.KubeOperaAppStatus{ObservedGeneration: observed, Conditions: conds}
		})
		return toUnstructured(t, a).Object
	}
	cond := func(condType string, s metav1.ConditionStatus, reason string) metav1.Condition {
		return metav1.Condition{Type: condType, Status: s, Reason: reason, Message: reason, LastTransitionTime: metav1.Now()}
	}
	ready := cond(kubeoperav1alpha1.ConditionReady, metav1.ConditionTrue, kubeoperav1alpha1.ReasonSucceeded)
	synced := cond(kubeoperav1alpha1.ConditionSynced, metav1.ConditionTrue, kubeoperav1alpha1.ReasonSucceeded)
	for _, c := range []struct {
		name string
		obj  map[string]any
		want string
	}{
		{"no status yet", app(0), "Progressing"},
		{"retrying", app(1, cond(kubeoperav1alpha1.ConditionReady, metav1.ConditionFalse, kubeoperav1alpha1.ReasonGitAuthFailed),
			cond(kubeoperav1alpha1.ConditionReconciling, metav1.ConditionTrue, kubeoperav1alpha1.ReasonProgressingWithRetry)), "Progressing"},
		{"waiting for Flux", app(1, ready, cond(kubeoperav1alpha1.ConditionSynced, metav1.ConditionFalse, kubeoperav1alpha1.ReasonRevisionNotApplied),
			cond(kubeoperav1alpha1.ConditionReconciling, metav1.ConditionTrue, kubeoperav1alpha1.ReasonRevisionNotApplied)), "Progressing"},
		{"stalled", app(2, cond(kubeoperav1alpha1.ConditionReady, metav1.ConditionFalse, kubeoperav1alpha1.ReasonTenantCloudSpaceMismatch),
			cond(kubeoperav1alpha1.ConditionStalled, metav1.ConditionTrue, kubeoperav1alpha1.ReasonTenantCloudSpaceMismatch)), "Degraded"},
		{"synced", app(2, ready, synced), "Healthy"},
		{"synced an older generation", app(1, ready, synced), "Progressing"},
	} {
		g.Expect(argoHealth(t, appCheck, c.obj)).To(Equal(c.want), c.name)
	}
}

var (
	celReasonList = regexp.MustCompile(`(?s)c\.reason in\s*\[(.*?)\]`)
	luaTerminal   = regexp.MustCompile(`(?s)local terminal = \{(.*?)\}`)
	quotedWord    = regexp.MustCompile(`'(\w+)'`)
	luaKey        = regexp.MustCompile(`(\w+)=true`)
)

// The health checks of docs/controlplane.md classify exactly the reconciler's terminal reasons
// (datasancev3.TerminalReasons) as failed, in the Flux CEL list and in the Argo CD Lua table.
func TestHealthChecksListEveryTerminalReason(t *testing.T) {
	g := NewWithT(t)
	text := doc(t, "controlplane.md")
	words := func(re *regexp.Regexp, s string) []string {
		var out []string
		for _, m := range re.FindAllStringSubmatch(s, -1) {
			out = append(out, m[1])
		}
		return out
	}
	cel := celReasonList.FindStringSubmatch(fluxBlock.FindStringSubmatch(text)[1])
	g.Expect(cel).NotTo(BeNil(), "no reason list in the Flux health check")
	g.Expect(words(quotedWord, cel[1])).To(ConsistOf(datasancev3.TerminalReasons), "Flux CEL failed list")
	lua := luaTerminal.FindStringSubmatch(argoChecks(t, "controlplane.md")["datasance.com_ControlPlane"])
	g.Expect(lua).NotTo(BeNil(), "no terminal table in the Argo CD health check")
	g.Expect(words(luaKey, lua[1])).To(ConsistOf(datasancev3.TerminalReasons), "Argo CD Lua terminal table")
}
