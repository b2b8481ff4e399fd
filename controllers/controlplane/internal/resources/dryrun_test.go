package resources_test

// Property: for any ControlPlane spec, either the API server refuses the CR at admission, or every
// object these builders render from it is accepted by a real API server (server-side apply with
// dryRun=All, as the reconciler applies them), and rendering never panics. The specs are the
// sample ControlPlane with fields drawn from ordinary values, the edges of what the CRD allows,
// and values the Service, Ingress, PVC and pod validation refuse.
//
// It is a Go fuzz target: the input is the generator's choice stream (testenv.ChoiceRand). `go
// test` runs the committed seed corpus (testdata/fuzz/<target>/, one input per outcome class,
// written by CP_WRITE_CORPUS=1); `make fuzz` (hack/fuzz.sh) fuzzes it for FUZZTIME. One API
// server per run (testenv.Shared).

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	datasancev3 "github.com/kubeopera/kubeopera-operator/api/datasance/v3"
	"github.com/kubeopera/kubeopera-operator/controllers/controlplane/internal/resources"
	"github.com/kubeopera/kubeopera-operator/internal/testfixture"
	"github.com/kubeopera/kubeopera-operator/test/testenv"
)

const dryRunNS = "cp-dryrun"

var (
	tally      testenv.DryRunTally
	dryRunOnce sync.Once
)

func FuzzRenderedOperandsPassServerDryRun(f *testing.F) {
	if testing.Short() {
		f.Skip("-short: needs envtest")
	}
	sample, err := testfixture.Sample()
	if err != nil {
		f.Fatal(err)
	}
	f.Add([]byte{}) // every draw from the hash of the empty input
	if os.Getenv("CP_WRITE_CORPUS") != "" {
		env := sharedEnv(f)
		corpus := testenv.CorpusClasses{MaxAdmitted: 16}
		classes, err := testenv.WriteCorpus(".", "FuzzRenderedOperandsPassServerDryRun", 4000, 40, func(in []byte) string {
			cp := genControlPlane(testenv.ChoiceRand(in), sample)
			refusedBy, _ := checkControlPlane(f, env, cp)
			return corpus.Class(refusedBy, cpFamilies(cp))
		})
		if err != nil {
			f.Fatal(err)
		}
		f.Logf("corpus: %d inputs: %v", len(classes), classes)
	}
	f.Cleanup(func() {
		f.Log(tally.String())
		if !testenv.Fuzzing() && !tally.Balanced() {
			f.Errorf("generator out of balance: %s", tally.String())
		}
	})
	// Started here, before f.Fuzz: under -fuzz this is the coordinator, whose API server the
	// workers connect to (testenv.Shared).
	sharedEnv(f)
	f.Fuzz(func(t *testing.T, choices []byte) {
		refusedBy, objects := checkControlPlane(t, sharedEnv(t), genControlPlane(testenv.ChoiceRand(choices), sample))
		tally.Add(refusedBy, objects)
	})
}

// sharedEnv is this process's API server, with the namespace the specs are created in.
func sharedEnv(t testing.TB) *testenv.Env {
	env, err := testenv.Shared(testenv.Options{})
	if err != nil {
		t.Fatal(err)
	}
	dryRunOnce.Do(func() {
		err = env.Client.Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: dryRunNS}})
		if apierrors.IsAlreadyExists(err) { // a fuzz worker: the coordinator created it
			err = nil
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	return env
}

func TestMain(m *testing.M) {
	code := m.Run()
	if err := testenv.StopShared(); err != nil {
		fmt.Fprintln(os.Stderr, "stop the API server:", err)
	}
	os.Exit(code)
}

// cpFamilies names the optional field families an admitted spec sets.
func cpFamilies(cp *datasancev3.ControlPlane) string {
	s := &cp.Spec
	return fmt.Sprintf("ingress=%t nats=%t sqlite=%t services=%t", s.Ingresses.Controller != nil, s.NatsEnabled(), s.UsesSQLite(),
		s.Services.Controller != nil || s.Services.Router != nil)
}

