package controlplane

import (
	"context"
	"errors"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	datasancev3 "github.com/kubeopera/kubeopera-operator/api/datasance/v3"
	"github.com/kubeopera/kubeopera-operator/controllers/controlplane/internal/conversation"
	"github.com/kubeopera/kubeopera-operator/controllers/controlplane/internal/resources"
	"github.com/kubeopera/kubeopera-operator/internal/outcome"
)

// ensureNatsJWTBundle is step 10 of docs/controlplane.md#nats-pass-order: ConfigMap
// iofog-nats-jwt-bundle (docs/controlplane.md#nats-jwt-bundle). The NATS image mirrors it into
// the resolver directory and purges the JetStream data of every account the directory lacks, so
// the bundle is data: of one that exists the operator writes only the system account's key
// (syncSystemAccountJWT; the Controller adds the application accounts), and one an earlier
// version owned is released from the ControlPlane, so that it lives as long as the JetStream
// PVCs.
//
// A missing bundle is built from the Controller's account list (GET /nats/accounts) and the
// bootstrap's system account. When the list cannot be read, a bundle of the system account only
// is created on a first install (no StatefulSet nats and no JetStream PVC: nothing to lose);
// otherwise nothing is created and the pass ends before the StatefulSet, with a requeue
// (NatsAccountsUnavailable): a bundle with fewer accounts would purge their streams.
func (r *Reconciler) ensureNatsJWTBundle(ctx context.Context, s *scope, conv controllerConversation, boot *natsBootstrap, data natsData, natsRunning bool) error {
	var live corev1.ConfigMap
	found, err := r.getExisting(ctx, s, resources.NatsJWTBundleMapName, &live)
	if err != nil {
		return err
	}
	if found {
		if err := r.syncSystemAccountJWT(ctx, s, boot, &live); err != nil {
			return err
		}
		return r.releaseDataStore(ctx, s, resources.ComponentNats, &live)
	}
	log := ctrl.LoggerFrom(ctx)
	accounts, listErr := conv.NatsAccounts(ctx)
	var cause string
	if failed := (*conversation.CallError)(nil); errors.As(listErr, &failed) {
		cause = failed.Cause
	}
	switch {
	case listErr == nil:
	case ctx.Err() != nil:
		return listErr
	case data.exists() || natsRunning:
		log.Info("The NATS JWT bundle is missing and the Controller's account list failed; not re-creating it with fewer accounts",
			"ConfigMap", klog.KRef(s.namespace(), resources.NatsJWTBundleMapName), "cause", cause, "error", listErr.Error())
		return outcome.Wait(datasancev3.ReasonNatsAccountsUnavailable, conversation.RequeueNatsBootstrap, fmt.Sprintf(
			"ConfigMap %s (the NATS JWT bundle) is missing and the Controller's account list failed (%s): "+
				"not re-creating it with fewer accounts, which would purge their JetStream data, and not rolling StatefulSet %s. "+
				"Restore the ConfigMap, or make GET /api/v3/nats/accounts answer.",
			resources.NatsJWTBundleMapName, cause, resources.NatsStatefulSetName))
	default:
		log.Info("The Controller's account list failed; the new NATS JWT bundle holds the system account only",
			"cause", cause, "error", listErr.Error())
	}
	bundle := accounts.Bundle(boot.systemAccount, boot.systemAccountJWT)
	if err := r.createObject(ctx, resources.NatsJWTBundleConfigMap(s.cp, bundle)); err != nil {
		return err
	}
	log.Info("Created the NATS JWT bundle", "ConfigMap", klog.KRef(s.namespace(), resources.NatsJWTBundleMapName), "accounts", len(bundle))
	if data.exists() || natsRunning {
		r.event(s.cp, corev1.EventTypeNormal, eventNatsJWTBundleRebuilt, fmt.Sprintf(
			"ConfigMap %s was missing; rebuilt it with the %d accounts the Controller lists.", resources.NatsJWTBundleMapName, len(bundle)))
	}
	return nil
}

// syncSystemAccountJWT sets the system account's key of an existing bundle to the JWT the
// Controller just answered in its bootstrap, when they differ: the one key, with a merge patch,
// so nothing the Controller added is touched and no key is removed. The two differ when the
// Controller's operator changed (docs/controlplane.md#nats-operator-changes) before its NATS
// reconcile task wrote the bundle: the hub must resolve the system account it is told to use,
// signed by the operator it trusts. The Controller writes the same JWT when its task runs.
func (r *Reconciler) syncSystemAccountJWT(ctx context.Context, s *scope, boot *natsBootstrap, live *corev1.ConfigMap) error {
	key := resources.NatsJWTKey(boot.systemAccount)
	if !boot.fetched || live.Data[key] == boot.systemAccountJWT {
		return nil
	}
	base := live.DeepCopy()
	if live.Data == nil {
		live.Data = map[string]string{}
	}
	live.Data[key] = boot.systemAccountJWT
	if err := r.Patch(ctx, live, client.MergeFrom(base), client.FieldOwner(FieldOwner)); err != nil {
		return fmt.Errorf("set the system account of ConfigMap %s: %w", resources.NatsJWTBundleMapName, err)
	}
	ctrl.LoggerFrom(ctx).Info("Set the system account of the NATS JWT bundle to the Controller's",
		"ConfigMap", klog.KRef(s.namespace(), resources.NatsJWTBundleMapName), "account", boot.systemAccount)
	return nil
}

// natsStatefulSet returns StatefulSet nats, or nil when it does not exist.
func (r *Reconciler) natsStatefulSet(ctx context.Context, s *scope) (*appsv1.StatefulSet, error) {
	var live appsv1.StatefulSet
	found, err := r.getExisting(ctx, s, resources.NatsStatefulSetName, &live)
	if err != nil || !found {
		return nil, err
	}
	return &live, nil
}
