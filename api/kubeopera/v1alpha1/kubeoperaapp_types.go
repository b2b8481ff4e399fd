package v1alpha1

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// KubeOperaAppSpec is the application the KubeOpera API asks for. The field names are the contract
// with the KubeOpera API, which writes these objects: never rename them.
//
// +kubebuilder:validation:XValidation:rule=`!has(oldSelf.tenantCRName) || (has(self.tenantCRName) && self.tenantCRName == oldSelf.tenantCRName)`,message="spec.tenantCRName cannot be changed once set: an app never moves to another vCluster",fieldPath=".tenantCRName"
// +kubebuilder:validation:XValidation:rule=`!has(self.ingress) || (!self.ingress.?tls.orValue(false) && self.ingress.?host.orValue("") == "") || size(self.app.?ports.orValue([])) > 0`,message="spec.app.ports must list at least one port when an Ingress is requested",fieldPath=".app.ports"
type KubeOperaAppSpec struct {
	// CloudSpaceID is the CloudSpace that owns the app. Immutable.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:XValidation:rule=`self == oldSelf`,message="spec.cloudSpaceId is immutable"
	// +required
	CloudSpaceID string `json:"cloudSpaceId"`

	// TenantCRName is the exact Tenant (in the app's namespace) to deploy into. Its
	// kubeopera.io/cloudspace-id label must equal cloudSpaceId. When empty, the Tenant of the
	// CloudSpace that became Ready first is used, and then pinned in status.tenant.
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`
	// +optional
	TenantCRName string `json:"tenantCRName,omitempty"`

	// TargetNamespace is the namespace inside the vCluster; default the app's name. Immutable once
	// set: moving an app would leave its copied Secrets behind in the old namespace.
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="spec.targetNamespace is immutable"
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`
	// +optional
	TargetNamespace string `json:"targetNamespace,omitempty"`

	// App is the workload.
	// +required
	App AppSpec `json:"app"`

	// Registry names the image pull Secret copied into the vCluster.
	// +optional
	Registry *RegistrySpec `json:"registry,omitempty"`

	// Git is the tenant apps repository the manifests are committed to.
	// +required
	Git GitSpec `json:"git"`

	// Ingress exposes the app; rendered when tls is true or host is set.
	// +optional
	Ingress *IngressSpec `json:"ingress,omitempty"`

	// Flux configures the Flux objects in the vCluster.
	// +kubebuilder:default={}
	// +optional
	Flux FluxSpec `json:"flux,omitempty"`
}

