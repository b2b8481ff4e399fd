package controlplane

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	"k8s.io/klog/v2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kubeopera/kubeopera-operator/controllers/controlplane/internal/resources"
)

// natsBootstrap is the NATS material the Controller generates (docs/controlplane.md#nats-bootstrap). operatorSeed and creds
// are secrets: never log them.
type natsBootstrap struct {
	operatorJWT      string
	operatorSeed     string
	systemAccount    string
	systemAccountJWT string
	// creds is the decoded .creds file of the hub system user.
	creds []byte
	// fetched is true for material the Controller answered in this pass, false for what earlier
	// passes stored.
	fetched bool
}

// operatorPublicKey is the operator's public key: the subject of its self-signed JWT.
func (b *natsBootstrap) operatorPublicKey() string {
	subject, _ := resources.NatsJWTSubjectIssuer(b.operatorJWT)
	return subject
}

// obtainNatsBootstrap is steps 1–3 of docs/controlplane.md#nats-pass-order: the bootstrap material, fetched from the
// Controller (status check, login, GET /nats/bootstrap) and stored in Secrets nats-operator-seed
// and nats-creds-sys-admin-hub. While the ControlPlane is ready, the material stored by an
// earlier pass is used instead, so drift repair does not call the Controller; the Controller is
// asked again when something of it is missing, or when the Controller holds another NATS
// operator than the stored one (natsOperatorChanged, docs/controlplane.md#nats-operator-changes).
func (r *Reconciler) obtainNatsBootstrap(ctx context.Context, s *scope, conv controllerConversation) (*natsBootstrap, error) {
	var stored *natsBootstrap
	if s.steady {
		var err error
		if stored, err = r.storedNatsBootstrap(ctx, s); err != nil {
			return nil, err
		}
		if stored != nil && !natsOperatorChanged(ctx, conv, stored) {
			return stored, nil
		}
	}
	b, err := fetchNatsBootstrap(ctx, conv)
	if err != nil {
		return nil, err
	}
	if stored != nil && stored.operatorPublicKey() != b.operatorPublicKey() {
		ctrl.LoggerFrom(ctx).Info("The Controller's NATS operator changed; the hub follows it",
			"trusted", stored.operatorPublicKey(), "controller", b.operatorPublicKey())
		r.event(s.cp, corev1.EventTypeNormal, eventNatsOperatorChanged, fmt.Sprintf(
			"The Controller's NATS operator changed from %s to %s (rotated, or a new Controller database): "+
				"the hub now trusts %s, and its pods restart to load it.",
			stored.operatorPublicKey(), b.operatorPublicKey(), b.operatorPublicKey()))
	}
	if err := r.storeNatsBootstrap(ctx, s, b); err != nil {
		return nil, err
	}
	return b, nil
}

// natsOperatorChanged reports whether the Controller is known to hold another NATS operator than
// the one of stored, the material the hub trusts. The operator, its seed and the system account
// are rows of the Controller's database (Datasance/Controller src/services/nats-auth-service.js,
// ensureOperator, rotateOperator), so they change in two ways, each seen without polling:
//   - a rotation re-signs every account JWT, and the Controller writes them into the JWT bundle,
//     which is watched: the bundle's system-account JWT signed by another key than the trusted
//     operator is the sign;
//   - a new database makes a new operator at the next NATS call; a Controller loses its database
//     with a process restart, so a process not seen before (the registration check,
//     docs/controlplane.md#controller-restarts) is asked GET /nats/operator once.
//
// A Controller that cannot be asked (down, login refused, an older one without the route) counts
// as unchanged here: the NATS objects keep the stored material, and the Controller component
// reports the failure.
func natsOperatorChanged(ctx context.Context, conv controllerConversation, stored *natsBootstrap) bool {
	trusted := stored.operatorPublicKey()
	if _, signer := resources.NatsJWTSubjectIssuer(stored.systemAccountJWT); signer != trusted {
		return true
	}
	if !conv.VerificationDue() {
		return false
	}
	if seen, err := conv.ProcessSeen(ctx); err != nil || seen {
		return false
	}
	// A failed read is logged by the conversation.
	key, err := conv.NatsOperator(ctx)
	if err != nil {
		return false
	}
	return key != trusted
}

// fetchNatsBootstrap asks the Controller for the bootstrap material (conv.NatsBootstrap, which
// waits with a requeue while the Controller cannot give it).
func fetchNatsBootstrap(ctx context.Context, conv controllerConversation) (*natsBootstrap, error) {
	b, err := conv.NatsBootstrap(ctx)
	if err != nil {
		return nil, err
	}
	return &natsBootstrap{
		operatorJWT:      b.OperatorJWT,
		operatorSeed:     b.OperatorSeed,
		systemAccount:    b.SystemAccount,
		systemAccountJWT: b.SystemAccountJWT,
		creds:            b.Creds,
		fetched:          true,
	}, nil
}

// storeNatsBootstrap writes the bootstrap Secrets: created, or their data overwritten when it
// differs (docs/controlplane.md#nats-bootstrap).
func (r *Reconciler) storeNatsBootstrap(ctx context.Context, s *scope, b *natsBootstrap) error {
	for _, desired := range []*corev1ac.SecretApplyConfiguration{
		resources.NatsOperatorSeedSecret(s.cp, b.operatorSeed),
		resources.NatsSysCredsSecret(s.cp, b.creds),
	} {
		changed, err := applyIfChanged(ctx, r, s, desired, &corev1.Secret{}, corev1ac.ExtractSecret)
		if err != nil {
			return err
		}
		if changed {
			ctrl.LoggerFrom(ctx).Info("Stored NATS bootstrap Secret", "Secret", klog.KRef(s.namespace(), *desired.GetName()))
		}
	}
	return nil
}

// storedNatsBootstrap reads back what earlier passes stored: the two bootstrap Secrets, the
// operator JWT and system account of server.conf, and the system account JWT of the JWT bundle.
// It returns nil when any of it is missing.
func (r *Reconciler) storedNatsBootstrap(ctx context.Context, s *scope) (*natsBootstrap, error) {
	var seed, creds corev1.Secret
	var conf, bundle corev1.ConfigMap
	for _, o := range []struct {
		name string
		obj  client.Object
	}{
		{resources.NatsOperatorSeedSecretName, &seed}, {resources.NatsSysCredsSecretName, &creds},
		{resources.NatsConfigMapName, &conf}, {resources.NatsJWTBundleMapName, &bundle},
	} {
		if found, err := r.getExisting(ctx, s, o.name, o.obj); err != nil || !found {
			return nil, err
		}
	}
	operatorJWT, systemAccount := resources.ParseNatsBootstrapConf(conf.Data[resources.NatsConfigKey])
	b := &natsBootstrap{
		operatorJWT:      operatorJWT,
		operatorSeed:     string(seed.Data[resources.NatsOperatorSeedKey]),
		systemAccount:    systemAccount,
		systemAccountJWT: bundle.Data[resources.NatsJWTKey(systemAccount)],
		creds:            creds.Data[resources.NatsSysCredsKey],
	}
	if b.operatorJWT == "" || b.operatorSeed == "" || b.systemAccount == "" || b.systemAccountJWT == "" || len(b.creds) == 0 {
		return nil, nil
	}
	return b, nil
}
