// Package tenant finds the Tenant (vCluster) a KubeOperaApp belongs to and builds clients for
// the vClusters from their exported kubeconfig Secrets.
//
// Resolution happens in the app's own namespace only: by name when spec.tenantCRName is set
// (the Tenant's kubeopera.io/cloudspace-id label must equal spec.cloudSpaceId: that label is the
// isolation boundary between customers), otherwise among the Tenants carrying the CloudSpace
// label, taking the one that became Ready first (ties broken by name). Once an app has been
// placed (status.tenant), it is resolved to that Tenant only: it never moves to another vCluster.
//
// Kubeconfig: vcluster exports a kubeconfig whose server is https://localhost:8443, meant for
// port-forwarding. When the server host is literally "localhost", the vcluster Service address
// https://<tenant>.<tenant namespace>.svc:443 is used instead (the vcluster serving certificate
// carries that name); any other server, IP addresses included, is used as written. Credentials
// must be inline: exec plugins, auth providers and references to files are refused, because the
// Secret's content must never make the operator run a program or read its own files.
//
// Clients: one cached client per Tenant (Clients), each with an HTTP transport of its own, so
// dropping a client (its Tenant is gone, no app uses it, or its kubeconfig changed) closes its
// idle connections at once without touching other vClusters' connections. NewClient builds them
// with NewRESTMapper, which reads the discovery of only the group-versions the operator asks
// about (controller-runtime's mapper keeps the whole server's, most of the operator's memory at
// 100 vClusters).
package tenant
