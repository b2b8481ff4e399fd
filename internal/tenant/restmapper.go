package tenant

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"
)

// NewRESTMapper returns the REST mapper of a vCluster client: it reads the discovery document of
// each group-version it is asked about (/api/v1, /apis/<group>/<version>), and of nothing else.
//
// controller-runtime's dynamic mapper loads the API server's whole aggregated discovery on its
// first use and keeps a mapper of every group the server serves; the operator asks a vCluster
// about half a dozen group-versions. At 100 vClusters those whole-server mappers were the largest
// part of the operator's live heap (make bench P5, docs/benchmarks.md).
//
// What it answers is what the dynamic mapper answers for the same question:
//   - a group-version the server does not serve (404), or one that does not hold the kind, is a
//     *meta.NoKindMatchError (meta.IsNoMatchError), so "the CRD is not installed" reads the same;
//   - nothing negative is kept: the next question asks the server again, so a CRD installed later
//     is found; a kind missing from a group-version read before reads that group-version again
//     (a CRD may add a kind to an existing group-version);
//   - a question without a version takes the group's preferred version (/apis/<group>).
//
// Safe for concurrent use; one discovery request at a time per mapper.
func NewRESTMapper(cfg *rest.Config, httpClient *http.Client) (apimeta.RESTMapper, error) {
	dc, err := discovery.NewDiscoveryClientForConfigAndClient(cfg, httpClient)
	if err != nil {
		return nil, fmt.Errorf("build the discovery client: %w", err)
	}
	return &groupVersionMapper{discovery: dc, byGV: map[schema.GroupVersion]apimeta.RESTMapper{}, preferred: map[string]string{}}, nil
}

// groupVersionMapper keeps one small mapper per group-version it has read.
type groupVersionMapper struct {
	discovery discovery.DiscoveryInterface

	mu        sync.Mutex
	byGV      map[schema.GroupVersion]apimeta.RESTMapper
	preferred map[string]string
}

var _ apimeta.RESTMapper = &groupVersionMapper{}

// errNotServed is what forGroupVersion returns for a group-version the server does not serve.
var errNotServed = errors.New("group-version not served")

// forGroupVersion returns the mapper of gv and whether it was read just now: the kept one, or
// one read from the server when none is kept or reload is set. errNotServed when the server
// does not serve gv.
func (m *groupVersionMapper) forGroupVersion(gv schema.GroupVersion, reload bool) (_ apimeta.RESTMapper, read bool, _ error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if mapper, ok := m.byGV[gv]; ok && !reload {
		return mapper, false, nil
	}
	list, err := m.discovery.ServerResourcesForGroupVersion(gv.String())
	if apierrors.IsNotFound(err) {
		delete(m.byGV, gv)
		return nil, true, errNotServed
	}
	if err != nil {
		return nil, true, fmt.Errorf("read the discovery of %s: %w", gv, err)
	}
	discoveryGV := metav1.GroupVersionForDiscovery{GroupVersion: gv.String(), Version: gv.Version}
	mapper := restmapper.NewDiscoveryRESTMapper([]*restmapper.APIGroupResources{{
		Group:              metav1.APIGroup{Name: gv.Group, Versions: []metav1.GroupVersionForDiscovery{discoveryGV}, PreferredVersion: discoveryGV},
		VersionedResources: map[string][]metav1.APIResource{gv.Version: list.APIResources},
	}})
	m.byGV[gv] = mapper
	return mapper, true, nil
}

// versionsOf returns versions, or the group's preferred version when none is given.
func (m *groupVersionMapper) versionsOf(group string, versions []string) ([]string, error) {
	var given []string
	for _, v := range versions {
		if v != "" {
			given = append(given, v)
		}
	}
	if len(given) > 0 {
		return given, nil
	}
	if group == "" {
		return []string{"v1"}, nil
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if v, ok := m.preferred[group]; ok {
		return []string{v}, nil
	}
	apiGroup := &metav1.APIGroup{}
	err := m.discovery.RESTClient().Get().AbsPath("/apis", group).Do(context.Background()).Into(apiGroup)
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read the discovery of group %q: %w", group, err)
	}
	m.preferred[group] = apiGroup.PreferredVersion.Version
	return []string{apiGroup.PreferredVersion.Version}, nil
}

