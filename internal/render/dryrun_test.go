package render_test

// Property: for any KubeOperaApp spec, the API server refuses the CR at admission, or
// render.Validate refuses it (what the pod validation refuses in the rendered Deployment and CEL
// cannot check at admission), or every object the operator renders from it (the Git manifests
// Flux applies, the Flux objects, the namespace and the copied Secrets) is accepted by a real API
// server (server-side dry run). Rendering never panics.
//
// It is a Go fuzz target: the input is the generator's choice stream (testenv.ChoiceRand), which
// mixes ordinary values with the edges of what admission allows and values the pod, Service and
// Ingress validation refuse. `go test` runs the committed seed corpus (testdata/fuzz/<target>/,
// one input per outcome class, written by RENDER_WRITE_CORPUS=1); `make fuzz` (hack/fuzz.sh)
// fuzzes it for FUZZTIME. One API server per run (testenv.Shared).

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	kubeoperav1alpha1 "github.com/kubeopera/kubeopera-operator/api/kubeopera/v1alpha1"
	"github.com/kubeopera/kubeopera-operator/internal/apptest"
	"github.com/kubeopera/kubeopera-operator/internal/render"
	"github.com/kubeopera/kubeopera-operator/test/testenv"
)

func TestMain(m *testing.M) {
	code := m.Run()
	if err := testenv.StopShared(); err != nil {
		fmt.Fprintln(os.Stderr, "stop the API server:", err)
	}
	os.Exit(code)
}

var tally testenv.DryRunTally

func FuzzRenderedObjectsPassServerDryRun(f *testing.F) {
	if testing.Short() {
		f.Skip("-short: needs envtest and the Flux CRDs")
	}
	fluxCRDs, err := apptest.FluxCRDDir()
	if err != nil {
		f.Fatal(err)
	}
	opts := testenv.Options{ExtraCRDDirs: []string{fluxCRDs}}
	f.Add([]byte{}) // every draw from the hash of the empty input
	if os.Getenv("RENDER_WRITE_CORPUS") != "" {
		writeCorpus(f, opts)
	}
	f.Cleanup(func() {
		f.Log(tally.String())
		if !testenv.Fuzzing() && !tally.Balanced() {
			f.Errorf("generator out of balance: %s", tally.String())
		}
	})
	// Started here, before f.Fuzz: under -fuzz this is the coordinator, whose API server the
	// workers connect to (testenv.Shared).
	if _, err := testenv.Shared(opts); err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, choices []byte) {
		env, err := testenv.Shared(opts)
		if err != nil {
			t.Fatal(err)
		}
		refusedBy, objects := checkApp(t, env.Client, genApp(testenv.ChoiceRand(choices)))
		tally.Add(refusedBy, objects)
	})
}

// writeCorpus replaces the committed corpus: the first input of each outcome (the field that
// refused it, or the families of fields an admitted spec sets).
func writeCorpus(f *testing.F, opts testenv.Options) {
	env, err := testenv.Shared(opts)
	if err != nil {
		f.Fatal(err)
	}
	corpus := testenv.CorpusClasses{MaxAdmitted: 20}
	classes, err := testenv.WriteCorpus(".", "FuzzRenderedObjectsPassServerDryRun", 4000, 48, func(in []byte) string {
		app := genApp(testenv.ChoiceRand(in))
		refusedBy, _ := checkApp(f, env.Client, app)
		return corpus.Class(refusedBy, families(app))
	})
	if err != nil {
		f.Fatal(err)
	}
	f.Logf("corpus: %d inputs: %v", len(classes), classes)
}

// families names the optional field families an admitted spec sets.
func families(app *kubeoperav1alpha1.KubeOperaApp) string {
	a := app.Spec.App
	var out []string
	for name, set := range map[string]bool{
		"ports": len(a.Ports) > 1, "env": len(a.Env) > 0, "resources": len(a.Resources.Limits)+len(a.Resources.Requests) > 0,
		"probes": a.LivenessProbe != nil || a.ReadinessProbe != nil, "security": a.Security != nil,
		"ingress": app.Spec.Ingress != nil, "registry": app.Spec.Registry != nil, "gitSecret": app.Spec.Git.FluxSecretRef != nil,
	} {
		if set {
			out = append(out, name)
		}
	}
	slices.Sort(out)
	return strings.Join(out, ",")
}