// checkControlPlane is the property for one spec: what refused it ("" when admitted and
// rendered) and how many rendered objects it sent.
func checkControlPlane(t testing.TB, env *testenv.Env, cp *datasancev3.ControlPlane) (string, int) {
	ctx := context.Background()
	cp.Namespace = dryRunNS
	spec, _ := json.Marshal(cp.Spec)
	created := cp.DeepCopy()
	refusedBy, err := testenv.AdmitDryRun(ctx, env.Client, created)
	if err != nil {
		t.Fatalf("create: %v\nname %s spec %s", err, cp.Name, spec)
	}
	if refusedBy != "" {
		return refusedBy, 0
	}
	if created.UID == "" { // the owner references need one
		created.UID = "00000000-0000-0000-0000-000000000001"
	}
	dry := client.NewDryRunClient(env.Client)
	objs := renderOperands(created)
	for name, ac := range objs {
		if err := dry.Apply(ctx, ac, client.FieldOwner("kubeopera-operator"), client.ForceOwnership); err != nil {
			t.Errorf("rendered %s refused: %v\nname %s spec %s", name, err, cp.Name, spec)
		}
	}
	return "", len(objs)
}

// renderOperands is every object the builders make for a ControlPlane, by name. The inputs the
// reconciler observes (a LoadBalancer address, hashes, the NATS server.conf) are fixed values.
func renderOperands(cp *datasancev3.ControlPlane) map[string]runtime.ApplyConfiguration {
	spec := &cp.Spec
	images := resources.Images{
		Controller: or(spec.Images.Controller, resources.DefaultControllerImage),
		Router:     or(spec.Images.Router, resources.DefaultRouterImage),
		Nats:       or(spec.Images.Nats, resources.DefaultNatsImage),
	}
	urls, _ := resources.ResolveControllerURLs(spec, "192.0.2.10")
	out := map[string]runtime.ApplyConfiguration{
		"Service controller":        resources.ControllerService(cp),
		"Deployment controller":     resources.ControllerDeployment(cp, images, urls, resources.ControllerPodHashes{Credentials: "c1", TLS: "t1"}),
		"Service router":            resources.RouterService(cp),
		"Deployment router":         resources.RouterDeployment(cp, images.Router, "t2"),
		"ConfigMap router":          resources.RouterConfigMap(cp, []byte(`{"x":1}`)),
		"ServiceAccount controller": resources.ServiceAccount(resources.MetaFor(cp, resources.ComponentController, resources.ControllerName), spec.Images.PullSecret),
		"ServiceAccount router":     resources.ServiceAccount(resources.MetaFor(cp, resources.ComponentRouter, resources.RouterName), spec.Images.PullSecret),
	}
	if spec.ControllerIngressMode() {
		out["Ingress controller"] = resources.ControllerIngress(cp)
	}
	if spec.UsesSQLite() {
		out["PVC controller-sqlite"] = resources.SqlitePVC(cp)
	}
	if spec.NatsEnabled() {
		out["Service nats-headless"] = resources.NatsHeadlessService(cp)
		out["Service nats"] = resources.NatsService(cp)
		out["Service nats-server"] = resources.NatsServerService(cp)
		out["StatefulSet nats"] = resources.NatsStatefulSet(cp, resources.NatsWorkload{Image: images.Nats, Storage: resources.DesiredNatsStorage(spec)})
		out["ConfigMap nats"] = resources.NatsConfigMap(cp, "port: 4222\n")
		out["ServiceAccount nats"] = resources.NatsServiceAccount(cp)
	}
	for k, v := range out {
		if isNil(v) {
			delete(out, k)
		}
	}
	return out
}

func isNil(v runtime.ApplyConfiguration) bool {
	rv := reflect.ValueOf(v)
	return v == nil || (rv.Kind() == reflect.Pointer && rv.IsNil())
}

func or(s, def string) string {
	if s != "" {
		return s
	}
	return def
}

func pick[T any](r *rand.Rand, xs ...T) T { return xs[r.IntN(len(xs))] }

// odd returns one of the odd values one time in forty, else one of the ordinary ones.
func odd[T any](r *rand.Rand, ordinary []T, odd ...T) T {
	if len(odd) > 0 && r.IntN(40) == 0 {
		return pick(r, odd...)
	}
	return pick(r, ordinary...)
}

