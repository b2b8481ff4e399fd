package conversation

import (
	"context"
	"fmt"

	ctrl "sigs.k8s.io/controller-runtime"

	datasancev3 "github.com/kubeopera/kubeopera-operator/api/datasance/v3"
	"github.com/kubeopera/kubeopera-operator/controllers/controlplane/internal/resources"
	"github.com/kubeopera/kubeopera-operator/internal/iofog"
	"github.com/kubeopera/kubeopera-operator/internal/outcome"
)

// NatsBootstrap is the NATS material the Controller generates (docs/controlplane.md#nats-bootstrap).
// OperatorSeed and Creds are secrets: never log them.
type NatsBootstrap struct {
	OperatorJWT      string
	OperatorSeed     string
	SystemAccount    string
	SystemAccountJWT string
	// Creds is the decoded .creds file of the hub system user.
	Creds []byte
}

// NatsBootstrap logs in and asks GET /nats/bootstrap (docs/controlplane.md#nats-pass-order
// steps 1–3). A Controller that is not up yet, or whose bootstrap fails (403 while it is not the
// Kubernetes control plane, 404 while its NATS Secrets are missing, 5xx), is waited for with a
// requeue: it is asked again until the API responds. Rejected credentials are the login's
// failure, as for every caller of the Session.
func (s *Session) NatsBootstrap(ctx context.Context) (*NatsBootstrap, error) {
	api, err := s.loggedInClient(ctx)
	if err != nil {
		return nil, err
	}
	b, err := api.NatsBootstrap(ctx)
	if err != nil {
		if ctx.Err() != nil {
			return nil, fmt.Errorf("get NATS bootstrap: %w", err)
		}
		ctrl.LoggerFrom(ctx).Info("The Controller's NATS bootstrap failed", "cause", iofog.Cause(err), "error", err.Error())
		return nil, outcome.Wait(datasancev3.ReasonNatsBootstrapFailed, RequeueNatsBootstrap,
			fmt.Sprintf("The Controller's NATS bootstrap failed (%s).", iofog.Cause(err)))
	}
	creds, err := b.SysUserCreds()
	if err != nil {
		ctrl.LoggerFrom(ctx).Info("The Controller's NATS bootstrap is unusable", "error", err.Error())
		return nil, outcome.Wait(datasancev3.ReasonNatsBootstrapFailed, RequeueNatsBootstrap,
			"The Controller's NATS bootstrap is unusable (invalid response).")
	}
	return &NatsBootstrap{
		OperatorJWT:      b.OperatorJwt,
		OperatorSeed:     b.OperatorSeed,
		SystemAccount:    b.SystemAccountPublicKey,
		SystemAccountJWT: b.SystemAccountJwt,
		Creds:            creds,
	}, nil
}

// NatsOperator logs in and reads the public key of the NATS operator the Controller holds (GET
// /nats/operator). A failed read is logged here.
func (s *Session) NatsOperator(ctx context.Context) (string, error) {
	api, err := s.loggedInClient(ctx)
	if err != nil {
		return "", err
	}
	op, err := api.NatsOperator(ctx)
	if err != nil {
		ctrl.LoggerFrom(ctx).Info("Could not read the Controller's NATS operator; keeping the stored one",
			"cause", iofog.Cause(err), "error", err.Error())
		return "", err
	}
	return op.PublicKey, nil
}

// NatsAccounts are the Controller's NATS accounts (GET /nats/accounts).
type NatsAccounts []iofog.NatsAccount

// Bundle is the JWT bundle of the accounts and the system account (resources.NatsJWTBundle); of
// the system account alone when a is nil.
func (a NatsAccounts) Bundle(systemAccount, systemAccountJWT string) map[string]string {
	return resources.NatsJWTBundle(systemAccount, systemAccountJWT, a)
}

// NatsAccounts lists the Controller's NATS accounts over the pass's session. A failure is a
// *CallError: a Controller that cannot be asked in this pass (a wait of the session) is, for the
// list, a list that failed.
func (s *Session) NatsAccounts(ctx context.Context) (NatsAccounts, error) {
	api, err := s.loggedInClient(ctx)
	switch {
	case outcome.IsWait(err):
		return nil, callError(fmt.Errorf("list NATS accounts: %s", err.Error()))
	case err != nil:
		return nil, callError(err)
	}
	accounts, err := api.NatsAccounts(ctx)
	return accounts, callError(err)
}
