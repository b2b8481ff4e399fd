package v3

import corev1 "k8s.io/api/core/v1"

// Defaults applied by the operator when a field is omitted. They are applied once, here, so every
// decision (Service type, exposure, replica counts) tests the defaulted value: the upstream tested
// the raw field in some places and the defaulted one in others.
const (
	DefaultConsolePort     int32 = 8008
	DefaultNatsReplicas    int32 = 3
	MinNatsReplicas        int32 = 2
	DefaultPidBaseDir            = "/home/runner"
	DefaultLogLevel              = "info"
	DefaultStorageSize           = "10Gi"
	DefaultMemoryStoreSize       = "1G"
)

// NatsEnabled reports whether NATS is deployed (default true).
func (s *ControlPlaneSpec) NatsEnabled() bool {
	return s.Nats == nil || s.Nats.Enabled == nil || *s.Nats.Enabled
}

// NatsReplicas is the NATS replica count in force: DefaultNatsReplicas when omitted, at least
// MinNatsReplicas otherwise. Three servers are the default because the JetStream meta group needs
// a majority of the servers: three keep it with one server down (a node drain, a rolling update),
// two do not.
func (s *ControlPlaneSpec) NatsReplicas() int32 {
	switch {
	case s.Replicas.Nats == nil:
		return DefaultNatsReplicas
	case *s.Replicas.Nats < MinNatsReplicas:
		return MinNatsReplicas
	}
	return *s.Replicas.Nats
}

// ControllerReplicas is the Controller replica count in force: 1 when 0 or omitted.
func (s *ControlPlaneSpec) ControllerReplicas() int32 {
	if s.Replicas.Controller < 1 {
		return 1
	}
	return s.Replicas.Controller
}

// UsesSQLite reports whether the Controller uses the embedded SQLite database.
func (s *ControlPlaneSpec) UsesSQLite() bool { return s.Database.Host == "" }

// ControllerHTTPS reports whether the Controller pod serves TLS.
func (s *ControlPlaneSpec) ControllerHTTPS() bool {
	return s.Controller.HTTPS != nil && *s.Controller.HTTPS
}

// ConsolePortOrDefault is the console container port.
func (s *ControlPlaneSpec) ConsolePortOrDefault() int32 {
	if s.Controller.ConsolePort == 0 {
		return DefaultConsolePort
	}
	return s.Controller.ConsolePort
}

// ServiceType is the defaulted type of a component Service: LoadBalancer when omitted.
func ServiceType(svc *ServiceSpec) corev1.ServiceType {
	if svc == nil || svc.Type == "" {
		return corev1.ServiceTypeLoadBalancer
	}
	return svc.Type
}

// ControllerIngressMode reports whether the Controller is exposed through Ingress controller.
func (s *ControlPlaneSpec) ControllerIngressMode() bool {
	return ServiceType(s.Services.Controller) == corev1.ServiceTypeClusterIP &&
		s.Ingresses.Controller != nil && s.Ingresses.Controller.Host != ""
}
