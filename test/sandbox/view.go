package sandbox

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	datasancev3 "github.com/kubeopera/kubeopera-operator/api/datasance/v3"
	kubeoperav1alpha1 "github.com/kubeopera/kubeopera-operator/api/kubeopera/v1alpha1"
)

// View is what the status view shows: read from the host API server, plus the local cloud's
// last simulated writes.
type View struct {
	ControlPlanes []ControlPlaneView
	Apps          []AppView
	Events        []EventView
	Simulated     []string
}

// ControlPlaneView is one ControlPlane.
type ControlPlaneView struct {
	Name string
	// State is the True condition (deploying, updating, ready), Reason its reason.
	State, Reason string
	// Components are controller, router and nats.
	Components []ComponentView
}

// ComponentView is one component's status.
type ComponentView struct {
	Name    string
	Ready   bool
	Reason  string
	Address string
}

// AppView is one KubeOperaApp.
type AppView struct {
	Name, Commit, Path, AppliedRevision string
	// Synced is the Synced condition's status and reason ("Unknown" when absent).
	Synced, SyncedReason string
}

// EventView is one Event.
type EventView struct {
	Time                       time.Time
	Type, Object, Reason, Note string
}

// maxEvents is how many of the last Events the view shows.
const maxEvents = 6

// Snapshot reads the view from the host API server.
func (s *Sandbox) Snapshot(ctx context.Context) (View, error) {
	v, err := ReadView(ctx, s.Host.Client, Namespace)
	v.Simulated = s.Notes()
	return v, err
}

// ReadView reads the ControlPlanes, KubeOperaApps and last Events of namespace ns.
func ReadView(ctx context.Context, c client.Reader, ns string) (View, error) {
	var v View
	cps := &datasancev3.ControlPlaneList{}
	if err := c.List(ctx, cps, client.InNamespace(ns)); err != nil {
		return v, fmt.Errorf("list ControlPlanes: %w", err)
	}
	for i := range cps.Items {
		v.ControlPlanes = append(v.ControlPlanes, controlPlaneView(&cps.Items[i]))
	}
	apps := &kubeoperav1alpha1.KubeOperaAppList{}
	if err := c.List(ctx, apps, client.InNamespace(ns)); err != nil {
		return v, fmt.Errorf("list KubeOperaApps: %w", err)
	}
	for i := range apps.Items {
		v.Apps = append(v.Apps, appView(&apps.Items[i]))
	}
	events := &corev1.EventList{}
	if err := c.List(ctx, events, client.InNamespace(ns)); err != nil {
		return v, fmt.Errorf("list Events: %w", err)
	}
	v.Events = lastEvents(events.Items, maxEvents)
	return v, nil
}

func controlPlaneView(cp *datasancev3.ControlPlane) ControlPlaneView {
	v := ControlPlaneView{Name: cp.Name, State: "pending"}
	for _, c := range cp.Status.Conditions {
		if c.Status == metav1.ConditionTrue {
			v.State, v.Reason = c.Type, c.Reason
		}
	}
	st := cp.Status
	v.Components = []ComponentView{
		{Name: "controller", Ready: st.Controller.Ready, Reason: st.Controller.Reason, Address: st.Controller.PublicURL},
		{Name: "router", Ready: st.Router.Ready, Reason: st.Router.Reason, Address: st.Router.Address},
		{Name: "nats", Ready: st.Nats.Ready, Reason: st.Nats.Reason, Address: st.Nats.Address},
	}
	return v
}

func appView(a *kubeoperav1alpha1.KubeOperaApp) AppView {
	v := AppView{Name: a.Name, Commit: a.Status.ShortCommit, Path: a.Status.Path, AppliedRevision: a.Status.AppliedRevision, Synced: "Unknown"}
	if c := apimeta.FindStatusCondition(a.Status.Conditions, kubeoperav1alpha1.ConditionSynced); c != nil {
		v.Synced, v.SyncedReason = string(c.Status), c.Reason
	}
	return v
}

// lastEvents returns the newest n Events, oldest first.
func lastEvents(items []corev1.Event, n int) []EventView {
	out := make([]EventView, 0, len(items))
	for _, e := range items {
		note := e.Message
		if e.Series != nil && e.Series.Count > 1 {
			note += fmt.Sprintf(" (x%d)", e.Series.Count)
		} else if e.Count > 1 {
			note += fmt.Sprintf(" (x%d)", e.Count)
		}
		out = append(out, EventView{
			Time: eventTime(e), Type: e.Type, Reason: e.Reason, Note: note,
			Object: strings.ToLower(e.InvolvedObject.Kind) + "/" + e.InvolvedObject.Name,
		})
	}
	slices.SortStableFunc(out, func(a, b EventView) int { return a.Time.Compare(b.Time) })
	if len(out) > n {
		out = out[len(out)-n:]
	}
	return out
}

