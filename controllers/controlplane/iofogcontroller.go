package controlplane

import (
	"context"
	"errors"
	"fmt"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	appsv1ac "k8s.io/client-go/applyconfigurations/apps/v1"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	networkingv1ac "k8s.io/client-go/applyconfigurations/networking/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	datasancev3 "github.com/kubeopera/kubeopera-operator/api/datasance/v3"
	"github.com/kubeopera/kubeopera-operator/controllers/controlplane/internal/resources"
	"github.com/kubeopera/kubeopera-operator/internal/outcome"
)

// reconcileIoFogController is the Controller component (docs/controlplane.md#controller-reconcile-steps): bootstrap password, RBAC,
// credential Secrets, Service, Ingress, URL resolution, PVC and Deployment, the Deployment's
// availability (workloads.go), then the Controller REST API (iofogcontroller_registration.go): health, login, router / NATS hub / CA registration and the
// external reachability check. The credential restart of step 7 is the credentials hash in the
// pod template: a changed Secret rolls the pods when the Deployment is applied. Pods the
// Datasance operator's Deployment left are handed over after the registration (takeover.go); on
// SQLite they are stopped before this operator's Deployment is created.
func (r *Reconciler) reconcileIoFogController(ctx context.Context, s *scope, conv controllerConversation) error {
	// Every credential reference is resolved before anything of the Controller is written: a
	// missing Secret or key writes nothing (no half-resolved credential Secrets).
	resolved, err := r.credentials(ctx, s)
	if err != nil {
		return err
	}
	identity := resources.MetaFor(s.cp, resources.ComponentController, resources.ControllerName)
	if err := r.applyWorkloadIdentity(ctx, s, identity, resources.ControllerRules(s.spec)); err != nil {
		return err
	}
	if err := r.allowImageUser(ctx, s, identity); err != nil {
		return err
	}
	creds := resources.ControllerCredentials(resolved, bootstrapPassword(resolved))
	if err := r.applyCredentialSecrets(ctx, s, creds); err != nil {
		return err
	}
	svc := &corev1.Service{}
	if _, err := applyIfChanged(ctx, r, s, s.serviceFor(resources.ComponentController, resources.ControllerService(s.cp)), svc, corev1ac.ExtractService); err != nil {
		return err
	}
	if err := r.applyIoFogControllerIngress(ctx, s); err != nil {
		return err
	}

	lbAddress := resources.LoadBalancerAddress(svc.Status.LoadBalancer.Ingress)
	urls, wait := resources.ResolveControllerURLs(s.spec, lbAddress)
	s.cp.Status.Controller.PublicURL, s.cp.Status.Controller.ConsoleURL = urls.PublicURL, urls.ConsoleURL
	if wait {
		return outcome.Wait(datasancev3.ReasonWaitingForLoadBalancer, requeueLoadBalancer,
			"Waiting for a LoadBalancer address of Service controller to derive the public URL.")
	}
	r.updateConsoleClientURLs(ctx, s, urls)

	if s.handover(resources.ComponentController) != nil && s.spec.UsesSQLite() {
		if found, err := r.getExisting(ctx, s, resources.ControllerName, &appsv1.Deployment{}); err != nil || !found {
			if err != nil {
				return err
			}
			return r.retireBeforeStarting(ctx, s, resources.ComponentController, resources.ControllerName)
		}
	}
	live, changed, err := r.applyIoFogControllerDeployment(ctx, s, urls, creds)
	if err != nil {
		return err
	}
	if err := r.applyDisruptionBudget(ctx, s, resources.ComponentController, resources.ControllerName, resources.ControllerReplicated(s.spec)); err != nil {
		return err
	}
	if live.UID == "" {
		return outcome.Wait(datasancev3.ReasonWaitingForDeployment, requeueDeploymentCreated,
			"Deployment controller was created; waiting for the Controller to start.")
	}
	// A handover under way is a wait that says what the component waits for; the registration
	// goes ahead meanwhile: a failure of its own wins over the handover's wait, a wait of its
	// own does not.
	handoverWait := r.handOverDeployment(ctx, s, resources.ComponentController, resources.ControllerName, live, changed)
	if handoverWait != nil && !outcome.IsWait(handoverWait) {
		return handoverWait
	}
	if s.handover(resources.ComponentController) == nil {
		// The REST API answers only once a pod runs: until then the component says what the pods
		// report instead of a connection error.
		if err := r.awaitDeployment(ctx, s, resources.ComponentController, resources.ControllerName, live, changed); err != nil {
			return err
		}
	}
	err = r.registerWithIoFogController(ctx, s, conv, lbAddress)
	if handoverWait != nil && (err == nil || outcome.IsWait(err)) {
		return handoverWait
	}
	return err
}

