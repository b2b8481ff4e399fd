package resources

import (
	"encoding/json"
	"fmt"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"

	datasancev3 "github.com/kubeopera/kubeopera-operator/api/datasance/v3"
)

// The default compute resources of each operand container, from the use measured on the
// released code (docs/controlplane.md#measured-use). Every container has requests and limits for
// CPU and memory, so a namespace whose ResourceQuota counts compute admits the pods, and no
// operand is BestEffort (the first to be evicted under node pressure). CPU limits stay at a whole
// core: a lower one slows the Controller's start and throttles NATS's Raft heartbeats.
var (
	// The Controller (Node.js, SQLite): 98 MiB idle, 145 MiB peak serving 20 requests a second
	// with an empty database, 7m idle and 85m under that load. The limit leaves room for a fleet's
	// agents and sessions, which the measurement had none of.
	defaultControllerResources = computeResources("100m", "192Mi", "1", "1Gi")
	// The router (AMQP, C): about 22 MiB idle and 25 MiB at 1,000 messages a second.
	defaultRouterResources = computeResources("50m", "64Mi", "1", "256Mi")
	// A NATS server: 20 MiB and 5m idle, 67 MiB and up to 390m at 1,000 messages a second into
	// a replicated file stream. Its memory limit is natsMemoryLimit.
	defaultNatsResources = computeResources("100m", "128Mi", "1", "")
	// natsMemoryOverhead is what a NATS server needs beside its JetStream memory store.
	natsMemoryOverhead = resource.MustParse("256Mi")
)

// computeResources is a container's CPU and memory requests and limits; an empty memory limit is
// left out.
func computeResources(cpuRequest, memoryRequest, cpuLimit, memoryLimit string) datasancev3.Resources {
	r := datasancev3.Resources{
		Requests: corev1.ResourceList{
			corev1.ResourceCPU:    resource.MustParse(cpuRequest),
			corev1.ResourceMemory: resource.MustParse(memoryRequest),
		},
		Limits: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpuLimit)},
	}
	if memoryLimit != "" {
		r.Limits[corev1.ResourceMemory] = resource.MustParse(memoryLimit)
	}
	return r
}

// NatsMemoryStore is the JetStream memory store limit of spec in bytes, read as a Kubernetes
// quantity (an upper bound of what server.conf gives NATS: "1Gi" is written as NATS's 1G, 10⁹
// bytes). An unreadable size counts as the default; the CRD admits only readable ones.
func NatsMemoryStore(spec *datasancev3.ControlPlaneSpec) resource.Quantity {
	size := datasancev3.DefaultMemoryStoreSize
	if spec.Nats != nil && spec.Nats.JetStream != nil && spec.Nats.JetStream.MemoryStoreSize != "" {
		size = spec.Nats.JetStream.MemoryStoreSize
	}
	q, err := resource.ParseQuantity(size)
	if err != nil {
		return resource.MustParse(datasancev3.DefaultMemoryStoreSize)
	}
	return q
}

// natsMemoryLimit is the default memory limit of a NATS server: twice its JetStream memory store
// plus natsMemoryOverhead. A full memory stream holds its messages in the Go heap, and a
// replicated one was measured at 1.6 to 1.9 times its stored bytes on every server.
func natsMemoryLimit(spec *datasancev3.ControlPlaneSpec) resource.Quantity {
	store := NatsMemoryStore(spec)
	return *resource.NewQuantity(2*store.Value()+natsMemoryOverhead.Value(), resource.BinarySI)
}

// CheckNatsMemory refuses a NATS memory limit that does not exceed the JetStream memory store: a
// full memory stream alone would fill it and the kernel would kill the server.
func CheckNatsMemory(spec *datasancev3.ControlPlaneSpec) error {
	limit, ok := ComponentResources(spec, ComponentNats).Limits[corev1.ResourceMemory]
	if !ok {
		return nil
	}
	if store := NatsMemoryStore(spec); limit.Cmp(store) <= 0 {
		return fmt.Errorf("spec.pods.nats.resources.limits.memory %s does not exceed the JetStream memory store %s "+
			"(spec.nats.jetStream.memoryStoreSize), which a full memory stream holds in RAM: raise the limit or lower the store",
			limit.String(), store.String())
	}
	return nil
}