var namespaces sync.Map

func ensureNS(t testing.TB, c client.Client, name string) {
	if _, done := namespaces.Load(name); done {
		return
	}
	err := c.Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatalf("namespace %s: %v", name, err)
	}
	namespaces.Store(name, true)
}

// checkApp is the property for one spec. It returns what refused the spec ("" when admitted
// and rendered) and how many rendered objects it sent.
func checkApp(t testing.TB, c client.Client, app *kubeoperav1alpha1.KubeOperaApp) (string, int) {
	ctx := context.Background()
	spec, _ := json.Marshal(app.Spec)
	for _, ns := range hostNamespaces {
		ensureNS(t, c, ns)
	}
	// Admission: the defaulted object the reconciler would read, or a refusal.
	created := app.DeepCopy()
	refusedBy, err := testenv.AdmitDryRun(ctx, c, created)
	if err != nil {
		t.Fatalf("create: %v\nname %s/%s spec %s", err, app.Namespace, app.Name, spec)
	}
	if refusedBy != "" {
		return refusedBy, 0
	}
	if err := render.Validate(created); err != nil {
		var invalid *render.InvalidSpecError
		if !errors.As(err, &invalid) || len(invalid.Errs) == 0 {
			t.Fatalf("render.Validate: not an InvalidSpecError: %v", err)
		}
		return "render:" + fieldFamily(invalid.Errs[0]), 0
	}
	objs, err := renderAll(created)
	if err != nil {
		t.Errorf("admitted but not renderable: %v\nname %s/%s spec %s", err, app.Namespace, app.Name, spec)
		return "", 0
	}
	for _, o := range objs {
		if ns := o.GetNamespace(); ns != "" {
			ensureNS(t, c, ns)
		}
		// A Namespace of an earlier spec exists already: AlreadyExists comes after validation.
		if err := c.Create(ctx, o, client.DryRunAll); err != nil && !apierrors.IsAlreadyExists(err) {
			t.Errorf("rendered %s %s/%s refused: %v\nname %s/%s spec %s", o.GetObjectKind().GroupVersionKind().Kind,
				o.GetNamespace(), o.GetName(), err, app.Namespace, app.Name, spec)
		}
	}
	return "", len(objs)
}

// fieldFamily is the field a render.Validate error names, without indexes and keys.
func fieldFamily(e *field.Error) string {
	f := e.Field
	for {
		i := strings.IndexByte(f, '[')
		if i < 0 {
			return f
		}
		j := strings.IndexByte(f[i:], ']')
		if j < 0 {
			return f
		}
		f = f[:i] + f[i+j+1:]
	}
}

// renderAll is every object the App Controller makes from an app: the files it commits (parsed
// back from the YAML, exactly what Flux applies), the Flux GitRepository and Kustomization, the
// app namespace and the copied Git and registry Secrets in the vCluster.
func renderAll(app *kubeoperav1alpha1.KubeOperaApp) ([]client.Object, error) {
	files, err := render.Manifests(app)
	if err != nil {
		return nil, err
	}
	var out []client.Object
	for name, b := range files {
		if name == render.FileKustomization {
			continue
		}
		u := &unstructured.Unstructured{}
		if err := yaml.Unmarshal(b, &u.Object); err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		out = append(out, u)
	}
	repo, err := render.GitRepository(app, render.Path(app, render.DefaultPathPrefix))
	if err != nil {
		return nil, err
	}
	ks, err := render.Kustomization(app, render.Path(app, render.DefaultPathPrefix))
	if err != nil {
		return nil, err
	}
	out = append(out, repo, ks, render.AppNamespace(app))
	if app.Spec.Git.FluxSecretRef != nil {
		out = append(out, render.FluxGitSecret(app, map[string][]byte{
			"username": []byte("git"), "password": []byte("p"), "token": []byte("t"),
			"identity": []byte("key"), "known_hosts": []byte("host ssh-ed25519 AAAA"),
		}))
	}
	if app.Spec.Registry != nil {
		out = append(out, render.RegistrySecret(app, &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Name: app.Spec.Registry.SecretRef.Name, Namespace: app.Namespace},
			Type:       corev1.SecretTypeDockerConfigJson,
			Data:       map[string][]byte{corev1.DockerConfigJsonKey: []byte(`{"auths":{}}`)},
		}))
	}
	// The namespace object itself is created, the others are created in it.
	for _, o := range out {
		if o.GetNamespace() == "" && o.GetObjectKind().GroupVersionKind().Kind != "Namespace" {
			return nil, fmt.Errorf("%T %s has no namespace", o, o.GetName())
		}
	}
	return out, nil
}

