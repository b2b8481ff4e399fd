package resources_test

// Property: for any ControlPlane spec, either the API server refuses the CR at admission, or every
// object these builders render from it is accepted by a real API server (server-side apply with
// dryRun=All, as the reconciler applies them). The specs are the sample ControlPlane with fields
// drawn by a seeded generator from ordinary values, the edges of what the CRD allows, and values
// the Service, Ingress, PVC and pod validation refuse.
//
//	CP_DRYRUN_ITERATIONS (default 60, make test) and CP_DRYRUN_SEED (default: a fixed seed)
//	choose the run; `make dryrun-long` runs DRYRUN_ITERATIONS (2000) specs from a time-based seed.

import (
	"context"
	"encoding/json"
	"errors"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	datasancev3 "github.com/kubeopera/kubeopera-operator/api/datasance/v3"
	"github.com/kubeopera/kubeopera-operator/controllers/controlplane/internal/resources"
	"github.com/kubeopera/kubeopera-operator/test/testenv"
)

func envInt(name string, def int) int {
	if v, err := strconv.Atoi(os.Getenv(name)); err == nil {
		return v
	}
	return def
}

func TestRenderedOperandsPassServerDryRun(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: needs envtest")
	}
	env := testenv.StartForTest(t, testenv.Options{})
	ctx := context.Background()
	const ns = "cp-dryrun"
	if err := env.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
		t.Fatal(err)
	}
	sample := loadSample(t)
	n := envInt("CP_DRYRUN_ITERATIONS", 60)
	seed := uint64(envInt("CP_DRYRUN_SEED", 20261201))
	t.Logf("seed %d, %d specs (CP_DRYRUN_SEED=%d reproduces)", seed, n, seed)
	rng := rand.New(rand.NewPCG(seed, 0))
	dry := client.NewDryRunClient(env.Client)

	var admitted, refused, objects int
	refusedBy := map[string]int{}
	for i := range n {
		cp := genControlPlane(rng, sample, i)
		cp.Namespace = ns
		spec, _ := json.Marshal(cp.Spec)
		created := cp.DeepCopy()
		if err := dry.Create(ctx, created); err != nil {
			if !apierrors.IsInvalid(err) && !apierrors.IsBadRequest(err) {
				t.Fatalf("spec %d: create: unexpected error %v", i, err)
			}
			refusedBy[admissionField(err)]++
			refused++
			continue
		}
		admitted++
		if created.UID == "" { // the owner references need one
			created.UID = "00000000-0000-0000-0000-000000000001"
		}
		for name, ac := range renderOperands(created) {
			objects++
			if err := dry.Apply(ctx, ac, client.FieldOwner("kubeopera-operator"), client.ForceOwnership); err != nil {
				t.Errorf("spec %d: rendered %s refused: %v\nname %s spec %s", i, name, err, cp.Name, spec)
			}
		}
	}
	t.Logf("%d specs: %d admitted, %d refused at admission (by field: %v); %d rendered objects sent with dryRun=All",
		n, admitted, refused, refusedBy, objects)
	if admitted < n/5 || refused == 0 {
		t.Errorf("generator out of balance: %d admitted, %d refused of %d", admitted, refused, n)
	}
}

// admissionField is the first field an admission refusal names.
func admissionField(err error) string {
	var status apierrors.APIStatus
	if errors.As(err, &status) && status.Status().Details != nil && len(status.Status().Details.Causes) > 0 {
		return status.Status().Details.Causes[0].Field
	}
	return "other"
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

func loadSample(t *testing.T) *datasancev3.ControlPlane {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(testenv.Root(), "config", "samples", "datasance_v3_controlplane.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	cp := &datasancev3.ControlPlane{}
	if err := yaml.Unmarshal(b, cp); err != nil {
		t.Fatal(err)
	}
	return cp
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

func genControlPlane(r *rand.Rand, sample *datasancev3.ControlPlane, i int) *datasancev3.ControlPlane {
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
