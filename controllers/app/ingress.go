package app

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	networkingv1 "k8s.io/api/networking/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kubeoperav1alpha1 "github.com/kubeopera/kubeopera-operator/api/kubeopera/v1alpha1"
	"github.com/kubeopera/kubeopera-operator/internal/outcome"
	"github.com/kubeopera/kubeopera-operator/internal/render"
)

// What an app may claim with its Ingress (docs/app-controller.md, "Ingress hosts and
// certificates"). A host is a name the platform's ingress controller answers for, and a
// ClusterIssuer signs certificates with the platform's account or CA: the manager flags
// --app-allowed-ingress-hosts and --app-allowed-cluster-issuers restrict both. Empty lists allow
// any (the default, so existing installations keep working).

var (
	// errIngressHostNotAllowed: spec.ingress.host is outside the Ingress host allow-list.
	errIngressHostNotAllowed = errors.New("ingress host not allowed")
	// errClusterIssuerNotAllowed: spec.ingress.clusterIssuer is outside the issuer allow-list.
	errClusterIssuerNotAllowed = errors.New("ClusterIssuer not allowed")
)

// namespacePlaceholder in an Ingress host entry stands for the app's host namespace (its
// CloudSpace's), so one entry gives every CloudSpace a domain of its own:
// "*.{namespace}.apps.example.com".
const namespacePlaceholder = "{namespace}"

// ingressHostAllowed reports whether host may be claimed by an app of host namespace ns: any
// host when allowed is empty; otherwise an entry must answer for every name the host does. An
// entry is an exact name, or "*.domain" for every name below domain. A wildcard host
// "*.sub.domain" answers for the names below sub.domain, so "*.domain" allows it, and allows
// "*.domain" itself; an exact entry allows only that string. Entries may hold {namespace}.
// Names compare case-insensitively, without a trailing dot.
func ingressHostAllowed(allowed []string, ns, host string) bool {
	if len(allowed) == 0 {
		return true
	}
	host = normalizeHost(host)
	for _, entry := range allowed {
		entry = normalizeHost(strings.ReplaceAll(entry, namespacePlaceholder, ns))
		if entry == "" {
			continue
		}
		if entry == host {
			return true
		}
		if domain, ok := strings.CutPrefix(entry, "*."); ok && strings.HasSuffix(host, "."+domain) {
			return true
		}
	}
	return false
}

func normalizeHost(h string) string {
	return strings.TrimSuffix(strings.ToLower(strings.TrimSpace(h)), ".")
}

// checkIngress refuses an Ingress host or ClusterIssuer outside the allow-lists. The issuer is
// only checked where it is rendered: a TLS Ingress.
func (r *Reconciler) checkIngress(app *kubeoperav1alpha1.KubeOperaApp) error {
	in := app.Spec.Ingress
	if in == nil {
		return nil
	}
	if in.Host != "" && !ingressHostAllowed(r.Options.AllowedIngressHosts, app.Namespace, in.Host) {
		return fmt.Errorf("%w: spec.ingress.host %q is not in --app-allowed-ingress-hosts (%s)",
			errIngressHostNotAllowed, in.Host, strings.Join(r.Options.AllowedIngressHosts, ","))
	}
	if in.TLS && len(r.Options.AllowedClusterIssuers) > 0 && !slices.Contains(r.Options.AllowedClusterIssuers, in.ClusterIssuer) {
		return fmt.Errorf("%w: spec.ingress.clusterIssuer %q is not in --app-allowed-cluster-issuers (%s)",
			errClusterIssuerNotAllowed, in.ClusterIssuer, strings.Join(r.Options.AllowedClusterIssuers, ","))
	}
	return nil
}

// ingressError maps a refusal of checkIngress to its reason: terminal, nothing is pushed, a
// change of the app (or a restart with other flags) brings it back.
func ingressError(err error) error {
	const cond = kubeoperav1alpha1.ConditionManifestsCommitted
	if errors.Is(err, errClusterIssuerNotAllowed) {
		return outcome.Stop(kubeoperav1alpha1.ReasonClusterIssuerNotAllowed, err).On(cond)
	}
	return outcome.Stop(kubeoperav1alpha1.ReasonIngressHostNotAllowed, err).On(cond)
}