// applyCredentialSecrets applies the DB, auth and (when active) vault Secrets, and deletes an
// owned vault Secret the spec no longer asks for.
func (r *Reconciler) applyCredentialSecrets(ctx context.Context, s *scope, creds map[string]map[string][]byte) error {
	for _, name := range []string{resources.DbSecretName, resources.AuthSecretName, resources.VaultSecretName} {
		data, ok := creds[name]
		if !ok {
			if err := r.deleteOwned(ctx, s, name, &corev1.Secret{}); err != nil {
				return err
			}
			continue
		}
		if _, err := applyIfChanged(ctx, r, s, resources.Secret(s.cp, resources.ComponentController, name, corev1.SecretTypeOpaque, data), &corev1.Secret{}, corev1ac.ExtractSecret); err != nil {
			return err
		}
	}
	return nil
}

// applyIoFogControllerIngress applies Ingress controller in Ingress mode and deletes an owned one
// otherwise (the Service type changed away from ClusterIP). The Datasance operator's Ingress
// (pot-controller), routing the same host to ports of Service controller that no longer exist,
// is deleted when this ControlPlane controls it (docs/controlplane.md#taking-over-from-the-datasance-operator).
func (r *Reconciler) applyIoFogControllerIngress(ctx context.Context, s *scope) error {
	if err := r.deleteOwned(ctx, s, resources.LegacyControllerIngressName, &networkingv1.Ingress{}); err != nil {
		return err
	}
	if !s.spec.ControllerIngressMode() {
		return r.deleteOwned(ctx, s, resources.ControllerName, &networkingv1.Ingress{})
	}
	_, err := applyIfChanged(ctx, r, s, resources.ControllerIngress(s.cp), &networkingv1.Ingress{}, networkingv1ac.ExtractIngress)
	return err
}

// applyIoFogControllerDeployment creates the SQLite PVC when needed and applies the Deployment.
// live is the Deployment as read before the apply (no UID: it did not exist, and was created);
// changed reports whether the apply wrote.
func (r *Reconciler) applyIoFogControllerDeployment(ctx context.Context, s *scope, urls resources.ControllerURLs, creds map[string]map[string][]byte) (live *appsv1.Deployment, changed bool, err error) {
	if s.spec.UsesSQLite() {
		pvc := &corev1.PersistentVolumeClaim{}
		created, err := createIfAbsent(ctx, r, s, resources.SqlitePVC(s.cp), pvc)
		if err != nil {
			return nil, false, err
		}
		if !created {
			if err := r.releaseDataStore(ctx, s, resources.ComponentController, pvc); err != nil {
				return nil, false, err
			}
		}
	}
	key, err := r.rolloutKey(ctx, s)
	if err != nil {
		return nil, false, err
	}
	restartedAt, err := r.controllerRestartedAt(ctx, s)
	if err != nil {
		return nil, false, err
	}
	hashes := resources.ControllerPodHashes{Credentials: resources.KeyedHashData(key, creds), RestartedAt: restartedAt}
	if s.spec.ControllerHTTPS() {
		tls, err := r.ioFogControllerTLSData(ctx, s)
		if err != nil {
			return nil, false, err
		}
		hashes.TLS = resources.HashData(map[string]map[string][]byte{s.spec.Controller.SecretName: tls})
	}
	if err := r.checkSQLiteMount(ctx, s); err != nil {
		return nil, false, err
	}
	desired := resources.ControllerDeployment(s.cp, s.images, urls, hashes)
	if s.handover(resources.ComponentController) != nil {
		resources.MarkDeploymentTakingOver(desired)
	}
	live = &appsv1.Deployment{}
	changed, err = applyIfChanged(ctx, r, s, desired, live, appsv1ac.ExtractDeployment)
	if err != nil {
		return nil, false, err
	}
	return live, changed, nil
}

// checkSQLiteMount refuses to roll a Controller whose live Deployment mounts the SQLite claim at
// an earlier version's path (refuseLegacySQLiteMount). Nothing of the Deployment is written
// meanwhile.
func (r *Reconciler) checkSQLiteMount(ctx context.Context, s *scope) error {
	if !s.spec.UsesSQLite() {
		return nil
	}
	live := &appsv1.Deployment{}
	found, err := r.getExisting(ctx, s, resources.ControllerName, live)
	if err != nil || !found {
		return err
	}
	return refuseLegacySQLiteMount(s, live)
}

