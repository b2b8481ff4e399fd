package controlplane

import (
	"context"

	datasancev3 "github.com/kubeopera/kubeopera-operator/api/datasance/v3"
	"github.com/kubeopera/kubeopera-operator/internal/iofog"
)

// This file holds the NATS component's hooks (spec §6). The component itself is the next issue:
// until then it reports Continue, and with spec.nats.enabled false it must stay so. The
// Controller component calls natsHubRegistration and natsCASecretNames only when NATS is enabled.

// reconcileNats is the NATS component (spec §6). Placeholder: Continue.
func reconcileNats(_ context.Context, s *scope) (result, error) {
	s.cp.Status.Nats.Enabled = s.natsEnabled()
	if !s.natsEnabled() {
		s.cp.Status.Nats.Replicas = 0
		s.cp.Status.Nats.Address = ""
		return proceed(), nil
	}
	return proceed(), nil
}

// natsHubRegistration returns the NATS hub to register with the Controller (spec §6.10), or nil
// to skip the registration (no external NATS address). Placeholder: nil.
func natsHubRegistration(_ context.Context, _ *scope) (*iofog.NatsHub, result, error) {
	return nil, proceed(), nil
}

// natsCASecretNames are the NATS CA Secrets imported into the Controller's catalog when NATS is
// enabled (spec §6.10: nats-site-ca, default-nats-local-ca). Placeholder: none yet, because the
// NATS component does not create them yet.
func natsCASecretNames() []string { return nil }

// natsReferencedSecretNames are NATS Secrets a ControlPlane reads without owning them (BYO NATS
// CAs), for the Secret watch. Placeholder: none.
func natsReferencedSecretNames(_ *datasancev3.ControlPlaneSpec) []string { return nil }
