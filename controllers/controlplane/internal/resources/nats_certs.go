package resources

import (
	"fmt"
	"strconv"
)

// Common names of the NATS server certificates (docs/controlplane.md#tls); the CAs are
// named after their Secret.
const (
	natsSiteServerCN = "iofog-nats"
	natsMQTTServerCN = "iofog-nats-mqtt"
)

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

// NatsCertificates are the four NATS TLS Secrets in generation order, CAs first. The server
// Secrets record the replica count their SANs were made for (AnnotationNatsReplicas); another
// count changes the hosts, which renews them.
func NatsCertificates(namespace string, replicas int32, externalAddress string) []TLSSecretSpec {
	hosts := NatsServerHosts(namespace, replicas, externalAddress)
	server := map[string]string{AnnotationNatsReplicas: strconv.Itoa(int(replicas))}
	return []TLSSecretSpec{
		{Name: natsSiteCASecretName, CommonName: natsSiteCASecretName},
		{Name: natsLocalCASecretName, CommonName: natsLocalCASecretName},
		{Name: natsSiteServerSecretName, CommonName: natsSiteServerCN, CAName: natsSiteCASecretName, Hosts: hosts, Annotations: server},
		{Name: natsMQTTServerSecretName, CommonName: natsMQTTServerCN, CAName: natsLocalCASecretName, Hosts: hosts, Annotations: server},
	}
}
