package controlplane

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	"k8s.io/klog/v2"
	ctrl "sigs.k8s.io/controller-runtime"

	datasancev3 "github.com/kubeopera/kubeopera-operator/api/datasance/v3"
	"github.com/kubeopera/kubeopera-operator/controllers/controlplane/internal/resources"
	"github.com/kubeopera/kubeopera-operator/internal/natsconf"
	"github.com/kubeopera/kubeopera-operator/internal/outcome"
)

// reconcileNats is the NATS component (docs/controlplane.md#nats-component), in the order of docs/controlplane.md#nats-pass-order: bootstrap from the
// Controller and its Secrets; the JetStream PVCs and the JetStream key; RBAC and the three
// Services; the external address (waiting for a LoadBalancer's); the TLS Secrets; the storage in
// force, server.conf and the JWT bundle; the StatefulSet. With spec.nats.enabled false it creates nothing and calls nothing, and removes the
// running parts of an earlier enabled generation (removeNats).
func (r *Reconciler) reconcileNats(ctx context.Context, s *scope, conv controllerConversation) error {
	if err := r.emptyLegacyNatsRole(ctx, s); err != nil {
		return err
	}
	st := &s.cp.Status.Nats
	st.Enabled = s.natsEnabled()
	if !st.Enabled {
		st.Replicas, st.Address = 0, ""
		return r.removeNats(ctx, s)
	}
	st.Replicas = s.spec.NatsReplicas()
	if err := resources.CheckNatsMemory(s.spec); err != nil {
		return outcome.Stop(datasancev3.ReasonInvalidConfiguration, err)
	}

	boot, err := r.obtainNatsBootstrap(ctx, s, conv)
	if err != nil {
		return err
	}
	data, err := r.observeNatsData(ctx, s)
	if err != nil {
		return err
	}
	jsk, err := r.ensureNatsJetStreamKey(ctx, s, data)
	if err != nil {
		return requeueIfStale(err)
	}
	if err := r.applyNatsAccessAndServices(ctx, s); err != nil {
		return err
	}
	address, waiting, err := r.natsExternalAddress(ctx, s)
	if err != nil {
		return err
	}
	st.Address = address
	if waiting {
		return outcome.Wait(datasancev3.ReasonWaitingForLoadBalancer, requeueLoadBalancer,
			fmt.Sprintf("Waiting for an address of LoadBalancer Service %s.", resources.NatsServiceName))
	}
	_, err = r.ensureCertificates(ctx, s, conv, resources.ComponentNats, resources.NatsCertificates(s.namespace(), st.Replicas, address))
	if err != nil {
		return err
	}
	live, err := r.natsStatefulSet(ctx, s)
	if err != nil {
		return err
	}
	storage := planNatsStorage(s.spec, live, data)
	restart, err := r.applyNatsConfig(ctx, s, boot, jsk, address, storage)
	if err != nil {
		return requeueIfStale(err)
	}
	if err := r.ensureNatsJWTBundle(ctx, s, conv, boot, data, live != nil); err != nil {
		return requeueIfStale(err)
	}
	// The StatefulSet's wait for its pods (awaitStatefulSet) is reported after its disruption
	// budget is applied: NATS always runs at least two servers.
	rollout := r.applyNatsStatefulSet(ctx, s, live, storage, restart)
	if rollout != nil && !outcome.IsWait(rollout) {
		return rollout
	}
	if err := r.applyDisruptionBudget(ctx, s, resources.ComponentNats, resources.NatsStatefulSetName, true); err != nil {
		return err
	}
	return rollout
}

// applyNatsAccessAndServices writes step 5: ServiceAccount nats (created once,
// docs/controlplane.md#create-once-objects; no Role, the NATS pods use no Kubernetes API) and the
// three Services (applied every pass).
func (r *Reconciler) applyNatsAccessAndServices(ctx context.Context, s *scope) error {
	if _, err := createIfAbsent(ctx, r, s, resources.NatsServiceAccount(s.cp), &corev1.ServiceAccount{}); err != nil {
		return err
	}
	if err := r.allowImageUser(ctx, s, resources.NatsAccessMeta(s.cp)); err != nil {
		return err
	}
	for _, svc := range []*corev1ac.ServiceApplyConfiguration{resources.NatsHeadlessService(s.cp), resources.NatsService(s.cp), resources.NatsServerService(s.cp)} {
		if _, err := applyIfChanged(ctx, r, s, s.serviceFor(resources.ComponentNats, svc), &corev1.Service{}, corev1ac.ExtractService); err != nil {
			return err
		}
	}
	return nil
}

// natsRestartKeys are natsconf.RestartKey of server.conf as this pass writes it (desired) and as
// it was before (live; "" when there was none or it could not be read): the settings the
// running servers cannot reload.
type natsRestartKeys struct{ desired, live string }

// applyNatsConfig writes step 9: server.conf, rewritten every pass with the routes merged from
// the current file, and the JetStream file store in force (docs/controlplane.md#jetstream-storage).
// It returns the restart keys of the file written and of the file it replaced.
func (r *Reconciler) applyNatsConfig(ctx context.Context, s *scope, boot *natsBootstrap, jsk, address string, storage natsStorage) (natsRestartKeys, error) {
	var current corev1.ConfigMap
	if _, err := r.getExisting(ctx, s, resources.NatsConfigMapName, &current); err != nil {
		return natsRestartKeys{}, err
	}
	serverConf, err := resources.NatsServerConf(s.cp, resources.NatsConfInputs{
		OperatorJWT:     boot.operatorJWT,
		SystemAccount:   boot.systemAccount,
		ExternalAddress: address,
		Existing:        current.Data[resources.NatsConfigKey],
		FileStore:       storage.serverConfFileStore(),
	})
	if err != nil {
		return natsRestartKeys{}, outcome.Stop(datasancev3.ReasonInvalidConfiguration, err)
	}
	var keys natsRestartKeys
	// The file names the key the pods get from its Secret: the restart keys read it from there, so
	// a new key restarts the pods and a file that held it in clear (an earlier version) does not.
	podEnv := map[string]string{natsconf.JetStreamKeyEnv: jsk}
	keys.desired, _ = natsconf.RestartKey(serverConf, podEnv)
	keys.live, _ = natsconf.RestartKey(current.Data[resources.NatsConfigKey], podEnv)
	changed, err := applyIfChanged(ctx, r, s, resources.NatsConfigMap(s.cp, serverConf), &corev1.ConfigMap{}, corev1ac.ExtractConfigMap)
	if err != nil {
		return natsRestartKeys{}, err
	}
	if changed {
		ctrl.LoggerFrom(ctx).Info("Wrote NATS server.conf", "ConfigMap", klog.KRef(s.namespace(), resources.NatsConfigMapName))
	}
	return keys, nil
}
