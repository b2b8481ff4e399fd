package controlplane

import (
	"fmt"
	"strconv"
)

// Common names of the NATS server certificates (spec §6.6); the CAs are named after their Secret.
const (
	natsSiteServerCN = "iofog-nats"
	natsMQTTServerCN = "iofog-nats-mqtt"
)

// natsServerHosts are the SANs of both server certificates (spec §6.6): every pod's headless
// name, the headless wildcard, the two Service names and the external address when known.
func natsServerHosts(namespace string, replicas int32, externalAddress string) []string {
	hosts := make([]string, 0, replicas+4)
	for i := range replicas {
		hosts = append(hosts, fmt.Sprintf("%s-%d.%s", natsStatefulSetName, i, natsHeadlessServiceName))
	}
	hosts = append(hosts,
		fmt.Sprintf("*.%s.%s.svc.cluster.local", natsHeadlessServiceName, namespace),
		fmt.Sprintf("%s.%s.svc.cluster.local", natsServiceName, namespace),
		fmt.Sprintf("%s.%s.svc.cluster.local", natsServerServiceName, namespace),
	)
	if externalAddress != "" {
		hosts = append(hosts, externalAddress)
	}
	return hosts
}

// natsCertificates are the four NATS TLS Secrets in generation order, CAs first. The server
// Secrets record the replica count their SANs were made for (annotationNatsReplicas); a change
// of the count changes the hosts, which renews them.
func natsCertificates(namespace string, replicas int32, externalAddress string) []tlsSecretSpec {
	hosts := natsServerHosts(namespace, replicas, externalAddress)
	server := map[string]string{annotationNatsReplicas: strconv.Itoa(int(replicas))}
	return []tlsSecretSpec{
		{name: natsSiteCASecretName, commonName: natsSiteCASecretName},
		{name: natsLocalCASecretName, commonName: natsLocalCASecretName},
		{name: natsSiteServerSecretName, commonName: natsSiteServerCN, caName: natsSiteCASecretName, hosts: hosts, annotations: server},
		{name: natsMQTTServerSecretName, commonName: natsMQTTServerCN, caName: natsLocalCASecretName, hosts: hosts, annotations: server},
	}
}

// natsServerTLSHash is the hash of the two NATS server Secrets, stamped on the pod template so
// that a renewed certificate rolls the pods (NATS reads its certificates at start).
func natsServerTLSHash(secrets map[string]map[string][]byte) string {
	return hashData(map[string]map[string][]byte{
		natsSiteServerSecretName: secrets[natsSiteServerSecretName],
		natsMQTTServerSecretName: secrets[natsMQTTServerSecretName],
	})
}
