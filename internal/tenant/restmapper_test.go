package tenant

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"

	. "github.com/onsi/gomega"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
)

// discoveryServer serves the legacy discovery documents of a few group-versions and records
// every path asked for. Group-versions can be installed while it runs (a CRD installed later).
type discoveryServer struct {
	mu       sync.Mutex
	served   map[string][]metav1.APIResource // group-version → its resources
	failing  bool                            // every answer is 503
	requests []string
}

func newDiscoveryServer() *discoveryServer {
	return &discoveryServer{served: map[string][]metav1.APIResource{
		"v1": {
			{Name: "secrets", SingularName: "secret", Namespaced: true, Kind: "Secret", Verbs: []string{"get", "list"}},
			{Name: "namespaces", SingularName: "namespace", Kind: "Namespace", Verbs: []string{"get", "list"}},
			{Name: "services/status", Namespaced: true, Kind: "Service", Verbs: []string{"get"}},
			{Name: "services", SingularName: "service", Namespaced: true, Kind: "Service", Verbs: []string{"get", "list"}},
		},
		"apps/v1": {
			{Name: "deployments", SingularName: "deployment", Namespaced: true, Kind: "Deployment", Verbs: []string{"get", "list"}},
		},
	}}
}

func (d *discoveryServer) install(gv string, resources ...metav1.APIResource) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.served[gv] = append(d.served[gv], resources...)
}

func (d *discoveryServer) paths() []string {
	d.mu.Lock()
	defer d.mu.Unlock()
	return slices.Clone(d.requests)
}