// ComponentResources are the compute resources of a component's container in force: the spec's
// when set, otherwise the defaults above.
func ComponentResources(spec *datasancev3.ControlPlaneSpec, component string) datasancev3.Resources {
	// Copies, never the spec's or the defaults' own maps: an apply decodes the server's answer
	// into the apply configuration it sent, maps included.
	if s := componentPods(spec, component); s != nil && s.Resources != nil {
		return *s.Resources.DeepCopy()
	}
	switch component {
	case ComponentController:
		return *defaultControllerResources.DeepCopy()
	case ComponentRouter:
		return *defaultRouterResources.DeepCopy()
	}
	r := *defaultNatsResources.DeepCopy()
	r.Limits[corev1.ResourceMemory] = natsMemoryLimit(spec)
	return r
}

// componentPods is the spec's pod settings of a component, nil when omitted.
func componentPods(spec *datasancev3.ControlPlaneSpec, component string) *datasancev3.PodSettings {
	switch component {
	case ComponentController:
		return spec.Pods.Controller
	case ComponentRouter:
		return spec.Pods.Router
	case ComponentNats:
		return spec.Pods.Nats
	}
	return nil
}

// withResources sets a container's resources. r's maps become the apply configuration's, which
// the apply's answer is decoded into: r must be the caller's own (ComponentResources returns
// copies).
func withResources(c *corev1ac.ContainerApplyConfiguration, r datasancev3.Resources) {
	rr := corev1ac.ResourceRequirements()
	if len(r.Requests) > 0 {
		rr.WithRequests(r.Requests)
	}
	if len(r.Limits) > 0 {
		rr.WithLimits(r.Limits)
	}
	if rr.Requests != nil || rr.Limits != nil {
		c.WithResources(rr)
	}
}

// goMemLimit is the GOMEMLIMIT of a Go server whose container has memory limit limit: nine tenths
// of it in bytes, so the Go runtime collects garbage harder before the kernel kills the container
// (what the NATS project's Helm chart recommends). Empty without a memory limit.
func goMemLimit(r datasancev3.Resources) string {
	limit, ok := r.Limits[corev1.ResourceMemory]
	if !ok || limit.Value() <= 0 {
		return ""
	}
	return strconv.FormatInt(limit.Value()/10*9, 10)
}

// withPlacement applies a component's placement settings to its pod: node selector, tolerations,
// affinity and priority class when set, and its topology spread, which replaces spread (the
// operator's default, nil for none) when set.
func withPlacement(pod *corev1ac.PodSpecApplyConfiguration, s *datasancev3.PodSettings, spread []*corev1ac.TopologySpreadConstraintApplyConfiguration) {
	if s == nil {
		pod.WithTopologySpreadConstraints(spread...)
		return
	}
	if len(s.NodeSelector) > 0 {
		pod.WithNodeSelector(s.NodeSelector)
	}
	for i := range s.Tolerations {
		pod.WithTolerations(applyConfiguration[corev1ac.TolerationApplyConfiguration](&s.Tolerations[i]))
	}
	if s.Affinity != nil {
		pod.WithAffinity(applyConfiguration[corev1ac.AffinityApplyConfiguration](s.Affinity))
	}
	if s.PriorityClassName != "" {
		pod.WithPriorityClassName(s.PriorityClassName)
	}
	if len(s.TopologySpreadConstraints) > 0 {
		spread = nil
		for i := range s.TopologySpreadConstraints {
			spread = append(spread, applyConfiguration[corev1ac.TopologySpreadConstraintApplyConfiguration](&s.TopologySpreadConstraints[i]))
		}
	}
	pod.WithTopologySpreadConstraints(spread...)
}

// applyConfiguration converts a typed core/v1 value into its apply configuration. Apply
// configurations are the typed structs' JSON mirror, so the JSON of one decodes into the other
// field for field; both steps work on plain data and cannot fail for a value the API admitted.
func applyConfiguration[T any](typed any) *T {
	out := new(T)
	data, err := json.Marshal(typed)
	if err == nil {
		err = json.Unmarshal(data, out)
	}
	if err != nil {
		panic("resources: core/v1 value without an apply configuration: " + err.Error())
	}
	return out
}
