package fake

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kubeopera/kubeopera-operator/internal/iofog"
)

// HubJWTBundleConfigMap is the ConfigMap the Controller writes the hub's account JWTs into when
// it runs on Kubernetes (its K8S_NATS_JWT_BUNDLE_CONFIG_MAP); the operator creates it.
const HubJWTBundleConfigMap = "iofog-nats-jwt-bundle"

// systemAccountName is the name the Controller gives its system account.
const systemAccountName = "SYS"

// kubernetesTarget is the namespace the Controller writes Kubernetes objects into, and the
// client it writes with (its ServiceAccount's permissions).
type kubernetesTarget struct {
	client    client.Client
	namespace string
}

// SetKubernetes makes the fake a Controller that runs on Kubernetes in namespace and writes
// the hub JWT bundle through c, as the real Controller does from its NATS reconcile task (see
// AddNatsAccount). A nil c stops the writes.
func (s *Server) SetKubernetes(c client.Client, namespace string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if c == nil {
		s.kube = nil
		return
	}
	s.kube = &kubernetesTarget{client: c, namespace: namespace}
}

// natsAccounts returns every account GET /nats/accounts lists: the system account of the
// database's operator material first (none on an empty database: listing creates nothing),
// then the accounts added with AddNatsAccount. s.mu is held.
func (s *Server) natsAccounts() []iofog.NatsAccount {
	out := []iofog.NatsAccount{}
	if s.bootstrap != nil {
		out = append(out, iofog.NatsAccount{
			ID: 1, Name: systemAccountName, PublicKey: s.bootstrap.SystemAccountPublicKey,
			JWT: s.bootstrap.SystemAccountJwt, IsSystem: true,
		})
	}
	return append(out, s.accounts...)
}

// NatsAccounts returns what GET /nats/accounts lists.
func (s *Server) NatsAccounts() []iofog.NatsAccount {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.natsAccounts()
}

// handleListAccounts is GET /nats/accounts: {"accounts":[{id, name, publicKey, jwt, isSystem,
// isLeafSystem, applicationId}]}, in creation order.
func (s *Server) handleListAccounts(w http.ResponseWriter) {
	s.mu.Lock()
	accounts := s.natsAccounts()
	s.mu.Unlock()
	writeJSON(w, http.StatusOK, map[string]any{"accounts": accounts})
}

// AddNatsAccount records an account the Controller created (an application account, made when
// an application gets NATS access, or a leaf node's system account): GET /nats/accounts lists
// it from then on. The test supplies the account's key and JWT (signed by the bootstrap's
// operator), so that it can issue users of the account itself. Its ID is assigned here.
//
// Then, like the Controller's NATS reconcile task, it writes the hub bundle when a Kubernetes
// target is set (SetKubernetes): the system account's and every application account's JWT,
// each as a JSON Patch "replace" of /data/<public key>.jwt in ConfigMap iofog-nats-jwt-bundle.
// The Controller never creates that ConfigMap (a missing one is skipped), never removes a key,
// and sends nothing when the data is already exactly its bundle. The returned error is the
// write's; the real Controller only logs it, and the account exists either way.
func (s *Server) AddNatsAccount(ctx context.Context, a iofog.NatsAccount) error {
	s.mu.Lock()
	if _, _, err := s.ensureOperatorLocked(); err != nil {
		s.mu.Unlock()
		return err
	}
	a.ID = len(s.accounts) + 2 // 1 is the system account
	s.accounts = append(s.accounts, a)
	saveErr := s.saveLocked()
	s.mu.Unlock()
	if saveErr != nil {
		return saveErr
	}
	return s.reconcileHubBundle(ctx)
}

// reconcileHubBundle is the Controller's NATS reconcile task for the hub: the current hub bundle
// written into ConfigMap iofog-nats-jwt-bundle when a Kubernetes target is set (SetKubernetes).
// It returns the write's error, which the real task only logs.
func (s *Server) reconcileHubBundle(ctx context.Context) error {
	s.mu.Lock()
	kube, bundle := s.kube, hubBundle(s.natsAccounts())
	s.mu.Unlock()
	if kube == nil {
		return nil
	}
	return kube.patchHubBundle(ctx, bundle)
}

// hubBundle is the Controller's hub JWT bundle (its _buildHubJwtBundle): the system account and
// the application accounts, as <public key>.jwt → JWT.
func hubBundle(accounts []iofog.NatsAccount) map[string]string {
	out := map[string]string{}
	for _, a := range accounts {
		if a.InHubBundle() {
			out[a.PublicKey+".jwt"] = a.JWT
		}
	}
	return out
}

// patchHubBundle writes bundle into the hub JWT bundle ConfigMap the way the Controller's
// k8s-client patchConfigMap does: one JSON Patch of "replace" operations, one per key.
func (k *kubernetesTarget) patchHubBundle(ctx context.Context, bundle map[string]string) error {
	cm := &corev1.ConfigMap{}
	err := k.client.Get(ctx, types.NamespacedName{Namespace: k.namespace, Name: HubJWTBundleConfigMap}, cm)
	switch {
	case apierrors.IsNotFound(err):
		return nil
	case err != nil:
		return fmt.Errorf("read ConfigMap %s: %w", HubJWTBundleConfigMap, err)
	case maps.Equal(cm.Data, bundle):
		return nil
	}
	ops := make([]map[string]string, 0, len(bundle))
	for _, key := range slices.Sorted(maps.Keys(bundle)) {
		ops = append(ops, map[string]string{"op": "replace", "path": "/data/" + jsonPointerEscape(key), "value": bundle[key]})
	}
	patch, err := json.Marshal(ops)
	if err != nil {
		return fmt.Errorf("encode the JWT bundle patch: %w", err)
	}
	if err := k.client.Patch(ctx, cm, client.RawPatch(types.JSONPatchType, patch)); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("patch ConfigMap %s: %w", HubJWTBundleConfigMap, err)
	}
	return nil
}

// jsonPointerEscape escapes a key for a JSON Pointer (RFC 6901).
func jsonPointerEscape(key string) string {
	return strings.NewReplacer("~", "~0", "/", "~1").Replace(key)
}
