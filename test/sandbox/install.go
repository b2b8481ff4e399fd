package sandbox

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"sigs.k8s.io/controller-runtime/pkg/client"

	datasancev3 "github.com/kubeopera/kubeopera-operator/api/datasance/v3"
	tenantv1alpha1 "github.com/kubeopera/kubeopera-operator/api/external/tenant/v1alpha1"
	kubeoperav1alpha1 "github.com/kubeopera/kubeopera-operator/api/kubeopera/v1alpha1"
	"github.com/kubeopera/kubeopera-operator/internal/apptest"
	"github.com/kubeopera/kubeopera-operator/internal/tenant"
	"github.com/kubeopera/kubeopera-operator/test/testenv"
)

// samples are the objects of config/samples, typed.
type samples struct {
	controlPlanes []*datasancev3.ControlPlane
	apps          []*kubeoperav1alpha1.KubeOperaApp
}

// readSamples reads every <group>_<version>_<kind>.yaml of dir. A sample of another kind is an
// error: the sandbox would not know what it needs.
func readSamples(dir string) (*samples, error) {
	files, err := filepath.Glob(filepath.Join(dir, "*_*.yaml"))
	if err != nil {
		return nil, fmt.Errorf("list samples: %w", err)
	}
	if len(files) == 0 {
		return nil, fmt.Errorf("no samples in %s", dir)
	}
	decode := serializer.NewCodecFactory(testenv.Scheme()).UniversalDeserializer()
	out := &samples{}
	for _, f := range files {
		data, err := os.ReadFile(f) //nolint:gosec // G304: the samples of this repository
		if err != nil {
			return nil, fmt.Errorf("read sample: %w", err)
		}
		obj, _, err := decode.Decode(data, nil, nil)
		if err != nil {
			return nil, fmt.Errorf("parse sample %s: %w", filepath.Base(f), err)
		}
		switch o := obj.(type) {
		case *datasancev3.ControlPlane:
			out.controlPlanes = append(out.controlPlanes, o)
		case *kubeoperav1alpha1.KubeOperaApp:
			out.apps = append(out.apps, o)
		default:
			return nil, fmt.Errorf("sample %s: the sandbox does not install a %T", filepath.Base(f), obj)
		}
	}
	return out, nil
}

// bootstrapUsername is the embedded-mode admin the ControlPlane samples log in as (the fake
// Controller accepts one user; the first sample's wins).
func (s *samples) bootstrapUsername() string {
	for _, cp := range s.controlPlanes {
		if b := cp.Spec.Auth.Bootstrap; b != nil && b.Username != "" {
			return b.Username
		}
	}
	return "admin@example.com"
}

// fluxSecretName is the read-only Git Secret Flux fetches a sample app with: the one its
// spec.git.fluxSecretRef names, else <app>-flux-git, which install then references.
func fluxSecretName(app *kubeoperav1alpha1.KubeOperaApp) string {
	if ref := app.Spec.Git.FluxSecretRef; ref != nil {
		return ref.Name
	}
	return app.Name + "-flux-git"
}

// installInputs are what the sandbox made for the samples.
type installInputs struct {
	bootstrapPassword string
	gitURL            string
	gitSecret         map[string][]byte
	// gitReadOnlySecret is what Flux in the vCluster fetches with (a user of the sandbox Git
	// server that cannot push): the push credentials never enter the vCluster.
	gitReadOnlySecret map[string][]byte
	tenantKubeconfig  []byte
}