// The generator. Each field is drawn from values that are ordinary, at the edge of what the CRD
// allows, or wrong for the objects rendered from it.

var hostNamespaces = []string{"team-a", strings.Repeat("n", 63)}

func pick[T any](r *rand.Rand, xs ...T) T { return xs[r.IntN(len(xs))] }

func someOdd[T any](r *rand.Rand, maxN int, ordinary []T, odds ...T) []T {
	k := r.IntN(maxN + 1)
	var out []T
	for range k {
		out = append(out, odd(r, ordinary, odds...))
	}
	return out
}

// odd returns one of the odd values one time in forty, else one of the ordinary ones, so that
// most specs are admitted and each odd value is still tried often.
func odd[T any](r *rand.Rand, ordinary []T, odd ...T) T {
	if len(odd) > 0 && r.IntN(40) == 0 {
		return pick(r, odd...)
	}
	return pick(r, ordinary...)
}

func genApp(r *rand.Rand) *kubeoperav1alpha1.KubeOperaApp {
	i := r.IntN(1000)
	name := odd(r, []string{"web", "a", "api-v2", "a" + strings.Repeat("b", 61) + "c", "x" + strconv.Itoa(i)}, "Web", "web.v2", "-web")
	app := &kubeoperav1alpha1.KubeOperaApp{
		ObjectMeta: metav1.ObjectMeta{Namespace: pick(r, hostNamespaces...), Name: name},
		Spec: kubeoperav1alpha1.KubeOperaAppSpec{
			CloudSpaceID:    pick(r, "cs-1", "x", strings.Repeat("c", 253)),
			TenantCRName:    odd(r, []string{"", "", "tenant-a", "t.a"}, "Tenant"),
			TargetNamespace: odd(r, []string{"", "", "shop", strings.Repeat("t", 63)}, "Shop"),
			App: kubeoperav1alpha1.AppSpec{
				Image:          odd(r, []string{"nginx:1.27", "ghcr.io/example/web@sha256:" + strings.Repeat("a", 64), "a"}, " nginx"),
				Replicas:       pick(r, nil, ptr.To[int32](0), ptr.To[int32](3), ptr.To[int32](1000)),
				Ports:          genPorts(r),
				Env:            someOdd(r, 3, envPalette[:6], envPalette[6:]...),
				Command:        pick(r, nil, []string{"/bin/app"}, []string{""}),
				Args:           pick(r, nil, []string{"--x=y", ""}),
				Resources:      odd(r, resourcePalette[:4], resourcePalette[4:]...),
				LivenessProbe:  odd(r, probePalette[:4], probePalette[4:]...),
				ReadinessProbe: odd(r, probePalette[:4], probePalette[4:]...),
				Security:       odd(r, securityPalette[:4], securityPalette[4:]...),
			},
			Git: kubeoperav1alpha1.GitSpec{
				URL:    odd(r, []string{"https://git.example.com/t/apps.git", "ssh://git@example.com/apps.git", "http://h/x"}, "git@github.com:x.git"),
				Branch: odd(r, []string{"", "main", "release/1.x", "v1.2_x"}, "-bad"),
				Path:   odd(r, []string{"", "", "apps/web", "a/b/c/d", "deploy.d/_x"}, "a/../b", ".git"),
				SecretRef: pick(r, nil, &kubeoperav1alpha1.LocalSecretReference{Name: "git-creds"},
					&kubeoperav1alpha1.LocalSecretReference{Name: "git.creds.v1"}),
			},
			Registry: pick(r, nil, &kubeoperav1alpha1.RegistrySpec{SecretRef: kubeoperav1alpha1.LocalSecretReference{Name: "regcred"}}),
			Ingress:  odd(r, ingressPalette[:5], ingressPalette[5:]...),
			Flux: kubeoperav1alpha1.FluxSpec{
				Interval:  odd(r, []string{"", "1m", "30s", "1h30m", "1.5h", "10ms"}, "0s", "0ms", "0.0m"),
				Namespace: pick(r, "", "flux-system", "gitops"),
			},
		},
	}
	if ref := app.Spec.Git.SecretRef; ref != nil {
		// Flux gets read-only credentials of its own (derived, so the generator's sequence is
		// unchanged).
		app.Spec.Git.FluxSecretRef = &kubeoperav1alpha1.LocalSecretReference{Name: ref.Name + "-ro"}
	}
	return app
}