func genService(r *rand.Rand) *datasancev3.ServiceSpec {
	return pick(r, nil, &datasancev3.ServiceSpec{
		Type:                  pick(r, corev1.ServiceType(""), corev1.ServiceTypeClusterIP, corev1.ServiceTypeNodePort, corev1.ServiceTypeLoadBalancer),
		Address:               odd(r, []string{"", "", "192.0.2.7"}, "not-an-ip"),
		Annotations:           odd(r, []map[string]string{nil, {"service.beta.kubernetes.io/x": "y"}, {"a_b.c": "1"}}, map[string]string{"bad key": "v"}),
		ExternalTrafficPolicy: pick(r, corev1.ServiceExternalTrafficPolicy(""), corev1.ServiceExternalTrafficPolicyLocal, corev1.ServiceExternalTrafficPolicyCluster),
	})
}

func genControlPlane(r *rand.Rand, sample *datasancev3.ControlPlane) *datasancev3.ControlPlane {
	i := r.IntN(1000)
	cp := sample.DeepCopy()
	cp.Name = odd(r, []string{"pot", "iofog", "cp-" + strconv.Itoa(i), "a" + strings.Repeat("b", 40)}, "Pot")
	s := &cp.Spec
	s.Services = datasancev3.Services{Controller: genService(r), Router: genService(r), Nats: genService(r), NatsServer: genService(r)}
	s.Ingresses.Controller = odd(r, []*datasancev3.ControllerIngress{nil, s.Ingresses.Controller,
		{Host: "c.example.com", SecretName: "controller-tls", Annotations: map[string]string{"nginx.ingress.kubernetes.io/x": "1"}},
		{Host: "*.example.com", IngressClassName: "nginx"}},
		&datasancev3.ControllerIngress{Host: "*.example.com", IngressClassName: "Nginx_Class", SecretName: "controller-tls"},
		&datasancev3.ControllerIngress{Host: "c.example.com", SecretName: "Bad_Secret"},
		&datasancev3.ControllerIngress{Host: "c.example.com", Annotations: map[string]string{"bad key": "1"}})
	if s.Ingresses.Router != nil && r.IntN(2) == 0 {
		s.Ingresses.Router = &datasancev3.RouterIngress{MessagePort: pick[int32](r, 0, 1, 5671, 65535), InteriorPort: pick[int32](r, 0, 5671, 55671), EdgePort: pick[int32](r, 0, 45671)}
	}
	s.Ingresses.Nats = pick(r, nil, &datasancev3.NatsIngress{ServerPort: pick[int32](r, 0, 4222, 65535), LeafPort: pick[int32](r, 0, 4222, 7422), MqttPort: pick[int32](r, 0, 1883)})
	s.Replicas = datasancev3.Replicas{Controller: pick[int32](r, 0, 1, 2, 5), Nats: odd(r, []*int32{nil, ptr.To[int32](2), ptr.To[int32](3)}, ptr.To[int32](1))}
	s.Images = datasancev3.Images{
		PullSecret: odd(r, []string{"", "regcred"}, "Bad_Name"),
		Controller: odd(r, []string{"", "ghcr.io/x/controller:1"}, " ghcr.io/x/c:1", "Registry/UPPER:1"),
		Router:     pick(r, "", "ghcr.io/x/router:1"),
		Nats:       odd(r, []string{"", "nats:2"}, "nats:bad tag"),
	}
	s.Controller.ConsolePort = odd(r, []int32{0, 8008, 1, 65535, 80}, 51121)
	s.Controller.LogLevel = pick(r, "", "info", "trace")
	s.Controller.PublicURL = odd(r, []string{"", "https://controller.example.com"}, "ftp://x")
	if r.IntN(3) == 0 {
		s.Database = datasancev3.Database{} // SQLite: the PVC
	}
	switch r.IntN(3) {
	case 0:
		s.Nats = nil
	case 1:
		s.Nats = &datasancev3.Nats{Enabled: ptr.To(false)}
	default:
		s.Nats = &datasancev3.Nats{Enabled: ptr.To(true), JetStream: &datasancev3.JetStream{
			StorageSize:      odd(r, []string{"", "10Gi", "1k", "5G"}, "0", "1.5Gi"),
			MemoryStoreSize:  pick(r, "", "1G", "512Mi"),
			StorageClassName: odd(r, []string{"", "fast", "ssd.example.com"}, "Bad_Class"),
		}}
	}
	return cp
}