func (d *discoveryServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.requests = append(d.requests, r.URL.Path)
	if d.failing {
		http.Error(w, "unavailable", http.StatusServiceUnavailable)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	var body any
	switch r.URL.Path {
	case "/api":
		body = metav1.APIVersions{Versions: []string{"v1"}}
	case "/apis":
		list := metav1.APIGroupList{}
		for gv := range d.served {
			if g, err := schema.ParseGroupVersion(gv); err == nil && g.Group != "" {
				v := metav1.GroupVersionForDiscovery{GroupVersion: gv, Version: g.Version}
				list.Groups = append(list.Groups, metav1.APIGroup{Name: g.Group, Versions: []metav1.GroupVersionForDiscovery{v}, PreferredVersion: v})
			}
		}
		body = list
	case "/api/v1":
		body = metav1.APIResourceList{GroupVersion: "v1", APIResources: d.served["v1"]}
	default:
		rest, ok := strings.CutPrefix(r.URL.Path, "/apis/")
		if !ok {
			http.NotFound(w, r)
			return
		}
		if res, ok := d.served[rest]; ok {
			body = metav1.APIResourceList{GroupVersion: rest, APIResources: res}
			break
		}
		for gv := range d.served {
			if g, _ := schema.ParseGroupVersion(gv); g.Group == rest {
				v := metav1.GroupVersionForDiscovery{GroupVersion: gv, Version: g.Version}
				body = metav1.APIGroup{Name: g.Group, Versions: []metav1.GroupVersionForDiscovery{v}, PreferredVersion: v}
			}
		}
		if body == nil {
			http.NotFound(w, r)
			return
		}
	}
	_ = json.NewEncoder(w).Encode(body)
}

func newTestMapper(t *testing.T, d *discoveryServer, newMapper func(*rest.Config, *http.Client) (apimeta.RESTMapper, error)) apimeta.RESTMapper {
	t.Helper()
	srv := httptest.NewServer(d)
	t.Cleanup(srv.Close)
	cfg := &rest.Config{Host: srv.URL}
	hc, err := rest.HTTPClientFor(cfg)
	if err != nil {
		t.Fatal(err)
	}
	m, err := newMapper(cfg, hc)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

var kustomizationKind = schema.GroupKind{Group: "kustomize.toolkit.fluxcd.io", Kind: "Kustomization"}

func TestRESTMapperReadsOnlyTheGroupVersionsAskedAbout(t *testing.T) {
	g := NewWithT(t)
	d := newDiscoveryServer()
	m := newTestMapper(t, d, NewRESTMapper)

	mapping, err := m.RESTMapping(schema.GroupKind{Group: "apps", Kind: "Deployment"}, "v1")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(mapping.Resource).To(Equal(schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}))
	g.Expect(mapping.Scope.Name()).To(Equal(apimeta.RESTScopeNameNamespace))
	mapping, err = m.RESTMapping(schema.GroupKind{Kind: "Namespace"}, "v1")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(mapping.Resource.Resource).To(Equal("namespaces"))
	g.Expect(mapping.Scope.Name()).To(Equal(apimeta.RESTScopeNameRoot))
	// A subresource of the same kind is not its mapping.
	mapping, err = m.RESTMapping(schema.GroupKind{Kind: "Service"}, "v1")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(mapping.Resource.Resource).To(Equal("services"))
	// Asked again: answered from what was read.
	_, err = m.RESTMapping(schema.GroupKind{Group: "apps", Kind: "Deployment"}, "v1")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(m.ResourceFor(schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployment"})).
		To(Equal(schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}))
	g.Expect(m.KindFor(schema.GroupVersionResource{Version: "v1", Resource: "secrets"})).
		To(Equal(schema.GroupVersionKind{Version: "v1", Kind: "Secret"}))

	// One request per group-version asked about; never the whole server's discovery.
	g.Expect(d.paths()).To(Equal([]string{"/apis/apps/v1", "/api/v1"}))
}

func TestRESTMapperFindsAGroupVersionInstalledLater(t *testing.T) {
	g := NewWithT(t)
	d := newDiscoveryServer()
	m := newTestMapper(t, d, NewRESTMapper)

	_, err := m.RESTMapping(kustomizationKind, "v1")
	g.Expect(apimeta.IsNoMatchError(err)).To(BeTrue(), "not served yet: %v", err)
	_, err = m.RESTMapping(kustomizationKind, "v1")
	g.Expect(apimeta.IsNoMatchError(err)).To(BeTrue(), "still not served: %v", err)
	_, err = m.RESTMapping(kustomizationKind)
	g.Expect(apimeta.IsNoMatchError(err)).To(BeTrue(), "no group to take a preferred version from: %v", err)
	g.Expect(d.paths()).To(Equal([]string{"/apis/kustomize.toolkit.fluxcd.io/v1", "/apis/kustomize.toolkit.fluxcd.io/v1", "/apis/kustomize.toolkit.fluxcd.io"}),
		"a group-version not served is asked again each time, not remembered as missing")

	d.install("kustomize.toolkit.fluxcd.io/v1", metav1.APIResource{Name: "kustomizations", SingularName: "kustomization", Namespaced: true, Kind: "Kustomization", Verbs: []string{"get"}})
	mapping, err := m.RESTMapping(kustomizationKind, "v1")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(mapping.Resource.Resource).To(Equal("kustomizations"))
	// Without a version: the group's preferred one, read once.
	mapping, err = m.RESTMapping(kustomizationKind)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(mapping.GroupVersionKind.Version).To(Equal("v1"))
	_, err = m.RESTMapping(kustomizationKind)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(d.paths()[3:]).To(Equal([]string{"/apis/kustomize.toolkit.fluxcd.io/v1", "/apis/kustomize.toolkit.fluxcd.io"}))
}

func TestRESTMapperReadsAKeptGroupVersionAgainForAKindItLacks(t *testing.T) {
	g := NewWithT(t)
	d := newDiscoveryServer()
	m := newTestMapper(t, d, NewRESTMapper)
	statefulSet := schema.GroupKind{Group: "apps", Kind: "StatefulSet"}

	_, err := m.RESTMapping(schema.GroupKind{Group: "apps", Kind: "Deployment"}, "v1")
	g.Expect(err).NotTo(HaveOccurred())
	_, err = m.RESTMapping(statefulSet, "v1")
	g.Expect(apimeta.IsNoMatchError(err)).To(BeTrue(), "not in apps/v1 yet: %v", err)
	g.Expect(d.paths()).To(Equal([]string{"/apis/apps/v1", "/apis/apps/v1"}), "the kept document is read again once, not more")

	d.install("apps/v1", metav1.APIResource{Name: "statefulsets", SingularName: "statefulset", Namespaced: true, Kind: "StatefulSet", Verbs: []string{"get"}})
	mapping, err := m.RESTMapping(statefulSet, "v1")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(mapping.Resource.Resource).To(Equal("statefulsets"))
	// Deployment is still answered by the document read again.
	_, err = m.RESTMapping(schema.GroupKind{Group: "apps", Kind: "Deployment"}, "v1")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(d.paths()).To(HaveLen(3))
}

// The mapper answers the questions the operator asks as controller-runtime's dynamic mapper
// does, served or not.
func TestRESTMapperAnswersAsTheDynamicMapper(t *testing.T) {
	g := NewWithT(t)
	questions := []schema.GroupVersionKind{
		{Version: "v1", Kind: "Secret"},
		{Version: "v1", Kind: "Namespace"},
		{Version: "v1", Kind: "Service"},
		{Group: "apps", Version: "v1", Kind: "Deployment"},
		{Group: "apps", Version: "v1", Kind: "DaemonSet"},
		{Group: "kustomize.toolkit.fluxcd.io", Version: "v1", Kind: "Kustomization"},
		{Group: "cert-manager.io", Version: "v1", Kind: "Certificate"},
	}
	ours := newTestMapper(t, newDiscoveryServer(), NewRESTMapper)
	theirs := newTestMapper(t, newDiscoveryServer(), apiutil.NewDynamicRESTMapper)
	for _, q := range questions {
		want, wantErr := theirs.RESTMapping(q.GroupKind(), q.Version)
		got, gotErr := ours.RESTMapping(q.GroupKind(), q.Version)
		g.Expect(apimeta.IsNoMatchError(gotErr)).To(Equal(apimeta.IsNoMatchError(wantErr)), "%s: ours %v, theirs %v", q, gotErr, wantErr)
		g.Expect(gotErr == nil).To(Equal(wantErr == nil), "%s: ours %v, theirs %v", q, gotErr, wantErr)
		if wantErr == nil {
			g.Expect(got.Resource).To(Equal(want.Resource), q.String())
			g.Expect(got.GroupVersionKind).To(Equal(want.GroupVersionKind), q.String())
			g.Expect(got.Scope.Name()).To(Equal(want.Scope.Name()), q.String())
		}
	}
}

// A vCluster that does not answer is an error of its own, not "kind not served": the optional
// cert-manager watch must not read an outage as cert-manager missing. Nothing is kept from it.
func TestRESTMapperReportsAnUnansweredDiscoveryAsAnError(t *testing.T) {
	g := NewWithT(t)
	d := newDiscoveryServer()
	d.failing = true
	m := newTestMapper(t, d, NewRESTMapper)

	_, err := m.RESTMapping(schema.GroupKind{Group: "apps", Kind: "Deployment"}, "v1")
	g.Expect(err).To(HaveOccurred())
	g.Expect(apimeta.IsNoMatchError(err)).To(BeFalse(), "an outage reads as a missing kind: %v", err)

	d.mu.Lock()
	d.failing = false
	d.mu.Unlock()
	mapping, err := m.RESTMapping(schema.GroupKind{Group: "apps", Kind: "Deployment"}, "v1")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(mapping.Resource.Resource).To(Equal("deployments"))
}