func genPorts(r *rand.Rand) []kubeoperav1alpha1.AppPort {
	names := []string{"http", "metrics", "h2c-1", "a23456789012345", "grpc", "dns"}
	r.Shuffle(len(names), func(i, j int) { names[i], names[j] = names[j], names[i] })
	k := r.IntN(4)
	var out []kubeoperav1alpha1.AppPort
	for i := range k {
		out = append(out, kubeoperav1alpha1.AppPort{
			Name:          odd(r, names[i:i+1], "1234", "a--b", "toolongportname1", names[0]),
			ContainerPort: odd(r, []int32{int32(1000 + i), int32(8080 + i)}, 0, 80),
			// 80 for every port: the same Service port twice (refused by render.Validate unless
			// the protocols differ).
			ServicePort: odd(r, []int32{0, int32(80 + i), int32(443 + i), int32(65535 - i)}, 80),
			Protocol:    pick(r, corev1.Protocol(""), corev1.ProtocolTCP, corev1.ProtocolUDP, corev1.ProtocolSCTP),
		})
	}
	return out
}

// The odd env and resource values the pod validation refuses but admission cannot (CEL over
// corev1.EnvVar and corev1.ResourceList exceeds the cost budget), and the duplicate Service
// ports, are refused by render.Validate.
//
// envPalette, resourcePalette, probePalette, securityPalette and ingressPalette: the ordinary
// values first (6, 4, 4, 4 and 5 of them), then the odd ones.
var envPalette = []corev1.EnvVar{
	{Name: "LOG_LEVEL", Value: "info"},
	{Name: "with.dot-and-dash", Value: "x"},
	{Name: "FROM_SECRET", ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{
		LocalObjectReference: corev1.LocalObjectReference{Name: "s"}, Key: "k"}}},
	{Name: "POD_NAME", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.name"}}},
	{Name: "HOST_IPS", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{APIVersion: "v1", FieldPath: "status.hostIPs"}}},
	{Name: "MEM", ValueFrom: &corev1.EnvVarSource{ResourceFieldRef: &corev1.ResourceFieldSelector{Resource: "limits.memory", Divisor: resource.MustParse("1Mi")}}},
	{Name: "EMPTY"},
	{Name: "LABEL", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.labels['app.kubernetes.io/name']"}}},
	{Name: "A=B", Value: "x"},
	{Name: "TAB\tNAME", Value: "x"},
	{Name: "POLICY", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "spec.restartPolicy"}}},
	{Name: "LABELS", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.labels"}}},
	{Name: "BAD_KEY", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.annotations['a b']"}}},
	{Name: "V2", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{APIVersion: "v2", FieldPath: "metadata.name"}}},
	{Name: "OTHER", ValueFrom: &corev1.EnvVarSource{ResourceFieldRef: &corev1.ResourceFieldSelector{ContainerName: "sidecar", Resource: "limits.cpu"}}},
	{Name: "GPU", ValueFrom: &corev1.EnvVarSource{ResourceFieldRef: &corev1.ResourceFieldSelector{Resource: "limits.example.com/gpu"}}},
	{Name: "CPU_KI", ValueFrom: &corev1.EnvVarSource{ResourceFieldRef: &corev1.ResourceFieldSelector{Resource: "requests.cpu", Divisor: resource.MustParse("1Ki")}}},
	{Name: "BOTH", Value: "x", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.name"}}},
	{Name: "NO_SOURCE", ValueFrom: &corev1.EnvVarSource{}},
}

var resourcePalette = []corev1.ResourceRequirements{
	{},
	{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("50m"), corev1.ResourceMemory: resource.MustParse("64Mi")},
		Limits: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("256Mi")}},
	{Limits: corev1.ResourceList{"example.com/gpu": resource.MustParse("1")}},
	{Requests: corev1.ResourceList{corev1.ResourceEphemeralStorage: resource.MustParse("1Gi"), corev1.ResourceMemory: resource.MustParse("64Mi"),
		"hugepages-2Mi": resource.MustParse("4Mi")}, Limits: corev1.ResourceList{"hugepages-2Mi": resource.MustParse("4Mi")}},
	{Requests: corev1.ResourceList{"gpu": resource.MustParse("1")}},
	{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2")}, Limits: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")}},
	{Requests: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("-1Mi")}},
	{Limits: corev1.ResourceList{corev1.ResourceEphemeralStorage: resource.MustParse("-1")}},
	{Limits: corev1.ResourceList{"hugepages-2Mi": resource.MustParse("4Mi")}},
	{Limits: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("64Mi"), "hugepages-2Mi": resource.MustParse("3Mi")}},
	{Requests: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("64Mi"), "hugepages-1Gi": resource.MustParse("1Gi")}},
	{Requests: corev1.ResourceList{"example.com/gpu": resource.MustParse("1")}, Limits: corev1.ResourceList{"example.com/gpu": resource.MustParse("2")}},
	{Limits: corev1.ResourceList{"example.com/gpu": resource.MustParse("500m")}},
	{Claims: []corev1.ResourceClaim{{Name: "gpu"}}},
}

