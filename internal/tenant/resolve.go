package tenant

import (
	"context"
	"fmt"
	"sort"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	tenantv1alpha1 "github.com/kubeopera/kubeopera-operator/api/external/tenant/v1alpha1"
	kubeoperav1alpha1 "github.com/kubeopera/kubeopera-operator/api/kubeopera/v1alpha1"
)

// Resolve returns the Tenant the app deploys into, read with r in the app's namespace:
//   - the pinned Tenant (status.tenant) when the app was placed before; a different
//     spec.tenantCRName then fails with ErrPinned;
//   - else the Tenant named by spec.tenantCRName;
//   - else the Tenant of the CloudSpace that became Ready first (see SelectEarliestReady).
//
// A named or pinned Tenant must carry the app's CloudSpace label (ErrCloudSpaceMismatch) and be
// Ready (ErrNotReady). Errors wrap ErrNotFound, ErrNotReady, ErrCloudSpaceMismatch or ErrPinned,
// or are API errors.
func Resolve(ctx context.Context, r client.Reader, app *kubeoperav1alpha1.KubeOperaApp) (*tenantv1alpha1.Tenant, error) {
	name := app.Spec.TenantCRName
	if pinned := app.Status.Tenant; pinned != nil && pinned.Name != "" {
		if name != "" && name != pinned.Name {
			return nil, fmt.Errorf("%w: placed in Tenant %q, spec.tenantCRName names %q", ErrPinned, pinned.Name, name)
		}
		name = pinned.Name
	}
	if name != "" {
		t, err := Get(ctx, r, app.Namespace, name)
		if err != nil {
			return nil, err
		}
		if err := CheckCloudSpace(t, app.Spec.CloudSpaceID); err != nil {
			return nil, err
		}
		if _, ok := ReadySince(t); !ok {
			return nil, fmt.Errorf("%w: Tenant %q is not Ready", ErrNotReady, name)
		}
		return t, nil
	}

	list := &tenantv1alpha1.TenantList{}
	if err := r.List(ctx, list, client.InNamespace(app.Namespace),
		client.MatchingLabels{tenantv1alpha1.CloudSpaceLabel: app.Spec.CloudSpaceID}); err != nil {
		return nil, fmt.Errorf("list tenants: %w", err)
	}
	if len(list.Items) == 0 {
		return nil, fmt.Errorf("%w: no Tenant in namespace %q has label %s=%s",
			ErrNotFound, app.Namespace, tenantv1alpha1.CloudSpaceLabel, app.Spec.CloudSpaceID)
	}
	t := SelectEarliestReady(list.Items)
	if t == nil {
		return nil, fmt.Errorf("%w: none of the %d Tenants of CloudSpace %q is Ready",
			ErrNotReady, len(list.Items), app.Spec.CloudSpaceID)
	}
	return t, nil
}

// Get reads one Tenant; NotFound becomes ErrNotFound.
func Get(ctx context.Context, r client.Reader, namespace, name string) (*tenantv1alpha1.Tenant, error) {
	t := &tenantv1alpha1.Tenant{}
	if err := r.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, t); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, fmt.Errorf("%w: Tenant %q in namespace %q", ErrNotFound, name, namespace)
		}
		return nil, fmt.Errorf("get tenant %q: %w", name, err)
	}
	return t, nil
}

// CheckCloudSpace refuses a Tenant whose CloudSpace label is not cloudSpaceID.
func CheckCloudSpace(t *tenantv1alpha1.Tenant, cloudSpaceID string) error {
	if got := t.Labels[tenantv1alpha1.CloudSpaceLabel]; got != cloudSpaceID {
		return fmt.Errorf("%w: Tenant %q has %s=%q, the app's cloudSpaceId is %q",
			ErrCloudSpaceMismatch, t.Name, tenantv1alpha1.CloudSpaceLabel, got, cloudSpaceID)
	}
	return nil
}

// ReadySince returns when the Tenant became Ready, and whether it is Ready now. A Tenant being
// deleted is not Ready.
func ReadySince(t *tenantv1alpha1.Tenant) (time.Time, bool) {
	if !t.DeletionTimestamp.IsZero() {
		return time.Time{}, false
	}
	c := apimeta.FindStatusCondition(t.Status.Conditions, tenantv1alpha1.ConditionReady)
	if c == nil || c.Status != metav1.ConditionTrue {
		return time.Time{}, false
	}
	return c.LastTransitionTime.Time, true
}

// SelectEarliestReady returns the Tenant that became Ready first, ties broken by name, or nil
// when none is Ready. The choice depends only on the Tenants, never on list order.
func SelectEarliestReady(tenants []tenantv1alpha1.Tenant) *tenantv1alpha1.Tenant {
	type candidate struct {
		since  time.Time
		tenant *tenantv1alpha1.Tenant
	}
	var ready []candidate
	for i := range tenants {
		if since, ok := ReadySince(&tenants[i]); ok {
			ready = append(ready, candidate{since, &tenants[i]})
		}
	}
	if len(ready) == 0 {
		return nil
	}
	sort.Slice(ready, func(i, j int) bool {
		if !ready[i].since.Equal(ready[j].since) {
			return ready[i].since.Before(ready[j].since)
		}
		return ready[i].tenant.Name < ready[j].tenant.Name
	})
	return ready[0].tenant.DeepCopy()
}