// refuseLegacySQLiteMount is the terminal SQLiteDatabaseAtRisk when live, the Controller
// Deployment of an earlier version of this operator or of the Datasance operator, mounts the
// SQLite claim elsewhere than this version (resources.LegacySQLiteMount) and the ControlPlane does
// not carry resources.AnnotationSQLiteMountConfirmed: rolling it onto this version's mount would
// lose the database (the message says which way and what to do first).
func refuseLegacySQLiteMount(s *scope, live *appsv1.Deployment) error {
	if s.cp.Annotations[resources.AnnotationSQLiteMountConfirmed] == "true" {
		return nil
	}
	if mount := resources.LegacySQLiteMount(live); mount != "" {
		return outcome.Stop(datasancev3.ReasonSQLiteDatabaseAtRisk, errors.New(resources.SQLiteMountChange(s.cp, live, mount)))
	}
	return nil
}

// ioFogControllerTLSData reads the user's controller TLS Secret for the pod-template hash. A missing
// Secret is not an error: the pod waits for its volume, and the Secret watch rolls the pods when
// it appears (docs/controlplane.md#controller-ingress).
func (r *Reconciler) ioFogControllerTLSData(ctx context.Context, s *scope) (map[string][]byte, error) {
	sec := &corev1.Secret{}
	found, err := r.getExisting(ctx, s, s.spec.Controller.SecretName, sec)
	if err != nil || !found {
		return nil, err
	}
	return sec.Data, nil
}

// bootstrapPassword is the embedded-mode bootstrap password of a resolved spec (credentials):
// passwordSecretRef's value, or the inline password. External mode has none.
func bootstrapPassword(resolved *datasancev3.ControlPlaneSpec) string {
	if b := resolved.Auth.Bootstrap; resolved.Auth.Mode == datasancev3.AuthModeEmbedded && b != nil {
		return b.Password
	}
	return ""
}

// updateConsoleClientURLs calls the injectable console-client hook (docs/controlplane.md#url-resolution). Its failure is
// logged only.
func (r *Reconciler) updateConsoleClientURLs(ctx context.Context, s *scope, urls resources.ControllerURLs) {
	if r.UpdateConsoleClientURLs == nil || urls.ConsoleURL == "" {
		return
	}
	if err := r.UpdateConsoleClientURLs(ctx, s.cp, urls.PublicURL, urls.ConsoleURL); err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "Updating the console client URLs failed")
	}
}

// restartControllerPods rolls the Controller's pods: its processes keep a CA the pass replaced in
// memory (replaceControllerCA). The restartedAt annotation of the pod template is set to the
// pass's time at once, because the Deployment may have been applied earlier in the pass; later
// passes keep it (controllerRestartedAt).
func (r *Reconciler) restartControllerPods(ctx context.Context, s *scope) error {
	s.restartController = true
	live := &appsv1.Deployment{}
	if found, err := r.getExisting(ctx, s, resources.ControllerName, live); err != nil || !found {
		return err
	}
	base := live.DeepCopy()
	if live.Spec.Template.Annotations == nil {
		live.Spec.Template.Annotations = map[string]string{}
	}
	live.Spec.Template.Annotations[resources.AnnotationRestartedAt] = s.now.UTC().Format(time.RFC3339)
	if err := r.Patch(ctx, live, client.MergeFrom(base), client.FieldOwner(FieldOwner)); err != nil {
		return fmt.Errorf("restart the Controller's pods: %w", err)
	}
	ctrl.LoggerFrom(ctx).Info("Restarting the Controller's pods: they keep a replaced CA in memory")
	return nil
}

// controllerRestartedAt is the restartedAt annotation of the Controller's pod template: now when
// this pass replaced a CA the Controller's processes keep in memory (s.restartController), else
// the value the live Deployment carries, so that the pods roll once.
func (r *Reconciler) controllerRestartedAt(ctx context.Context, s *scope) (string, error) {
	if s.restartController {
		return s.now.UTC().Format(time.RFC3339), nil
	}
	live := &appsv1.Deployment{}
	if found, err := r.getExisting(ctx, s, resources.ControllerName, live); err != nil || !found {
		return "", err
	}
	return live.Spec.Template.Annotations[resources.AnnotationRestartedAt], nil
}