var probePalette = []*corev1.Probe{
	nil,
	{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/healthz", Port: intstr.FromString("http")}}},
	{ProbeHandler: corev1.ProbeHandler{TCPSocket: &corev1.TCPSocketAction{Port: intstr.FromInt32(8080)}}, PeriodSeconds: 5},
	{ProbeHandler: corev1.ProbeHandler{Exec: &corev1.ExecAction{Command: []string{"true"}}}},
	{PeriodSeconds: 10},
	{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Port: intstr.FromInt32(0)}}},
	{ProbeHandler: corev1.ProbeHandler{TCPSocket: &corev1.TCPSocketAction{Port: intstr.FromInt32(80)}}, TimeoutSeconds: -1},
}

var securityPalette = []*kubeoperav1alpha1.AppSecurity{
	nil,
	{RunAsUser: ptr.To[int64](1000), RunAsGroup: ptr.To[int64](1000), FSGroup: ptr.To[int64](2000)},
	{AddCapabilities: []kubeoperav1alpha1.Capability{kubeoperav1alpha1.CapabilityNetBindService}},
	{ReadOnlyRootFilesystem: ptr.To(true)},
	{RunAsUser: ptr.To[int64](0)},
	{AddCapabilities: []kubeoperav1alpha1.Capability{"SYS_ADMIN"}},
}

var ingressPalette = []*kubeoperav1alpha1.IngressSpec{
	nil,
	{Host: "web.example.com"},
	{Host: "*.example.com", TLS: true, ClusterIssuer: "letsencrypt"},
	{Host: "web.example.com", ClassName: "nginx"},
	{Host: strings.Repeat("h", 63) + "." + strings.Repeat("d", 63) + ".example.com", TLS: true, ClusterIssuer: "x"},
	{TLS: true, ClusterIssuer: "le"},
	{ClassName: "nginx"},
	{Host: "Web.example.com"},
}
