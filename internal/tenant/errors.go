package tenant

import "errors"

// Sentinel errors of resolution and client building. Errors returned by this package wrap one of
// them, so callers classify with errors.Is.
var (
	// ErrNotFound: no Tenant of that name, or no Tenant carries the app's CloudSpace label.
	ErrNotFound = errors.New("tenant not found")
	// ErrNotReady: the Tenant (or every Tenant of the CloudSpace) is not Ready, or is being
	// deleted.
	ErrNotReady = errors.New("tenant not ready")
	// ErrCloudSpaceMismatch: the named Tenant belongs to another CloudSpace. Never retried:
	// the app or the Tenant must change.
	ErrCloudSpaceMismatch = errors.New("tenant belongs to another CloudSpace")
	// ErrPinned: the app is already placed in another Tenant than spec.tenantCRName names.
	ErrPinned = errors.New("app is pinned to another tenant")
	// ErrKubeconfigInvalid: the kubeconfig Secret is missing, lacks the key, or holds a
	// kubeconfig that cannot be used.
	ErrKubeconfigInvalid = errors.New("kubeconfig invalid")
)
