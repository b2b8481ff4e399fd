package resources

import (
	"fmt"
)

// Common names of the NATS server certificates (docs/controlplane.md#nats-tls-secrets); the CAs are named after their Secret.
const (
	natsSiteServerCN = "iofog-nats"
	natsMQTTServerCN = "iofog-nats-mqtt"
)

// NatsCert is one server certificate and the CA Secret that signs it.
type NatsCert struct {
	Secret, CASecret, CommonName string
}

// NatsServerCerts are the two NATS server certificates, each with the CA that signs it.
var NatsServerCerts = []NatsCert{
	{Secret: natsSiteServerSecretName, CASecret: natsSiteCASecretName, CommonName: natsSiteServerCN},
	{Secret: natsMQTTServerSecretName, CASecret: natsLocalCASecretName, CommonName: natsMQTTServerCN},
}

// NatsServerHosts are the SANs of both server certificates (docs/controlplane.md#nats-tls-secrets): every pod's headless
// name, the headless wildcard, the two Service names and the external address when known.
func NatsServerHosts(namespace string, replicas int32, externalAddress string) []string {
	hosts := make([]string, 0, replicas+4)
	for i := range replicas {
		hosts = append(hosts, fmt.Sprintf("%s-%d.%s", NatsStatefulSetName, i, NatsHeadlessServiceName))
	}
	hosts = append(hosts,
		fmt.Sprintf("*.%s.%s.svc.cluster.local", NatsHeadlessServiceName, namespace),
		fmt.Sprintf("%s.%s.svc.cluster.local", NatsServiceName, namespace),
		fmt.Sprintf("%s.%s.svc.cluster.local", NatsServerServiceName, namespace),
	)
	if externalAddress != "" {
		hosts = append(hosts, externalAddress)
	}
	return hosts
}
