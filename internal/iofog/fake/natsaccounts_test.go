package fake_test

import (
	"context"
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	fakeclient "sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/kubeopera/kubeopera-operator/internal/iofog"
	"github.com/kubeopera/kubeopera-operator/internal/iofog/fake"
)

// The Controller's NATS reconcile writes the hub bundle as one JSON Patch of "replace"
// operations, one per key of its bundle (the system account and the application accounts, not
// a leaf's system account); it skips a missing ConfigMap and an equal one. Against a real API
// server (controllers/controlplane, TestNatsBundleGrowsWithTheController) the patch adds keys
// and keeps the others.
func TestAddNatsAccountPatchesTheHubBundle(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	srv := fake.NewServer()
	t.Cleanup(srv.Close)
	sys := srv.Bootstrap()

	var patches []client.Patch
	var patchData [][]byte
	kube := fakeclient.NewClientBuilder().WithInterceptorFuncs(interceptor.Funcs{
		Patch: func(_ context.Context, _ client.WithWatch, obj client.Object, p client.Patch, _ ...client.PatchOption) error {
			data, err := p.Data(obj)
			patches, patchData = append(patches, p), append(patchData, data)
			return err
		},
	}).Build()
	srv.SetKubernetes(kube, "edge")

	app := 1
	g.Expect(srv.AddNatsAccount(ctx, iofog.NatsAccount{Name: "a", PublicKey: "AAPP", JWT: "app.jwt", ApplicationID: &app})).To(Succeed())
	g.Expect(patches).To(BeEmpty(), "the Controller never creates the bundle")

	g.Expect(kube.Create(ctx, &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Namespace: "edge", Name: fake.HubJWTBundleConfigMap},
		Data:       map[string]string{sys.SystemAccountPublicKey + ".jwt": sys.SystemAccountJwt, "AOLD.jwt": "kept"},
	})).To(Succeed())
	g.Expect(srv.AddNatsAccount(ctx, iofog.NatsAccount{Name: "leaf", PublicKey: "ALEAF", JWT: "leaf.jwt", IsLeafSystem: true})).To(Succeed())
	g.Expect(patches).To(HaveLen(1))
	g.Expect(patches[0].Type()).To(Equal(types.JSONPatchType))
	// One operation per key, in key order; the system account's key is random, so the order
	// of the two operations is computed, not written down.
	app0 := `{"op":"replace","path":"/data/AAPP.jwt","value":"app.jwt"}`
	sys0 := `{"op":"replace","path":"/data/` + sys.SystemAccountPublicKey + `.jwt","value":"` + sys.SystemAccountJwt + `"}`
	ops := "[" + app0 + "," + sys0 + "]"
	if sys.SystemAccountPublicKey+".jwt" < "AAPP.jwt" {
		ops = "[" + sys0 + "," + app0 + "]"
	}
	g.Expect(patchData[0]).To(MatchJSON(ops))

	// The bundle already holds exactly the Controller's: a leaf's account changes nothing of it.
	g.Expect(kube.Delete(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "edge", Name: fake.HubJWTBundleConfigMap}})).To(Succeed())
	g.Expect(kube.Create(ctx, &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Namespace: "edge", Name: fake.HubJWTBundleConfigMap},
		Data:       map[string]string{sys.SystemAccountPublicKey + ".jwt": sys.SystemAccountJwt, "AAPP.jwt": "app.jwt"},
	})).To(Succeed())
	g.Expect(srv.AddNatsAccount(ctx, iofog.NatsAccount{Name: "leaf2", PublicKey: "ALEAF2", JWT: "leaf2.jwt", IsLeafSystem: true})).To(Succeed())
	g.Expect(patches).To(HaveLen(1), "an equal bundle is not written")

	srv.SetKubernetes(nil, "")
	g.Expect(srv.AddNatsAccount(ctx, iofog.NatsAccount{Name: "b", PublicKey: "AB", JWT: "b.jwt", ApplicationID: &app})).To(Succeed())
	g.Expect(patches).To(HaveLen(1), "no Kubernetes target, no write")
}

// The NATS accounts are part of the Controller's database: a Controller that restarts on its
// data directory (the SQLite claim) still lists them, one on a new directory or wiped does not.
func TestNatsAccountsLiveInTheDatabase(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	srv := fake.NewServer()
	t.Cleanup(srv.Close)
	volume := t.TempDir()
	g.Expect(srv.Restart(volume)).To(Succeed())
	app := 7
	g.Expect(srv.AddNatsAccount(ctx, iofog.NatsAccount{Name: "a", PublicKey: "AAPP", JWT: "app.jwt", ApplicationID: &app})).To(Succeed())
	names := func() []string {
		var out []string
		for _, a := range srv.NatsAccounts() {
			out = append(out, a.Name)
		}
		return out
	}
	g.Expect(names()).To(Equal([]string{"SYS", "a"}))

	g.Expect(srv.Restart(volume)).To(Succeed())
	g.Expect(names()).To(Equal([]string{"SYS", "a"}), "restarted on its claim")
	g.Expect(srv.NatsAccounts()[1]).To(HaveField("ApplicationID", HaveValue(Equal(7))))

	// Listing creates nothing: on an empty database there is no account, not even the system
	// account, until a NATS call makes the operator.
	g.Expect(srv.Restart(t.TempDir())).To(Succeed())
	g.Expect(names()).To(BeEmpty(), "a new volume is a new database")
	g.Expect(srv.Restart(volume)).To(Succeed())
	g.Expect(names()).To(Equal([]string{"SYS", "a"}))
	srv.Wipe()
	g.Expect(names()).To(BeEmpty(), "wiped")
	srv.Bootstrap()
	g.Expect(names()).To(Equal([]string{"SYS"}), "the operator made anew")
}
