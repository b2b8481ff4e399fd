// Package testfixture holds the inputs and set-ups the module's tests share: builders with
// named modifiers of ControlPlanes (ControlPlane, Sample and the With… functions), KubeOperaApps
// (KubeOperaApp and the App… functions) and Tenants (Tenant and the Tenant… functions), and the
// outage helper (Outage) of the tests that take a dependency away while the operator works.
//
// It is for tests only: test/architecture checks that no package outside test/ imports it in
// its own (non-test) files and that the operator's binary does not depend on it. It imports
// nothing of the operator but the API types, so any test package can use it without a cycle,
// the in-package tests of controllers/controlplane/internal/resources and internal/tenant
// included. The builders are pure: no client, no I/O (Sample reads the sample file and nothing
// else).
package testfixture

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	datasancev3 "github.com/kubeopera/kubeopera-operator/api/datasance/v3"
)

// The name and namespace of the ControlPlane that ControlPlane builds.
const (
	Name      = "iofog"
	Namespace = "edge"
)

// The operand images of the unit tests (resources.Images{Controller: ControllerImage, ...}).
const (
	ControllerImage = "c:1"
	RouterImage     = "r:1"
	NatsImage       = "n:1"
)

// The external Postgres database of WithPostgres.
const (
	PostgresHost     = "postgres.db.svc"
	PostgresPort     = 5432
	PostgresUser     = "controller"
	PostgresDatabase = "controller"
)

// Mod changes a ControlPlane a builder of this package makes; mods apply in order, so a later
// one overrides an earlier one. It is an alias, so a test's own func(*ControlPlane) (or a slice
// of them) is a Mod as it stands.
type Mod = func(*datasancev3.ControlPlane)

// ControlPlane is a minimal valid ControlPlane, Name in Namespace: embedded auth with bootstrap
// user admin and password pw, a Postgres database at db:5432, everything else defaulted (NATS
// on, every Service a LoadBalancer); then mods are applied in order. It has no UID and no
// generation, as a ControlPlane a user writes (WithUID gives it one for the builders' tests).
func ControlPlane(mods ...Mod) *datasancev3.ControlPlane {
	cp := &datasancev3.ControlPlane{
		ObjectMeta: metav1.ObjectMeta{Name: Name, Namespace: Namespace},
		Spec: datasancev3.ControlPlaneSpec{
			Auth:     datasancev3.Auth{Mode: datasancev3.AuthModeEmbedded, Bootstrap: &datasancev3.Bootstrap{Username: "admin", Password: "pw"}},
			Database: datasancev3.Database{Provider: "postgres", Host: "db", Port: 5432},
		},
	}
	apply(cp, mods)
	return cp
}

func apply(cp *datasancev3.ControlPlane, mods []Mod) {
	for _, m := range mods {
		m(cp)
	}
}

// Named sets the ControlPlane's name.
func Named(name string) Mod {
	return func(cp *datasancev3.ControlPlane) { cp.Name = name }
}

// InNamespace sets the ControlPlane's namespace.
func InNamespace(ns string) Mod {
	return func(cp *datasancev3.ControlPlane) { cp.Namespace = ns }
}

// WithUID sets the ControlPlane's UID, which the API server assigns on create; the builders'
// tests need one for the owner references.
func WithUID(uid types.UID) Mod {
	return func(cp *datasancev3.ControlPlane) { cp.UID = uid }
}

// WithBootstrap sets the embedded auth's bootstrap user and inline password.
func WithBootstrap(username, password string) Mod {
	return func(cp *datasancev3.ControlPlane) {
		cp.Spec.Auth.Bootstrap = &datasancev3.Bootstrap{Username: username, Password: password}
	}
}

// WithBootstrapPasswordFrom makes the bootstrap password a reference to key of the Secret
// secret (which wins over an inline password).
func WithBootstrapPasswordFrom(secret, key string) Mod {
	return func(cp *datasancev3.ControlPlane) {
		cp.Spec.Auth.Bootstrap.PasswordSecretRef = &corev1.SecretKeySelector{
			LocalObjectReference: corev1.LocalObjectReference{Name: secret}, Key: key,
		}
	}
}

// WithPostgres points the Controller at the external Postgres database of the envtest suites
// (PostgresHost:PostgresPort, database PostgresDatabase, user PostgresUser) with an inline
// password.
func WithPostgres(password string) Mod {
	return func(cp *datasancev3.ControlPlane) {
		cp.Spec.Database = datasancev3.Database{
			Provider: "postgres", Host: PostgresHost, Port: PostgresPort,
			User: PostgresUser, Password: password, DatabaseName: PostgresDatabase,
		}
	}
}

// WithSQLite gives the Controller its SQLite database (no database settings: a PVC).
func WithSQLite() Mod {
	return func(cp *datasancev3.ControlPlane) { cp.Spec.Database = datasancev3.Database{} }
}

// WithHTTPS serves the Controller API over HTTPS with the TLS Secret secretName.
func WithHTTPS(secretName string) Mod {
	return func(cp *datasancev3.ControlPlane) {
		cp.Spec.Controller.HTTPS = ptr.To(true)
		cp.Spec.Controller.SecretName = secretName
	}
}

// WithPublicURL sets the Controller's public URL.
func WithPublicURL(url string) Mod {
	return func(cp *datasancev3.ControlPlane) { cp.Spec.Controller.PublicURL = url }
}

// WithControllerIngress exposes the Controller through the Ingress ing instead of a load
// balancer (its Service becomes ClusterIP).
func WithControllerIngress(ing datasancev3.ControllerIngress) Mod {
	return func(cp *datasancev3.ControlPlane) {
		cp.Spec.Services.Controller = &datasancev3.ServiceSpec{Type: corev1.ServiceTypeClusterIP}
		cp.Spec.Ingresses.Controller = &ing
	}
}