// AppSpec is the workload: one Deployment and its Service.
//
// +kubebuilder:validation:XValidation:rule=`!has(self.ports) || self.ports.all(p, self.ports.exists_one(q, q.name == p.name))`,message="spec.app.ports names must be unique",fieldPath=".ports"
type AppSpec struct {
	// Image of the app's container.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=1024
	// +kubebuilder:validation:XValidation:rule=`self.trim() == self && !self.contains(' ')`,message="spec.app.image must not contain spaces"
	// +required
	Image string `json:"image"`

	// Replicas of the Deployment; default 1.
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=1000
	// +kubebuilder:default=1
	// +optional
	Replicas *int32 `json:"replicas,omitempty"`

	// Ports of the container and the Service.
	// +kubebuilder:validation:MaxItems=64
	// +listType=atomic
	// +optional
	Ports []AppPort `json:"ports,omitempty"`

	// Env of the container. Values are committed to Git: reference Secrets (valueFrom) for
	// anything secret.
	// +kubebuilder:validation:MaxItems=256
	// +listType=atomic
	// +optional
	// What the pod validation would refuse in the rendered Deployment is refused here (docs/reliability.md,
	// "Rendered objects vs the API server").
	// +kubebuilder:validation:XValidation:rule=`self.all(e, !has(e.valueFrom) || !has(e.value) || e.value == '')`,message="spec.app.env: value and valueFrom are exclusive"
	// +kubebuilder:validation:XValidation:rule=`self.all(e, !has(e.valueFrom) || [has(e.valueFrom.configMapKeyRef), has(e.valueFrom.secretKeyRef), has(e.valueFrom.fieldRef), has(e.valueFrom.resourceFieldRef), has(e.valueFrom.fileKeyRef)].exists_one(x, x))`,message="spec.app.env: valueFrom must name exactly one source"
	// Every app of a repository shares its size limit, so one app's values are bounded: each at
	// most 32768 characters, all together at most 131072.
	// +kubebuilder:validation:XValidation:rule=`self.all(e, size(e.?value.orValue('')) <= 32768)`,message="spec.app.env: a value must be at most 32768 characters"
	// +kubebuilder:validation:XValidation:rule=`self.map(e, size(e.?value.orValue(''))).sum() <= 131072`,message="spec.app.env: the values together must be at most 131072 characters"
	Env []corev1.EnvVar `json:"env,omitempty"`

	// Command overrides the image entrypoint: at most 64 items of at most 4096 characters, 16384
	// together.
	// +kubebuilder:validation:MaxItems=64
	// +kubebuilder:validation:items:MaxLength=4096
	// +kubebuilder:validation:XValidation:rule=`self.map(c, size(c)).sum() <= 16384`,message="spec.app.command: the items together must be at most 16384 characters"
	// +listType=atomic
	// +optional
	Command []string `json:"command,omitempty"`

	// Args to the entrypoint: at most 256 items of at most 4096 characters, 65536 together.
	// +kubebuilder:validation:MaxItems=256
	// +kubebuilder:validation:items:MaxLength=4096
	// +kubebuilder:validation:XValidation:rule=`self.map(a, size(a)).sum() <= 65536`,message="spec.app.args: the arguments together must be at most 65536 characters"
	// +listType=atomic
	// +optional
	Args []string `json:"args,omitempty"`

	// Resources of the container.
	// +optional
	// +kubebuilder:validation:XValidation:rule=`[self.?limits.orValue({}), self.?requests.orValue({})].all(m, m.all(k, k in ['cpu', 'memory', 'ephemeral-storage'] || k.startsWith('hugepages-') || (k.contains('/') && !k.startsWith('kubernetes.io/'))))`,message="spec.app.resources names must be cpu, memory, ephemeral-storage, hugepages-<size> or a domain-qualified extended resource"
	Resources corev1.ResourceRequirements `json:"resources,omitempty"`

	// LivenessProbe of the container.
	// +optional
	// +kubebuilder:validation:XValidation:rule=`[has(self.exec), has(self.httpGet), has(self.tcpSocket), has(self.grpc)].exists_one(x, x)`,message="a probe must set exactly one of exec, httpGet, tcpSocket and grpc"
	// +kubebuilder:validation:XValidation:rule=`[self.?initialDelaySeconds.orValue(0), self.?timeoutSeconds.orValue(0), self.?periodSeconds.orValue(0), self.?successThreshold.orValue(0), self.?failureThreshold.orValue(0)].all(x, x >= 0)`,message="probe delays, timeouts, periods and thresholds must not be negative"
	// +kubebuilder:validation:XValidation:rule=`[self.?httpGet.port, self.?tcpSocket.port].all(o, !o.hasValue() || type(o.value()) != int || (o.value() >= 1 && o.value() <= 65535))`,message="a probe's port number must be between 1 and 65535"
	LivenessProbe *corev1.Probe `json:"livenessProbe,omitempty"`

	// ReadinessProbe of the container.
	// +optional
	// +kubebuilder:validation:XValidation:rule=`[has(self.exec), has(self.httpGet), has(self.tcpSocket), has(self.grpc)].exists_one(x, x)`,message="a probe must set exactly one of exec, httpGet, tcpSocket and grpc"
	// +kubebuilder:validation:XValidation:rule=`[self.?initialDelaySeconds.orValue(0), self.?timeoutSeconds.orValue(0), self.?periodSeconds.orValue(0), self.?successThreshold.orValue(0), self.?failureThreshold.orValue(0)].all(x, x >= 0)`,message="probe delays, timeouts, periods and thresholds must not be negative"
	// +kubebuilder:validation:XValidation:rule=`[self.?httpGet.port, self.?tcpSocket.port].all(o, !o.hasValue() || type(o.value()) != int || (o.value() >= 1 && o.value() <= 65535))`,message="a probe's port number must be between 1 and 65535"
	ReadinessProbe *corev1.Probe `json:"readinessProbe,omitempty"`

	// Security relaxes, within the Kubernetes "restricted" Pod Security Standard, what the app's
	// image needs. The rendered pod always runs as non-root with the RuntimeDefault seccomp
	// profile, no privilege escalation and every capability dropped; these fields only choose
	// the user and group ids and add NET_BIND_SERVICE. Anything beyond restricted is refused.
	// +optional
	Security *AppSecurity `json:"security,omitempty"`
}

