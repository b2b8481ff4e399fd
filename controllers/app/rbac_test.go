package app_test

// watchListFallback is why list stays granted although this suite never sends a LIST: the
// informers stream their initial list in a watch (WatchList, served by this API server); client-go
// falls back to LIST where the API server does not serve streaming lists.
const watchListFallback = "the informers' LIST fallback where the API server does not serve WatchList"

// rbacUnusedHere lists the permissions of rbac.go this suite never exercises, each with the
// reason it stays (testenv.CheckRBACUse fails the suite on any other unused permission, and on
// any request of the manager the bundle's RBAC refuses).
var rbacUnusedHere = map[string]string{
	"list kubeopera.io/kubeoperaapps": watchListFallback,
	"list kubeopera.io/tenants":       watchListFallback,
	"list /secrets":                   watchListFallback,
	"patch events.k8s.io/events":      "a repeated event becomes a series, which the recorder patches; whether a run repeats one within the series window is timing",
	"get kubeopera.io/tenants": "Tenants are read from the API server, not the cache, when the Tenant CRD appears after " +
		"the manager started (tenantReader); tenantapi_test covers that case on its own API server",
}