// install creates namespace Namespace and, for the samples, everything a real installation would
// have around them:
//   - for each ControlPlane, the bootstrap password Secret it references (the password the fake
//     Controller accepts);
//   - for each KubeOperaApp, the Tenant it names (Ready, labelled with its CloudSpace, as
//     tenant-controller leaves it), the Tenant's exported kubeconfig Secret vc-<tenant> (the
//     tenant API server), its Git credentials Secret, its read-only Git Secret for Flux
//     (fluxSecretName) and registry pull Secret;
//   - the samples, with two changes: an app's spec.git.url becomes the sandbox Git server's
//     tenant apps repository, and an app without spec.git.fluxSecretRef references its
//     read-only Git Secret.
func install(ctx context.Context, c client.Client, smp *samples, in installInputs, log logr.Logger) error {
	objs := []client.Object{&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: Namespace}}}
	for _, cp := range smp.controlPlanes {
		objs = append(objs, credentialSecrets(cp, in.bootstrapPassword)...)
	}
	tenants := map[string]string{} // name → CloudSpace
	for _, app := range smp.apps {
		name := app.Spec.TenantCRName
		if name == "" {
			name = "tenant-" + app.Spec.CloudSpaceID
		}
		tenants[name] = app.Spec.CloudSpaceID
		if ref := app.Spec.Git.SecretRef; ref != nil {
			objs = append(objs, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: Namespace, Name: ref.Name}, Data: in.gitSecret})
		}
		objs = append(objs, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: Namespace, Name: fluxSecretName(app), Labels: map[string]string{kubeoperav1alpha1.LabelFluxCredentials: "true"}}, Data: in.gitReadOnlySecret})
		if r := app.Spec.Registry; r != nil {
			objs = append(objs, &corev1.Secret{
				ObjectMeta: metav1.ObjectMeta{Namespace: Namespace, Name: r.SecretRef.Name},
				Type:       corev1.SecretTypeDockerConfigJson,
				Data:       map[string][]byte{corev1.DockerConfigJsonKey: []byte(`{"auths":{}}`)},
			})
		}
	}
	for name := range tenants {
		objs = append(objs, apptest.KubeconfigSecret(Namespace, tenant.SecretPrefix+name, in.tenantKubeconfig))
	}
	for _, o := range objs {
		if err := createOnce(ctx, c, o); err != nil {
			return err
		}
	}
	for name, cloudSpace := range tenants {
		if err := createReadyTenant(ctx, c, name, cloudSpace); err != nil {
			return err
		}
		log.Info(Simulated+" tenant-controller: Tenant is Ready with its exported kubeconfig", "tenant", Namespace+"/"+name,
			"cloudSpace", cloudSpace, "kubeconfigSecret", tenant.SecretPrefix+name)
	}
	for _, cp := range smp.controlPlanes {
		cp = cp.DeepCopy()
		cp.Namespace = Namespace
		if err := createOnce(ctx, c, cp); err != nil {
			return err
		}
	}
	for _, app := range smp.apps {
		app = app.DeepCopy()
		app.Namespace = Namespace
		log.Info("Sample app pushes to the sandbox Git server", "app", app.Name, "sample git.url", app.Spec.Git.URL, "sandbox git.url", in.gitURL)
		app.Spec.Git.URL = in.gitURL
		app.Spec.Git.FluxSecretRef = &kubeoperav1alpha1.LocalSecretReference{Name: fluxSecretName(app)}
		if err := createOnce(ctx, c, app); err != nil {
			return err
		}
	}
	return nil
}

// credentialSecrets are the Secrets the ControlPlane's credential references name, one per
// Secret name: the bootstrap password is the one the fake Controller accepts, every other
// credential (database password, client and session secrets, vault keys) a random string the
// fake never checks.
func credentialSecrets(cp *datasancev3.ControlPlane, bootstrapPassword string) []client.Object {
	byName := map[string]*corev1.Secret{}
	var out []client.Object
	for _, r := range cp.Spec.CredentialRefs() {
		sec, ok := byName[r.Ref.Name]
		if !ok {
			sec = &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: Namespace, Name: r.Ref.Name}, Data: map[string][]byte{}}
			byName[r.Ref.Name] = sec
			out = append(out, sec)
		}
		value := randomString()
		if r.Field == datasancev3.FieldBootstrapPasswordSecretRef {
			value = bootstrapPassword
		}
		sec.Data[r.Ref.Key] = []byte(value)
	}
	return out
}

// createReadyTenant creates the Tenant and writes its Ready condition through the status
// subresource, as tenant-controller does once the vCluster answers.
func createReadyTenant(ctx context.Context, c client.Client, name, cloudSpace string) error {
	t := &tenantv1alpha1.Tenant{ObjectMeta: metav1.ObjectMeta{
		Namespace: Namespace, Name: name, Labels: map[string]string{tenantv1alpha1.CloudSpaceLabel: cloudSpace},
	}}
	t.Spec.CloudSpaceID = cloudSpace
	if err := c.Create(ctx, t); err != nil {
		return fmt.Errorf("create Tenant %s: %w", name, err)
	}
	t.Status.Conditions = []metav1.Condition{{
		Type: tenantv1alpha1.ConditionReady, Status: metav1.ConditionTrue, Reason: "VClusterReady",
		Message:            Simulated + " by the sandbox: the tenant API server answers",
		LastTransitionTime: metav1.NewTime(time.Now().Truncate(time.Second)), ObservedGeneration: t.Generation,
	}}
	if err := c.Status().Update(ctx, t); err != nil {
		return fmt.Errorf("write Tenant %s status: %w", name, err)
	}
	return nil
}

func createFluxNamespace(ctx context.Context, env *testenv.Env) error {
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "flux-system"}}
	if err := env.Client.Create(ctx, ns); err != nil {
		return fmt.Errorf("create namespace flux-system in the tenant: %w", err)
	}
	return nil
}

// createOnce creates o; the API servers are fresh, so "already exists" means two samples
// asked for the same object (e.g. two apps sharing a Git Secret): the first one stays.
func createOnce(ctx context.Context, c client.Client, o client.Object) error {
	err := c.Create(ctx, o)
	if apierrors.IsAlreadyExists(err) {
		return nil
	}
	if err != nil {
		kind := strings.TrimPrefix(fmt.Sprintf("%T", o), "*")
		return fmt.Errorf("create %s %s: %w", kind, o.GetName(), err)
	}
	return nil
}