// AppSecurity is what an app's image may need within the restricted Pod Security Standard.
type AppSecurity struct {
	// RunAsUser is the user id of the container, for images whose default user is root (or
	// named, not numeric), which the kubelet cannot verify as non-root. Never 0.
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=2147483647
	// +optional
	RunAsUser *int64 `json:"runAsUser,omitempty"`

	// RunAsGroup is the primary group id of the container. Never 0.
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=2147483647
	// +optional
	RunAsGroup *int64 `json:"runAsGroup,omitempty"`

	// FSGroup owns the pod's volumes.
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=2147483647
	// +optional
	FSGroup *int64 `json:"fsGroup,omitempty"`

	// AddCapabilities are added after dropping ALL. Restricted allows only NET_BIND_SERVICE
	// (binding ports below 1024).
	// +kubebuilder:validation:MaxItems=1
	// +listType=set
	// +optional
	AddCapabilities []Capability `json:"addCapabilities,omitempty"`

	// ReadOnlyRootFilesystem mounts the container's root filesystem read-only.
	// +optional
	ReadOnlyRootFilesystem *bool `json:"readOnlyRootFilesystem,omitempty"`
}

// Capability is a Linux capability an app may add under the restricted Pod Security Standard.
// +kubebuilder:validation:Enum=NET_BIND_SERVICE
type Capability string

// CapabilityNetBindService lets a non-root process bind ports below 1024.
const CapabilityNetBindService Capability = "NET_BIND_SERVICE"

// AppPort is one container port, published by the Service.
type AppPort struct {
	// Name of the port (IANA service name): it names the container port the Service targets.
	// +kubebuilder:validation:MaxLength=15
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`
	// +kubebuilder:validation:XValidation:rule=`self.matches('[a-z]')`,message="a port name must contain at least one letter (IANA service name)"
	// +kubebuilder:validation:XValidation:rule=`!self.contains('--')`,message="a port name must not contain '--' (IANA service name)"
	// +required
	Name string `json:"name"`
	// ContainerPort is the port the container listens on.
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=65535
	// +required
	ContainerPort int32 `json:"containerPort"`
	// ServicePort is the Service port; default the container port.
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=65535
	// +optional
	ServicePort int32 `json:"servicePort,omitempty"`
	// Protocol is TCP, UDP or SCTP; default TCP.
	// +kubebuilder:validation:Enum=TCP;UDP;SCTP
	// +optional
	Protocol corev1.Protocol `json:"protocol,omitempty"`
}

// LocalSecretReference names a Secret in the app's namespace on the host cluster.
type LocalSecretReference struct {
	// Name of the Secret.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`
	// +required
	Name string `json:"name"`
}

// RegistrySpec names the image pull Secret.
type RegistrySpec struct {
	// SecretRef is a kubernetes.io/dockerconfigjson Secret in the app's namespace, copied by name
	// and contents into the app namespace in the vCluster and used as imagePullSecret.
	// +required
	SecretRef LocalSecretReference `json:"secretRef"`
}

// GitSpec is the tenant apps repository.
type GitSpec struct {
	// URL of the repository: https://, http:// or ssh://.
	// +kubebuilder:validation:MaxLength=2048
	// +kubebuilder:validation:Pattern=`^(https?|ssh)://[^\s]+$`
	// +required
	URL string `json:"url"`

	// Branch to commit to; default main.
	// +kubebuilder:validation:MaxLength=255
	// +kubebuilder:validation:Pattern=`^[A-Za-z0-9][-A-Za-z0-9._/]*$`
	// +kubebuilder:default=main
	// +optional
	Branch string `json:"branch,omitempty"`

	// Path of the app's folder, relative to the repository root; default
	// apps/<namespace>/<name> (the app's host namespace and name, unique per host cluster).
	// +kubebuilder:validation:MaxLength=1024
	// +kubebuilder:validation:Pattern=`^[A-Za-z0-9._-]+(/[A-Za-z0-9._-]+)*$`
	// +kubebuilder:validation:XValidation:rule=`!self.split('/').exists(s, s == '..' || s == '.')`,message="spec.git.path must be relative and must not contain '.' or '..' segments"
	// +kubebuilder:validation:XValidation:rule=`!self.startsWith('.git/') && self != '.git'`,message="spec.git.path must not point into .git"
	// +optional
	Path string `json:"path,omitempty"`

	// SecretRef holds the credentials the operator pushes with, in the app's namespace: an
	// Opaque or kubernetes.io/basic-auth Secret with HTTPS username and password, a token
	// (optional username) or a bearerToken (optional ca.crt), or SSH identity and known_hosts
	// (optional password: the key's passphrase). Any other Secret type or key is refused
	// (GitSecretInvalid). It never leaves the host cluster: Flux gets FluxSecretRef. A Secret
	// labelled kubeopera.io/flux-credentials, or holding the Flux credential of an app of the
	// same repository, is refused (PushSecretExposed).
	// +optional
	SecretRef *LocalSecretReference `json:"secretRef,omitempty"`

	// FluxSecretRef holds the read-only credentials Flux in the vCluster fetches with (a
	// deploy key or read-only token of this tenant), in the app's namespace and in the same
	// shapes as SecretRef; it is copied into the vCluster, where the tenant's administrators
	// can read it. Empty: Flux fetches anonymously (a public repository). The Secret must be
	// labelled kubeopera.io/flux-credentials=true; one the operator pushes with (SecretRef,
	// another app's, or the same credential as any push Secret of the repository) is refused
	// (FluxSecretRefused).
	// +optional
	FluxSecretRef *LocalSecretReference `json:"fluxSecretRef,omitempty"`
}

