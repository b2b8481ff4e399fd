package app

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	tenantv1alpha1 "github.com/kubeopera/kubeopera-operator/api/external/tenant/v1alpha1"
	kubeoperav1alpha1 "github.com/kubeopera/kubeopera-operator/api/kubeopera/v1alpha1"
	"github.com/kubeopera/kubeopera-operator/internal/outcome"
	"github.com/kubeopera/kubeopera-operator/internal/tenant"
)

// tenantAPI knows whether the Tenant CRD is served. It may be missing (it belongs to the
// tenant-controller): then the manager still starts, Tenants are not watched, and apps report
// TenantAPIUnavailable. Each reconcile checks again, so a CRD installed later is used (read
// without a cache; a restart adds the watch).
type tenantAPI struct {
	mapper  apimeta.RESTMapper
	watched atomic.Bool
}

func newTenantAPI(mapper apimeta.RESTMapper) *tenantAPI {
	return &tenantAPI{mapper: mapper}
}

// served asks the API server (through the manager's RESTMapper) whether Tenants exist.
func (t *tenantAPI) served() (bool, error) {
	gk := tenantv1alpha1.GroupVersion.WithKind("Tenant").GroupKind()
	_, err := t.mapper.RESTMapping(gk, tenantv1alpha1.GroupVersion.Version)
	switch {
	case err == nil:
		return true, nil
	case apimeta.IsNoMatchError(err):
		return false, nil
	default:
		return false, fmt.Errorf("look up the Tenant API: %w", err)
	}
}

// tenantReader returns the reader for Tenants: the cache when they are watched, the API server
// otherwise, or an error when the API is not served.
func (r *Reconciler) tenantReader() (client.Reader, error) {
	if r.tenantAPI.watched.Load() {
		return r.Client, nil
	}
	ok, err := r.tenantAPI.served()
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, errTenantAPIUnavailable
	}
	return r.apiReader, nil
}

var errTenantAPIUnavailable = errors.New("the Tenant API (kubeopera.io/v1alpha1 Tenant) is not installed in the host cluster")

// resolveTenant finds the app's Tenant, pins it in status.tenant and builds the vCluster client.
func (r *Reconciler) resolveTenant(ctx context.Context, s *scope) error {
	const cond = kubeoperav1alpha1.ConditionTenantResolved
	reader, err := r.tenantReader()
	if errors.Is(err, errTenantAPIUnavailable) {
		return outcome.Wait(kubeoperav1alpha1.ReasonTenantAPIUnavailable, r.Options.TenantAPIRetry, err.Error()).On(cond)
	}
	if err != nil {
		return err
	}
	t, err := tenant.Resolve(ctx, reader, s.app)
	switch {
	case errors.Is(err, tenant.ErrCloudSpaceMismatch):
		return outcome.Stop(kubeoperav1alpha1.ReasonTenantCloudSpaceMismatch, err).On(cond)
	case errors.Is(err, tenant.ErrPinned):
		return outcome.Stop(kubeoperav1alpha1.ReasonTenantPinned, err).On(cond)
	case errors.Is(err, tenant.ErrNotFound):
		// The Tenant the app was placed in is gone: so is its vCluster; drop its client.
		if pinned := s.app.Status.Tenant; pinned != nil {
			r.clients.Forget(types.NamespacedName{Namespace: s.app.Namespace, Name: pinned.Name})
			r.vclusterWatches.forget(types.NamespacedName{Namespace: s.app.Namespace, Name: pinned.Name})
		}
		return outcome.Retry(kubeoperav1alpha1.ReasonTenantNotFound, err).On(cond)
	case errors.Is(err, tenant.ErrNotReady):
		return outcome.Retry(kubeoperav1alpha1.ReasonTenantNotReady, err).On(cond)
	case err != nil:
		return err
	}
	s.tenant = t
	if s.app.Status.Tenant == nil {
		s.app.Status.Tenant = &kubeoperav1alpha1.TenantReference{Namespace: t.Namespace, Name: t.Name}
		r.event(s.app, corev1.EventTypeNormal, "TenantSelected", actionReconcile,
			fmt.Sprintf("Placed in Tenant %s/%s; the app stays in its vCluster from now on", t.Namespace, t.Name))
	}

	vc, version, err := r.vclusterClient(ctx, t)
	if errors.Is(err, errVClusterServerNotAllowed) {
		return outcome.Stop(kubeoperav1alpha1.ReasonVClusterServerNotAllowed, err).On(cond)
	}
	if errors.Is(err, tenant.ErrKubeconfigInvalid) {
		return outcome.Retry(kubeoperav1alpha1.ReasonKubeconfigInvalid, err).On(cond)
	}
	if err != nil {
		return err
	}
	s.vc, s.kubeconfig = vc, version
	r.stepSucceeded(s.app, cond, fmt.Sprintf("Tenant %s/%s", t.Namespace, t.Name))
	return nil
}