// each calls try with the mapper of every version of group (the preferred one when none is
// given) until try succeeds. A group-version whose kept document has no match is read again
// once. The error is try's last meta.NoMatch error, or noMatch() when nothing was served.
func (m *groupVersionMapper) each(group string, versions []string, noMatch func() error, try func(apimeta.RESTMapper) error) error {
	versions, err := m.versionsOf(group, versions)
	if err != nil {
		return err
	}
	last := noMatch()
	for _, v := range versions {
		gv := schema.GroupVersion{Group: group, Version: v}
		for reload := false; ; reload = true {
			mapper, read, err := m.forGroupVersion(gv, reload)
			if errors.Is(err, errNotServed) {
				break
			}
			if err != nil {
				return err
			}
			err = try(mapper)
			if err == nil || !apimeta.IsNoMatchError(err) {
				return err
			}
			last = err
			if read {
				break
			}
		}
	}
	return last
}

// RESTMapping implements meta.RESTMapper.
func (m *groupVersionMapper) RESTMapping(gk schema.GroupKind, versions ...string) (*apimeta.RESTMapping, error) {
	var out *apimeta.RESTMapping
	err := m.each(gk.Group, versions,
		func() error { return &apimeta.NoKindMatchError{GroupKind: gk, SearchedVersions: versions} },
		func(mapper apimeta.RESTMapper) error {
			mapping, err := mapper.RESTMapping(gk)
			out = mapping
			return err
		})
	return out, err
}

// RESTMappings implements meta.RESTMapper: the mapping of the first version that has the kind.
func (m *groupVersionMapper) RESTMappings(gk schema.GroupKind, versions ...string) ([]*apimeta.RESTMapping, error) {
	mapping, err := m.RESTMapping(gk, versions...)
	if err != nil {
		return nil, err
	}
	return []*apimeta.RESTMapping{mapping}, nil
}

// KindFor implements meta.RESTMapper.
func (m *groupVersionMapper) KindFor(resource schema.GroupVersionResource) (schema.GroupVersionKind, error) {
	var out schema.GroupVersionKind
	err := m.eachResource(resource, func(mapper apimeta.RESTMapper) error {
		kind, err := mapper.KindFor(resource)
		out = kind
		return err
	})
	return out, err
}

// KindsFor implements meta.RESTMapper.
func (m *groupVersionMapper) KindsFor(resource schema.GroupVersionResource) ([]schema.GroupVersionKind, error) {
	kind, err := m.KindFor(resource)
	if err != nil {
		return nil, err
	}
	return []schema.GroupVersionKind{kind}, nil
}

// ResourceFor implements meta.RESTMapper.
func (m *groupVersionMapper) ResourceFor(input schema.GroupVersionResource) (schema.GroupVersionResource, error) {
	var out schema.GroupVersionResource
	err := m.eachResource(input, func(mapper apimeta.RESTMapper) error {
		resource, err := mapper.ResourceFor(input)
		out = resource
		return err
	})
	return out, err
}

// ResourcesFor implements meta.RESTMapper.
func (m *groupVersionMapper) ResourcesFor(input schema.GroupVersionResource) ([]schema.GroupVersionResource, error) {
	resource, err := m.ResourceFor(input)
	if err != nil {
		return nil, err
	}
	return []schema.GroupVersionResource{resource}, nil
}

// eachResource is each for a resource's group and version.
func (m *groupVersionMapper) eachResource(resource schema.GroupVersionResource, try func(apimeta.RESTMapper) error) error {
	return m.each(resource.Group, []string{resource.Version},
		func() error { return &apimeta.NoResourceMatchError{PartialResource: resource} }, try)
}

// ResourceSingularizer implements meta.RESTMapper among the group-versions read so far.
func (m *groupVersionMapper) ResourceSingularizer(resource string) (string, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, mapper := range m.byGV {
		if singular, err := mapper.ResourceSingularizer(resource); err == nil {
			return singular, nil
		}
	}
	return "", &apimeta.NoResourceMatchError{PartialResource: schema.GroupVersionResource{Resource: resource}}
}