// IngressSpec exposes the app through an Ingress.
//
// +kubebuilder:validation:XValidation:rule=`!self.?tls.orValue(false) || self.?host.orValue("") != ""`,message="spec.ingress.host is required when spec.ingress.tls is true",fieldPath=".host"
// +kubebuilder:validation:XValidation:rule=`!self.?tls.orValue(false) || self.?clusterIssuer.orValue("") != ""`,message="spec.ingress.clusterIssuer is required when spec.ingress.tls is true",fieldPath=".clusterIssuer"
type IngressSpec struct {
	// Host of the Ingress rule.
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^(\*\.)?[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`
	// +optional
	Host string `json:"host,omitempty"`
	// TLS adds a tls block and the cert-manager.io/cluster-issuer annotation.
	// +optional
	TLS bool `json:"tls,omitempty"`
	// ClusterIssuer is the cert-manager ClusterIssuer that signs the certificate.
	// +kubebuilder:validation:MaxLength=253
	// +optional
	ClusterIssuer string `json:"clusterIssuer,omitempty"`
	// ClassName is the IngressClass.
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`
	// +optional
	ClassName string `json:"className,omitempty"`
}

// FluxSpec configures the Flux objects in the vCluster.
type FluxSpec struct {
	// Interval of the GitRepository and Kustomization; default 1m.
	// +kubebuilder:validation:Pattern=`^([0-9]+(\.[0-9]+)?(ms|s|m|h))+$`
	// +kubebuilder:validation:XValidation:rule=`!self.matches('^([0]+([.][0]+)?(ms|s|m|h))+$')`,message="spec.flux.interval must be positive"
	// +kubebuilder:default="1m"
	// +optional
	Interval string `json:"interval,omitempty"`
	// Namespace of the Flux objects in the vCluster; default flux-system. Immutable: objects in an
	// old namespace would keep applying the app's folder.
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="spec.flux.namespace is immutable"
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`
	// +kubebuilder:default=flux-system
	// +optional
	Namespace string `json:"namespace,omitempty"`
}

// TenantReference names the Tenant an app was placed in.
type TenantReference struct {
	// Namespace of the Tenant on the host cluster.
	Namespace string `json:"namespace"`
	// Name of the Tenant.
	Name string `json:"name"`
}

// KubeOperaAppStatus is the observed state.
type KubeOperaAppStatus struct {
	// ObservedGeneration is the last generation fully processed: Synced, or Stalled (nothing
	// more is tried until something changes). While a generation is still worked on it keeps
	// the previous value and Reconciling is True; each condition's observedGeneration says
	// which generation it describes (kstatus conventions, docs/app-controller.md).
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// Conditions: Ready (the operator's part is done), TenantResolved, ManifestsCommitted,
	// FluxConfigured and Synced (Flux applied a revision holding the app's current folder and
	// the applied objects are healthy); Reconciling and Stalled (kstatus) say whether more is to come.
	// +listType=map
	// +listMapKey=type
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`

	// Tenant the app was placed in. Once set, the app stays there.
	// +optional
	Tenant *TenantReference `json:"tenant,omitempty"`

	// Commit is the SHA of the last pushed commit holding the app's manifests.
	// +optional
	Commit string `json:"commit,omitempty"`

	// ShortCommit is the first 8 characters of commit, for printing.
	// +optional
	ShortCommit string `json:"shortCommit,omitempty"`

	// Path of the app's folder in the repository. With repository and branch it is the
	// placement of the folder: recorded before anything is written there, and moved to the
	// new location only once the old folder is removed.
	// +optional
	Path string `json:"path,omitempty"`

	// Repository is the URL of the repository holding the app's folder.
	// +optional
	Repository string `json:"repository,omitempty"`

	// Branch holding the app's folder.
	// +optional
	Branch string `json:"branch,omitempty"`

	// RegistrySecret is the name of the pull Secret copied into the app namespace of the
	// vCluster, so a copy the app no longer references is deleted.
	// +optional
	RegistrySecret string `json:"registrySecret,omitempty"`

	// AppliedRevision is the Flux Kustomization's lastAppliedRevision in the vCluster.
	// +optional
	AppliedRevision string `json:"appliedRevision,omitempty"`

	// AvailableReplicas of the app's Deployment in the vCluster, as last read back.
	// +optional
	AvailableReplicas int32 `json:"availableReplicas,omitempty"`

	// URL of the app when an Ingress exists.
	// +optional
	URL string `json:"url,omitempty"`

	// History holds the last RevisionHistoryLimit commits that changed the app's folder,
	// newest first: which generation produced which commit, when it was pushed and when Flux
	// applied it. A rollback is a new generation with an older spec, so it is a new entry with
	// a new commit (docs/app-controller.md, "Revision history and rollback").
	// +kubebuilder:validation:MaxItems=10
	// +listType=atomic
	// +optional
	History []AppRevision `json:"history,omitempty"`
}

// RevisionHistoryLimit is how many entries status.history keeps (the MaxItems of the field).
const RevisionHistoryLimit = 10

// AppRevision is one commit the operator pushed for the app.
type AppRevision struct {
	// Generation of the app whose spec the commit holds.
	// +required
	Generation int64 `json:"generation"`

	// Commit is the SHA of the commit that changed the app's folder.
	// +kubebuilder:validation:MaxLength=64
	// +required
	Commit string `json:"commit"`

	// PushedAt is when the operator recorded the commit as pushed (for a folder the branch
	// already held, when it found it there).
	// +required
	PushedAt metav1.Time `json:"pushedAt"`

	// AppliedAt is when the operator first read back from the vCluster that Flux applied this
	// commit, or, for the newest entry, a later revision of the branch whose folder of the app
	// holds the same content (another app's commit on top of it). Unset while Flux has not: an
	// entry replaced by a newer one before Flux applied it never gets it.
	// +optional
	AppliedAt *metav1.Time `json:"appliedAt,omitempty"`

	// Manifests is a digest of the rendered manifests the commit holds ("sha256:" and 32 hex
	// digits): two entries with the same digest hold the same files, so re-applying an older
	// spec is recognised as restoring that entry. The commit's KubeOperaApp trailer carries it
	// too.
	// +kubebuilder:validation:MaxLength=71
	// +optional
	Manifests string `json:"manifests,omitempty"`

	// Restores is the commit of the older entry whose manifests this commit restores (a
	// rollback: an older spec applied again), as its trailer says.
	// +kubebuilder:validation:MaxLength=64
	// +optional
	Restores string `json:"restores,omitempty"`
}

// KubeOperaApp is one tenant application. The operator renders it to a Deployment, Service and
// Ingress, commits them to the tenant apps repository and points Flux in the tenant vCluster at
// them.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=koapp,categories=kubeopera
// +kubebuilder:printcolumn:name="Tenant",type=string,JSONPath=`.status.tenant.name`
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Synced",type=string,JSONPath=`.status.conditions[?(@.type=="Synced")].status`
// +kubebuilder:printcolumn:name="Available",type=integer,JSONPath=`.status.availableReplicas`
// +kubebuilder:printcolumn:name="Commit",type=string,JSONPath=`.status.shortCommit`
// +kubebuilder:printcolumn:name="Reason",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].reason`,priority=1
// +kubebuilder:printcolumn:name="URL",type=string,JSONPath=`.status.url`,priority=1
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
// +kubebuilder:validation:XValidation:rule=`size(self.metadata.name) <= 63`,message="metadata.name must be at most 63 characters: it names objects and a namespace in the vCluster"
// +kubebuilder:validation:XValidation:rule=`self.metadata.name.matches('^[a-z]([-a-z0-9]*[a-z0-9])?$')`,message="metadata.name must start with a lowercase letter and hold only lowercase letters, digits and '-' (no '.'): it names the Deployment, its container, the Service (a DNS-1035 label) and by default the namespace in the vCluster"
type KubeOperaApp struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Spec is the desired application.
	// +required
	Spec KubeOperaAppSpec `json:"spec"`

	// Status is the observed state.
	// +optional
	Status KubeOperaAppStatus `json:"status,omitempty"`
}

// KubeOperaAppList is a list of KubeOperaApps.
//
// +kubebuilder:object:root=true
type KubeOperaAppList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []KubeOperaApp `json:"items"`
}
