package main

import (
	"net"
	"net/url"
	"testing"
)

func TestAPIStatsCountsWatchConnections(t *testing.T) {
	s := newAPIStats()
	a, a2 := net.Pipe()
	b, b2 := net.Pipe()
	defer func() { _, _, _, _ = a.Close(), a2.Close(), b.Close(), b2.Close() }()

	s.connOpened(a)
	s.connOpened(b)
	s.connOpened(a) // a hook called twice for one connection counts once
	doneRead := s.request(a, kindRead, "secrets")
	w1 := s.request(a, kindWatch, "secrets")
	w2 := s.request(a, kindWatch, "secrets") // a second watch multiplexed on the same connection
	doneRead()
	if got := s.snapshot(); got.open != 2 || got.watchConns != 1 || got.peakWatchConns != 1 {
		t.Fatalf("two watches on one connection: %+v, want 2 open, 1 watch connection", got)
	}
	w3 := s.request(b, kindWatch, "secrets")
	if got := s.snapshot(); got.watchConns != 2 || got.peakWatchConns != 2 {
		t.Fatalf("watches on two connections: %+v, want 2 watch connections", got)
	}
	w1()
	w3()
	if got := s.snapshot(); got.watchConns != 1 {
		t.Fatalf("after two of three watches ended: %+v, want 1 watch connection (a still watches)", got)
	}
	s.connClosed(a) // the connection ends with its watch running
	w2()            // and the watch's handler returns after that
	got := s.snapshot()
	if got.open != 1 || got.watchConns != 0 || got.peakOpen != 2 || got.peakWatchConns != 2 {
		t.Fatalf("after a closed: %+v, want 1 open, 0 watch connections, peaks 2 and 2", got)
	}
	if got.requests[kindWatch] != 3 || got.requests[kindRead] != 1 || got.total() != 4 {
		t.Fatalf("requests %v, want 3 watches and 1 read", got.requests)
	}
}

func TestClassify(t *testing.T) {
	cases := []struct {
		method, url string
		want        requestKind
	}{
		{"GET", "/api/v1/namespaces/a/secrets/s", kindRead},
		{"GET", "/apis/kustomize.toolkit.fluxcd.io/v1/kustomizations?labelSelector=x", kindRead},
		{"GET", "/apis/kustomize.toolkit.fluxcd.io/v1/kustomizations?watch=true&resourceVersion=5", kindWatch},
		{"GET", "/api/v1/watch/namespaces/a/secrets", kindWatch},
		{"PATCH", "/api/v1/namespaces/a", kindWrite},
		{"POST", "/api/v1/namespaces", kindWrite},
		{"DELETE", "/api/v1/namespaces/a", kindWrite},
	}
	for _, c := range cases {
		u, err := url.Parse(c.url)
		if err != nil {
			t.Fatal(err)
		}
		if got := classify(c.method, u); got != c.want {
			t.Errorf("%s %s = %s, want %s", c.method, c.url, got, c.want)
		}
	}
}

func TestScopedQuery(t *testing.T) {
	q := url.Values{"labelSelector": {"app.kubernetes.io/managed-by=kubeopera-operator"}, "watch": {"true"}}
	got, ok := scopedQuery(q, []string{"t001-app-01", "t001-app-00"})
	if !ok {
		t.Fatal("a managed-by selector was not scoped")
	}
	want := "app.kubernetes.io/managed-by=kubeopera-operator,app.kubernetes.io/name in (t001-app-00,t001-app-01)"
	if got.Get("labelSelector") != want || got.Get("watch") != "true" {
		t.Fatalf("scoped query %v, want labelSelector %q and watch kept", got, want)
	}
	if q.Get("labelSelector") != "app.kubernetes.io/managed-by=kubeopera-operator" {
		t.Fatal("the input query was changed")
	}
	if _, ok := scopedQuery(url.Values{"labelSelector": {"app=x"}}, []string{"a"}); ok {
		t.Fatal("a selector of other objects was scoped")
	}
	if _, ok := scopedQuery(q, nil); ok {
		t.Fatal("a proxy without scope changed the query")
	}
}

func TestParseGoroutineTotal(t *testing.T) {
	n, err := parseGoroutineTotal("goroutine profile: total 1234\n")
	if err != nil || n != 1234 {
		t.Fatalf("parseGoroutineTotal = %d, %v; want 1234", n, err)
	}
	if _, err := parseGoroutineTotal("heap profile: 1: 2 [3: 4] @ heap/1048576\n"); err == nil {
		t.Fatal("another profile's header was read as a goroutine count")
	}
}

func TestP5Names(t *testing.T) {
	if got := tenantOf(p5AppName(42, 7)); got != 42 {
		t.Fatalf("tenantOf(%q) = %d, want 42", p5AppName(42, 7), got)
	}
	if got := tenantOf("flux-system"); got != 0 {
		t.Fatalf("tenantOf(flux-system) = %d, want 0", got)
	}
	if got := repoOf("http://127.0.0.1:1234/p5-03.git"); got != "p5-03" {
		t.Fatalf("repoOf = %q, want p5-03", got)
	}
	s := tenantSizes{100, 10, 10, 12e9}.with(5, 0, 2, 0)
	if s.tenants != 5 || s.apps != 10 || s.repos != 2 || s.interval != 12e9 {
		t.Fatalf("with overrides = %+v, want 5 tenants, 10 apps, 2 repos, 12s", s)
	}
}

func TestResourceOfNamesTheResourceAndSubresource(t *testing.T) {
	for path, want := range map[string]string{
		"/api/v1/namespaces/t001/secrets/git":                                            "secrets",
		"/api/v1/namespaces/t001/secrets":                                                "secrets",
		"/api/v1/namespaces/t001":                                                        "namespaces",
		"/api/v1/namespaces":                                                             "namespaces",
		"/apis/kubeopera.io/v1alpha1/namespaces/t001/kubeoperaapps/a/status":             "kubeoperaapps/status",
		"/apis/events.k8s.io/v1/namespaces/t001/events":                                  "events",
		"/apis/kustomize.toolkit.fluxcd.io/v1/namespaces/flux-system/kustomizations/app": "kustomizations",
		"/apis/apiextensions.k8s.io/v1/customresourcedefinitions/tenants.kubeopera.io":   "customresourcedefinitions",
		"/api/v1":    "discovery",
		"/apis/apps": "discovery",
		"/apis":      "discovery",
	} {
		if got := resourceOf(path); got != want {
			t.Errorf("resourceOf(%q) = %q, want %q", path, got, want)
		}
	}
}