// eventTime is when an Event last happened, whichever API wrote it (events.k8s.io sets
// eventTime and series, core/v1 writers lastTimestamp).
func eventTime(e corev1.Event) time.Time {
	t := e.CreationTimestamp.Time
	for _, c := range []time.Time{e.EventTime.Time, e.FirstTimestamp.Time, e.LastTimestamp.Time} {
		if c.After(t) {
			t = c
		}
	}
	if e.Series != nil && e.Series.LastObservedTime.After(t) {
		t = e.Series.LastObservedTime.Time
	}
	return t
}

// Header names every stand-in of the sandbox; the status view prints it above the state.
func (s *Sandbox) Header() string {
	var b strings.Builder
	fmt.Fprintf(&b, "kubeopera-operator sandbox (no cluster answered) — started in %s\n", s.Started.Round(100*time.Millisecond))
	fmt.Fprintf(&b, "  host cluster    kube-apiserver+etcd, controller manager, scheduler, kwok nodes   KUBECONFIG=%s\n", s.HostKubeconfig)
	fmt.Fprintf(&b, "  tenant vCluster kube-apiserver+etcd, controller manager, scheduler, kwok nodes   KUBECONFIG=%s\n", s.TenantKubeconfig)
	b.WriteString("                  + real Flux source-controller and kustomize-controller v1.9.6\n")
	fmt.Fprintf(&b, "  Git server      gittestserver %s\n", s.Git.URL(tenantRepo))
	fmt.Fprintf(&b, "  %s ioFog Controller API: contract double internal/iofog/fake at %s\n", Simulated, s.Controller.URL())
	fmt.Fprintf(&b, "  %s local cloud: LoadBalancer/Ingress addresses from %s\n", Simulated, firstLoadBalancerIP)
	fmt.Fprintf(&b, "  %s kubelets: kwok reports the pods Running (no container runs)\n", Simulated)
	fmt.Fprintf(&b, "  %s tenant-controller: Tenant Ready + kubeconfig Secret written by the sandbox\n", Simulated)
	return b.String()
}

// Render writes the view compactly (about 20 lines).
func Render(w io.Writer, v View) {
	var b strings.Builder
	if len(v.ControlPlanes) == 0 {
		b.WriteString("ControlPlanes: none\n")
	}
	for _, cp := range v.ControlPlanes {
		fmt.Fprintf(&b, "ControlPlane %s/%s: %s", Namespace, cp.Name, cp.State)
		if cp.Reason != "" {
			fmt.Fprintf(&b, " (%s)", cp.Reason)
		}
		b.WriteString("\n")
		for _, c := range cp.Components {
			mark := "…"
			if c.Ready {
				mark = "✓"
			}
			fmt.Fprintf(&b, "  %s %-10s %-24s %s\n", mark, c.Name, c.Reason, c.Address)
		}
	}
	if len(v.Apps) == 0 {
		b.WriteString("KubeOperaApps: none\n")
	}
	for _, a := range v.Apps {
		commit := a.Commit
		if commit == "" {
			commit = "-"
		}
		fmt.Fprintf(&b, "KubeOperaApp %s/%s: Synced=%s", Namespace, a.Name, a.Synced)
		if a.SyncedReason != "" {
			fmt.Fprintf(&b, " (%s)", a.SyncedReason)
		}
		fmt.Fprintf(&b, " commit %s path %s\n", commit, a.Path)
	}
	b.WriteString("Last events:\n")
	for _, e := range v.Events {
		fmt.Fprintf(&b, "  %s %-7s %-26s %-22s %s\n", e.Time.Local().Format("15:04:05"), e.Type, e.Object, e.Reason, truncate(e.Note, 90))
	}
	if len(v.Simulated) > 0 {
		b.WriteString("Local cloud, last writes:\n")
		for _, n := range v.Simulated[max(0, len(v.Simulated)-4):] {
			fmt.Fprintf(&b, "  %s\n", truncate(n, 120))
		}
	}
	_, _ = io.WriteString(w, b.String())
}

func truncate(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n-1]) + "…"
}
