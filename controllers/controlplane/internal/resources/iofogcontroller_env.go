package resources

import (
	"strconv"
	"strings"

	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"

	datasancev3 "github.com/kubeopera/kubeopera-operator/api/datasance/v3"
)

// Controller TLS mount (docs/controlplane.md#controller-deployment, docs/controlplane.md#controller-environment).
const (
	controllerCertDir    = "/etc/iofog/controller-cert"
	controllerCertVolume = "controller-cert"
)

// ControllerURLs are the resolved external URLs and proxy trust of the Controller (docs/controlplane.md#url-resolution).
type ControllerURLs struct {
	PublicURL, ConsoleURL string
	// trustProxy is TRUST_PROXY; nil leaves it unset.
	trustProxy *bool
}

// imageSlots is how many ROUTER_IMAGE_n / NATS_IMAGE_n variables carry the image (docs/controlplane.md#controller-environment).
const imageSlots = 4

// controllerEnv is the Controller container's environment (docs/controlplane.md#controller-environment): literal values first,
// then the Secret-backed ones. Optional tuning variables appear only when their field is set.
func controllerEnv(cp *datasancev3.ControlPlane, images Images, urls ControllerURLs) []*corev1ac.EnvVarApplyConfiguration {
	spec := &cp.Spec
	env := []*corev1ac.EnvVarApplyConfiguration{
		envValue("CONTROL_PLANE", "Kubernetes"),
		envValue("CONTROLLER_NAME", cp.Name),
		envValue("CONTROLLER_NAMESPACE", cp.Namespace),
		envValue("DB_PROVIDER", spec.Database.Provider),
	}
	if spec.UsesSQLite() {
		env = append(env, envValue("SQLITE_STORAGE_DIR", SQLiteDataDir))
	}
	for i := 1; i <= imageSlots; i++ {
		env = append(env, envValue("ROUTER_IMAGE_"+strconv.Itoa(i), images.Router))
	}
	env = append(env, envValue("NATS_ENABLED", strconv.FormatBool(spec.NatsEnabled())))
	if spec.NatsEnabled() {
		for i := 1; i <= imageSlots; i++ {
			env = append(env, envValue("NATS_IMAGE_"+strconv.Itoa(i), images.Nats))
		}
	}
	env = append(env,
		envValue("ECN_NAME", spec.Controller.Ecn),
		envValue("PID_BASE", defaultIfEmpty(spec.Controller.PidBaseDir, datasancev3.DefaultPidBaseDir)),
		envValue("LOG_LEVEL", defaultIfEmpty(spec.Controller.LogLevel, datasancev3.DefaultLogLevel)),
		envValue("CONTROLLER_PUBLIC_URL", urls.PublicURL),
		envValue("CONSOLE_URL", urls.ConsoleURL),
		envValue("CONSOLE_PORT", strconv.Itoa(int(spec.ConsolePortOrDefault()))),
	)
	if urls.trustProxy != nil {
		env = append(env, envValue("TRUST_PROXY", strconv.FormatBool(*urls.trustProxy)))
	}
	env = append(env, authTuningEnv(&spec.Auth)...)
	env = append(env, eventsEnv(&spec.Events)...)
	env = append(env, vaultEnv(cp)...)
	if spec.ControllerHTTPS() {
		env = append(env,
			envValue("SERVER_DEV_MODE", "false"),
			envValue("TLS_PATH_CERT", controllerCertDir+"/tls.crt"),
			envValue("TLS_PATH_KEY", controllerCertDir+"/tls.key"),
			envValue("TLS_PATH_INTERMEDIATE_CERT", controllerCertDir+"/ca.crt"),
		)
	}

	for _, e := range dbSecretEnv {
		env = append(env, envSecret(e.env, DbSecretName, e.key))
	}
	for _, e := range authSecretEnv {
		env = append(env, envSecret(e.env, AuthSecretName, e.key))
	}
	if spec.Auth.SessionStore.SessionSecretSet() {
		env = append(env, envSecret("AUTH_SESSION_SECRET", AuthSecretName, authSessionSecretKey))
	}
	if vaultActive(spec.Vault) {
		_, keys, _ := vaultProviderEnv(spec.Vault)
		for _, e := range keys {
			env = append(env, envSecret(e.env, VaultSecretName, e.key))
		}
	}
	return env
}

// optionalEnv collects variables whose field may be unset.
type optionalEnv []*corev1ac.EnvVarApplyConfiguration

