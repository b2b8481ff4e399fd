package olmscope

import (
	"os"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
)

// The tables are what a real kube-apiserver serves: every resource it lists is in them with the
// same scope. Entries it does not serve (alpha APIs, off by default) are allowed.
func TestTablesMatchTheAPIServer(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: needs kube-apiserver and etcd")
	}
	if os.Getenv("KUBEBUILDER_ASSETS") == "" {
		t.Fatal("KUBEBUILDER_ASSETS is not set: run make test, or set it to hack/tool.sh --dir envtest")
	}
	env := &envtest.Environment{}
	cfg, err := env.Start()
	if err != nil {
		t.Fatalf("start kube-apiserver: %v", err)
	}
	t.Cleanup(func() {
		if err := env.Stop(); err != nil {
			t.Errorf("stop kube-apiserver: %v", err)
		}
	})
	dc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	_, lists, err := dc.ServerGroupsAndResources()
	if err != nil {
		t.Fatalf("discovery: %v", err)
	}
	table := Builtins()
	served := 0
	for _, list := range lists {
		gv, err := schema.ParseGroupVersion(list.GroupVersion)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range list.APIResources {
			if strings.Contains(r.Name, "/") {
				continue // a subresource has its resource's scope
			}
			served++
			key := gv.Group + "/" + r.Name
			cluster, known := table[key]
			switch {
			case !known:
				t.Errorf("%s (%s) is served but not in the tables", key, scope(!r.Namespaced))
			case cluster == r.Namespaced:
				t.Errorf("%s is %s on the API server, %s in the tables", key, scope(!r.Namespaced), scope(cluster))
			}
		}
	}
	if served < 40 {
		t.Fatalf("the API server listed only %d resources", served)
	}
}

func scope(cluster bool) string {
	if cluster {
		return "cluster-scoped"
	}
	return "namespaced"
}

func TestBuiltinsIsACopy(t *testing.T) {
	a := Builtins()
	if !a["/namespaces"] || a["/secrets"] {
		t.Fatalf("namespaces cluster-scoped, secrets namespaced: got %v, %v", a["/namespaces"], a["/secrets"])
	}
	a["/namespaces"] = false
	if !Builtins()["/namespaces"] {
		t.Fatal("a caller's change leaked into the tables")
	}
}