// certificateGVK is cert-manager's Certificate. The operator does not depend on cert-manager's
// Go module: it reads the few fields it needs from unstructured objects.
var certificateGVK = schema.GroupVersionKind{Group: "cert-manager.io", Version: "v1", Kind: "Certificate"}

// exposure is what the vCluster reports about the app's Ingress, for setSynced.
type exposure struct {
	// ingress: the app renders an Ingress (nothing below is read otherwise).
	ingress bool
	// address is the Ingress's first load-balancer address ("" while it has none, or while
	// the Ingress does not exist yet).
	address string
	// certificate is the cert-manager Certificate of the Ingress's TLS Secret; nil when the
	// Ingress has no TLS, cert-manager is not installed in the vCluster, or there is none.
	certificate *certificateState
}

// certificateState is a Certificate's readiness.
type certificateState struct {
	name  string
	ready bool
	// reason and message are its Ready condition's ("" while it has none).
	reason, message string
}

// observeIngress reads the app's Ingress and, for TLS, the cert-manager Certificate of its TLS
// Secret from the vCluster. cert-manager's ingress-shim names the Certificate after the Secret,
// but a Certificate made by hand for it may have any name: the Certificates of the namespace are
// listed and matched by spec.secretName. A vCluster without the Certificate kind has no
// cert-manager: nothing to wait for.
func observeIngress(ctx context.Context, s *scope) (exposure, error) {
	ing := render.Ingress(s.app)
	if ing == nil {
		return exposure{}, nil
	}
	out := exposure{ingress: true}
	live := &networkingv1.Ingress{}
	switch err := s.vc.Get(ctx, client.ObjectKeyFromObject(ing), live); {
	case apierrors.IsNotFound(err):
	case err != nil:
		return exposure{}, fmt.Errorf("get Ingress %s: %w", ing.Name, err)
	default:
		out.address = loadBalancerAddress(live)
	}
	if len(ing.Spec.TLS) == 0 {
		return out, nil
	}
	certs := &unstructured.UnstructuredList{}
	certs.SetGroupVersionKind(certificateGVK.GroupVersion().WithKind(certificateGVK.Kind + "List"))
	switch err := s.vc.List(ctx, certs, client.InNamespace(ing.Namespace)); {
	case apimeta.IsNoMatchError(err):
		return out, nil
	case err != nil:
		return exposure{}, fmt.Errorf("list cert-manager Certificates in %s: %w", ing.Namespace, err)
	}
	secretName := ing.Spec.TLS[0].SecretName
	for i := range certs.Items {
		if c := &certs.Items[i]; certificateSecret(c) == secretName {
			out.certificate = certificateReadiness(c)
			break
		}
	}
	return out, nil
}

// loadBalancerAddress is the first address an ingress controller wrote into the Ingress status.
func loadBalancerAddress(ing *networkingv1.Ingress) string {
	for _, lb := range ing.Status.LoadBalancer.Ingress {
		if lb.IP != "" {
			return lb.IP
		}
		if lb.Hostname != "" {
			return lb.Hostname
		}
	}
	return ""
}

// certificateSecret is a Certificate's spec.secretName.
func certificateSecret(c *unstructured.Unstructured) string {
	name, _, _ := unstructured.NestedString(c.Object, "spec", "secretName")
	return name
}

// certificateReadiness reads a Certificate's Ready condition. It counts only when it describes
// the Certificate's current generation (cert-manager records observedGeneration on it): a
// Certificate changed since (a new host) is being issued again.
func certificateReadiness(c *unstructured.Unstructured) *certificateState {
	st := &certificateState{name: c.GetName()}
	conds, _, _ := unstructured.NestedSlice(c.Object, "status", "conditions")
	for _, raw := range conds {
		m, ok := raw.(map[string]any)
		if !ok || m["type"] != "Ready" {
			continue
		}
		st.reason, _ = m["reason"].(string)
		st.message, _ = m["message"].(string)
		gen, _, _ := unstructured.NestedInt64(m, "observedGeneration")
		st.ready = m["status"] == string(metav1.ConditionTrue) && (gen == 0 || gen == c.GetGeneration())
	}
	return st
}