func (o *optionalEnv) bool(name string, v *bool) {
	if v != nil {
		*o = append(*o, envValue(name, strconv.FormatBool(*v)))
	}
}

func (o *optionalEnv) int(name string, v *int32) {
	if v != nil {
		*o = append(*o, envValue(name, strconv.Itoa(int(*v))))
	}
}

func (o *optionalEnv) string(name, v string) {
	if v != "" {
		*o = append(*o, envValue(name, v))
	}
}

// authTuningEnv are the optional AUTH_* / OIDC_* variables of docs/controlplane.md#authentication.
func authTuningEnv(a *datasancev3.Auth) []*corev1ac.EnvVarApplyConfiguration {
	var o optionalEnv
	o.bool("AUTH_INSECURE_ALLOW_HTTP", a.InsecureAllowHTTP)
	o.bool("AUTH_INSECURE_ALLOW_BOOTSTRAP_LOG", a.InsecureAllowBootstrapLog)
	o.string("OIDC_CONSOLE_CLIENT_ID", a.ConsoleClient)
	o.bool("AUTH_CONSOLE_CLIENT_ENABLED", a.ConsoleClientEnabled)
	if r := a.RateLimit; r != nil {
		o.bool("AUTH_RATE_LIMIT_ENABLED", r.Enabled)
		o.int("AUTH_RATE_LIMIT_MAX_REQUESTS", r.MaxRequestsPerWindow)
		o.int("AUTH_RATE_LIMIT_WINDOW_MS", r.WindowMs)
	}
	if s := a.SessionStore; s != nil {
		o.string("AUTH_SESSION_STORE_TYPE", s.Type)
		o.int("AUTH_SESSION_STORE_TTL_MS", s.TTLMs)
	}
	if t := a.TokenTTL; t != nil {
		o.int("AUTH_ACCESS_TOKEN_TTL_SECONDS", t.AccessTokenTTLSeconds)
		o.int("AUTH_REFRESH_TOKEN_TTL_SECONDS", t.RefreshTokenTTLSeconds)
	}
	if t := a.OIDCTTL; t != nil {
		o.int("AUTH_OIDC_INTERACTION_TTL_SECONDS", t.InteractionTTLSeconds)
		o.int("AUTH_OIDC_GRANT_TTL_SECONDS", t.GrantTTLSeconds)
		o.int("AUTH_OIDC_SESSION_TTL_SECONDS", t.SessionTTLSeconds)
		o.int("AUTH_OIDC_ID_TOKEN_TTL_SECONDS", t.IDTokenTTLSeconds)
	}
	return o
}

// eventsEnv are the EVENT_* variables (docs/controlplane.md#audit-events), each only when its field
// is set: EVENT_AUDIT_ENABLED only with auditEnabled (unset, the Controller audits: its default is
// true, docs/controlplane.md#audit-flag-when-unset), retention and cleanup when non-zero unless
// auditing is switched off, EVENT_CAPTURE_IP_ADDRESS whenever its field is set.
func eventsEnv(e *datasancev3.Events) []*corev1ac.EnvVarApplyConfiguration {
	var o optionalEnv
	o.bool("EVENT_AUDIT_ENABLED", e.AuditEnabled)
	if audit := e.AuditEnabled == nil || *e.AuditEnabled; audit {
		if e.RetentionDays != 0 {
			o.int("EVENT_RETENTION_DAYS", &e.RetentionDays)
		}
		if e.CleanupInterval != 0 {
			o.int("EVENT_CLEANUP_INTERVAL", &e.CleanupInterval)
		}
	}
	o.bool("EVENT_CAPTURE_IP_ADDRESS", e.CaptureIPAddress)
	return o
}

// vaultEnv are VAULT_ENABLED, VAULT_PROVIDER and VAULT_BASE_PATH (docs/controlplane.md#vault) when the vault is
// active. Without spec.vault.provider the provider of the block in use is named.
func vaultEnv(cp *datasancev3.ControlPlane) []*corev1ac.EnvVarApplyConfiguration {
	v := cp.Spec.Vault
	if !vaultActive(v) {
		return nil
	}
	enabled := v.Enabled == nil || *v.Enabled
	provider := string(v.Provider)
	if provider == "" {
		provider, _, _ = vaultProviderEnv(v)
	}
	o := optionalEnv{envValue("VAULT_ENABLED", strconv.FormatBool(enabled))}
	o.string("VAULT_PROVIDER", provider)
	o.string("VAULT_BASE_PATH", strings.ReplaceAll(v.BasePath, "$namespace", cp.Namespace))
	return o
}