// vclusterClient returns the cached client of the Tenant's vCluster, rebuilt when the kubeconfig
// Secret changed, and the version of that Secret it is built from. The Secret's version comes
// from the metadata cache, so a hit costs no request.
func (r *Reconciler) vclusterClient(ctx context.Context, t *tenantv1alpha1.Tenant) (client.Client, tenant.SecretVersion, error) {
	name, key := tenant.KubeconfigSecret(t)
	secretKey := types.NamespacedName{Namespace: t.Namespace, Name: name}
	meta := secretMetadata(secretKey)
	if err := r.Get(ctx, secretKey, meta); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, tenant.SecretVersion{}, fmt.Errorf("%w: Secret %s not found", tenant.ErrKubeconfigInvalid, secretKey)
		}
		return nil, tenant.SecretVersion{}, fmt.Errorf("get kubeconfig Secret metadata: %w", err)
	}
	version := tenant.SecretVersion{UID: meta.UID, ResourceVersion: meta.ResourceVersion, Key: key}
	tenantKey := types.NamespacedName{Namespace: t.Namespace, Name: t.Name}
	var built *rest.Config
	vc, err := r.clients.Get(tenantKey, version, func() (*rest.Config, error) {
		secret := &corev1.Secret{}
		if err := r.apiReader.Get(ctx, secretKey, secret); err != nil {
			if apierrors.IsNotFound(err) {
				return nil, fmt.Errorf("%w: Secret %s not found", tenant.ErrKubeconfigInvalid, secretKey)
			}
			return nil, fmt.Errorf("get kubeconfig Secret: %w", err)
		}
		data, ok := secret.Data[key]
		if !ok || len(data) == 0 {
			return nil, fmt.Errorf("%w: Secret %s has no key %q", tenant.ErrKubeconfigInvalid, secretKey, key)
		}
		cfg, err := tenant.RESTConfig(data, t, tenant.ConfigOptions{
			Timeout:          r.Options.VClusterTimeout,
			QPS:              r.Options.VClusterQPS,
			Burst:            r.Options.VClusterBurst,
			AllowInsecureTLS: r.Options.AllowInsecureKubeconfig,
		})
		if err != nil {
			return nil, fmt.Errorf("kubeconfig Secret %s key %q: %w", secretKey, key, err)
		}
		if err := r.checkVClusterServer(cfg.Host); err != nil {
			return nil, fmt.Errorf("kubeconfig Secret %s: %w", secretKey, err)
		}
		built = cfg
		return cfg, nil
	})
	if err == nil && built != nil {
		r.vclusterWatches.watch(tenantKey, version, built, vc)
	}
	return vc, version, err
}

func findCondition(app *kubeoperav1alpha1.KubeOperaApp, condType string) *metav1.Condition {
	return apimeta.FindStatusCondition(app.Status.Conditions, condType)
}
