package install

import (
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"helm.sh/helm/v3/pkg/action"
	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/release"
)

// The chart tests that need no API server: `make chart-verify` (in `make check`) runs them by
// the name prefix TestChartStatic; `make test-install` runs them with the rest of the module.

// everyValue sets every value of values.yaml to something other than its default
// (TestChartStaticRendersEveryValue checks that none is missing).
func everyValue() map[string]any {
	return map[string]any{
		"image":            map[string]any{"repository": "registry.example.com/ko", "tag": "v9.9.9", "digest": "", "pullPolicy": "Always"},
		"imagePullSecrets": []any{map[string]any{"name": "regcred"}},
		"watchNamespaces":  []any{"team-a", "team-b"},
		"controllers": map[string]any{
			"controlPlane": map[string]any{"enabled": false},
			"apps":         map[string]any{"enabled": false},
		},
		"leaderElection": map[string]any{"enabled": false},
		"replicaCount":   3,
		"metrics": map[string]any{
			"enabled": true, "port": 9443,
			"serviceMonitor": map[string]any{"enabled": true, "interval": "1m", "labels": map[string]any{"release": "prom"}},
		},
		"prometheusRule": map[string]any{"enabled": true, "labels": map[string]any{"release": "prom"}},
		"operandImages": map[string]any{
			"controller": "registry.example.com/controller:3.9.1",
			"router":     "registry.example.com/router:3.9.1",
			"nats":       "registry.example.com/nats:2.15.1",
		},
		"extraArgs": []any{"--app-allowed-git-hosts=git.example.com"},
		"extraEnv":  []any{map[string]any{"name": "ENVIRONMENT", "value": "development"}},
		"resources": map[string]any{
			"requests": map[string]any{"cpu": "200m", "memory": "256Mi"},
			"limits":   map[string]any{"cpu": "2", "memory": "1Gi"},
		},
		"podSecurityContext": map[string]any{"runAsNonRoot": true, "runAsUser": 10001, "fsGroup": 10001,
			"seccompProfile": map[string]any{"type": "RuntimeDefault"}},
		"securityContext": map[string]any{"allowPrivilegeEscalation": false, "readOnlyRootFilesystem": true,
			"runAsNonRoot": true, "runAsGroup": 10001, "capabilities": map[string]any{"drop": []any{"ALL"}},
			"seccompProfile": map[string]any{"type": "RuntimeDefault"}},
		"livenessProbe":       map[string]any{"initialDelaySeconds": 30, "periodSeconds": 15, "timeoutSeconds": 5, "failureThreshold": 6},
		"readinessProbe":      map[string]any{"initialDelaySeconds": 2, "periodSeconds": 5, "timeoutSeconds": 3, "successThreshold": 2},
		"podDisruptionBudget": map[string]any{"enabled": true, "maxUnavailable": 1},
		"topologySpreadConstraints": []any{
			map[string]any{"maxSkew": 1, "topologyKey": "topology.kubernetes.io/zone", "whenUnsatisfiable": "ScheduleAnyway"},
			map[string]any{"maxSkew": 1, "topologyKey": "kubernetes.io/hostname", "whenUnsatisfiable": "DoNotSchedule",
				"labelSelector": map[string]any{"matchLabels": map[string]any{"team": "platform"}}},
		},
		"extraVolumes":      []any{map[string]any{"name": "controller-ca", "secret": map[string]any{"secretName": "controller-ca"}}},
		"extraVolumeMounts": []any{map[string]any{"name": "controller-ca", "mountPath": "/etc/kubeopera/ca", "readOnly": true}},
		"nodeSelector":      map[string]any{"kubernetes.io/os": "linux"},
		"tolerations":       []any{map[string]any{"key": "dedicated", "operator": "Exists", "effect": "NoSchedule"}},
		"affinity": map[string]any{"nodeAffinity": map[string]any{"requiredDuringSchedulingIgnoredDuringExecution": map[string]any{
			"nodeSelectorTerms": []any{map[string]any{"matchExpressions": []any{map[string]any{"key": "zone", "operator": "In", "values": []any{"a"}}}}},
		}}},
		"priorityClassName": "system-cluster-critical",
		"podAnnotations":    map[string]any{"example.com/scrape": "false"},
		"podLabels":         map[string]any{"team": "platform"},
		"serviceAccount":    map[string]any{"create": true, "name": "ko-manager", "annotations": map[string]any{"example.com/role": "operator"}},
		"crds":              map[string]any{"enabled": false, "keep": false},
		"global":            map[string]any{"imageRegistry": "registry.example.com", "anything": map[string]any{"nested": true}},
		"nameOverride":      "kubeopera",
		"fullnameOverride":  "ko",
	}
}

// leafPaths lists the paths of values' leaves (scalars, lists, empty maps), keys joined by "/".
func leafPaths(prefix string, values map[string]any) []string {
	var out []string
	for k, v := range values {
		p := k
		if prefix != "" {
			p = prefix + "/" + k
		}
		if m, ok := v.(map[string]any); ok && len(m) > 0 {
			out = append(out, leafPaths(p, m)...)
			continue
		}
		out = append(out, p)
	}
	sort.Strings(out)
	return out
}

// The chart with every value set: each reaches the objects it is for. The test also fails when
// values.yaml gains a value that everyValue does not set, so a new value cannot go untested here.
func TestChartStaticRendersEveryValue(t *testing.T) {
	g := NewWithT(t)
	values := everyValue()

	defaults := loadChart(t).Values
	set := leafPaths("", values)
	for _, p := range leafPaths("", defaults) {
		covered := slices.ContainsFunc(set, func(s string) bool { return s == p || strings.HasPrefix(s, p+"/") })
		g.Expect(covered).To(BeTrue(), "values.yaml has %s, which everyValue does not set", p)
	}

	objs, err := renderChart(t, "ops", "ops-system", values)
	g.Expect(err).NotTo(HaveOccurred())
	d := deploymentOf(t, objs)
	pod := d.Spec.Template.Spec
	c := managerContainer(d)

	g.Expect(d.Name).To(Equal("ko-controller-manager"), "fullnameOverride")
	g.Expect(d.Spec.Selector.MatchLabels).To(HaveKeyWithValue("app.kubernetes.io/name", "kubeopera"), "nameOverride")
	g.Expect(*d.Spec.Replicas).To(Equal(int32(3)))
	g.Expect(c.Image).To(Equal("registry.example.com/ko:v9.9.9"))
	g.Expect(c.ImagePullPolicy).To(Equal(corev1.PullAlways))
	g.Expect(pod.ImagePullSecrets).To(Equal([]corev1.LocalObjectReference{{Name: "regcred"}}))
	g.Expect(envValue(c, "WATCH_NAMESPACE")).To(Equal("team-a,team-b"))
	g.Expect(c.Args).To(ContainElements("--enable-controlplane-controller=false", "--enable-app-controller=false",
		"--metrics-bind-address=:9443", "--app-allowed-git-hosts=git.example.com"))
	g.Expect(c.Args).NotTo(ContainElement("--leader-elect"))
	g.Expect(c.Ports).To(ContainElement(HaveField("ContainerPort", int32(9443))))
	g.Expect(envValue(c, "RELATED_IMAGE_CONTROLLER")).To(Equal("registry.example.com/controller:3.9.1"))
	g.Expect(envValue(c, "RELATED_IMAGE_ROUTER")).To(Equal("registry.example.com/router:3.9.1"))
	g.Expect(envValue(c, "RELATED_IMAGE_NATS")).To(Equal("registry.example.com/nats:2.15.1"))
	g.Expect(envValue(c, "ENVIRONMENT")).To(Equal("development"))
	g.Expect(c.Resources.Requests.Cpu().String()).To(Equal("200m"))
	g.Expect(c.Resources.Limits.Memory().String()).To(Equal("1Gi"))

	g.Expect(*pod.SecurityContext.RunAsUser).To(Equal(int64(10001)))
	g.Expect(*pod.SecurityContext.FSGroup).To(Equal(int64(10001)))
	g.Expect(*c.SecurityContext.RunAsGroup).To(Equal(int64(10001)))
	g.Expect(*c.SecurityContext.ReadOnlyRootFilesystem).To(BeTrue())
	g.Expect(c.LivenessProbe.HTTPGet.Path).To(Equal("/healthz"))
	g.Expect([]int32{c.LivenessProbe.InitialDelaySeconds, c.LivenessProbe.PeriodSeconds, c.LivenessProbe.TimeoutSeconds, c.LivenessProbe.FailureThreshold}).
		To(Equal([]int32{30, 15, 5, 6}))
	g.Expect(c.ReadinessProbe.HTTPGet.Path).To(Equal("/readyz"))
	g.Expect([]int32{c.ReadinessProbe.InitialDelaySeconds, c.ReadinessProbe.PeriodSeconds, c.ReadinessProbe.TimeoutSeconds, c.ReadinessProbe.SuccessThreshold}).
		To(Equal([]int32{2, 5, 3, 2}))

	g.Expect(pod.TopologySpreadConstraints).To(HaveLen(2))
	g.Expect(pod.TopologySpreadConstraints[0].LabelSelector.MatchLabels).To(Equal(d.Spec.Selector.MatchLabels),
		"a constraint without a labelSelector counts the manager's pods")
	g.Expect(pod.TopologySpreadConstraints[1].LabelSelector.MatchLabels).To(Equal(map[string]string{"team": "platform"}))
	g.Expect(pod.Volumes).To(ContainElement(HaveField("Name", "controller-ca")))
	g.Expect(pod.Volumes).To(ContainElement(HaveField("Name", "git-cache")), "the chart's own volumes stay")
	g.Expect(c.VolumeMounts).To(ContainElement(corev1.VolumeMount{Name: "controller-ca", MountPath: "/etc/kubeopera/ca", ReadOnly: true}))
	g.Expect(pod.NodeSelector).To(HaveKeyWithValue("kubernetes.io/os", "linux"))
	g.Expect(pod.Tolerations).To(HaveLen(1))
	g.Expect(pod.Affinity.NodeAffinity).NotTo(BeNil())
	g.Expect(pod.PriorityClassName).To(Equal("system-cluster-critical"))
	g.Expect(d.Spec.Template.Annotations).To(HaveKeyWithValue("example.com/scrape", "false"))
	g.Expect(d.Spec.Template.Labels).To(HaveKeyWithValue("team", "platform"))
	g.Expect(pod.ServiceAccountName).To(Equal("ko-manager"))

	pdbs := ofKind(objs, "PodDisruptionBudget")
	g.Expect(pdbs).To(HaveLen(1))
	pdb := &policyv1.PodDisruptionBudget{}
	into(t, pdbs[0], pdb)
	g.Expect(pdb.Spec.MaxUnavailable.IntValue()).To(Equal(1))
	g.Expect(pdb.Spec.MinAvailable).To(BeNil())
	g.Expect(pdb.Spec.Selector.MatchLabels).To(Equal(d.Spec.Selector.MatchLabels))

	sa := find(objs, "ServiceAccount", "ko-manager")
	g.Expect(sa).NotTo(BeNil())
	g.Expect(sa.GetAnnotations()).To(HaveKeyWithValue("example.com/role", "operator"))
	g.Expect(find(objs, "Role", "ko-leader-election")).To(BeNil(), "no leader election")
	g.Expect(ofKind(objs, "CustomResourceDefinition")).To(BeEmpty(), "crds.enabled false")
	sm := find(objs, "ServiceMonitor", "ko-controller-manager-metrics-monitor")
	g.Expect(sm).NotTo(BeNil())
	g.Expect(sm.GetLabels()).To(HaveKeyWithValue("release", "prom"))
	endpoints, _, _ := unstructured.NestedSlice(sm.Object, "spec", "endpoints")
	g.Expect(endpoints).To(HaveLen(1))
	g.Expect(endpoints[0]).To(HaveKeyWithValue("interval", "1m"))
	pr := find(objs, "PrometheusRule", "ko-alerts")
	g.Expect(pr).NotTo(BeNil())
	g.Expect(pr.GetLabels()).To(HaveKeyWithValue("release", "prom"))
	want := readObjects(t, "config", "prometheus", "prometheus_rule.yaml")[0]
	g.Expect(pr.Object["spec"]).To(Equal(want.Object["spec"]), "the chart's alerts are config/prometheus's")
	var bound []string
	for _, rb := range ofKind(objs, "RoleBinding") {
		bound = append(bound, rb.GetNamespace())
	}
	g.Expect(bound).To(ContainElements("team-a", "team-b"))

	// With its defaults, podDisruptionBudget.enabled gives minAvailable 1.
	objs, err = renderChart(t, "ops", "ops-system", map[string]any{"podDisruptionBudget": map[string]any{"enabled": true}})
	g.Expect(err).NotTo(HaveOccurred())
	pdb = &policyv1.PodDisruptionBudget{}
	into(t, ofKind(objs, "PodDisruptionBudget")[0], pdb)
	g.Expect(pdb.Spec.MinAvailable.IntValue()).To(Equal(1))
	g.Expect(pdb.Spec.MaxUnavailable).To(BeNil())

	// Metrics off: no Service, no port, no ServiceMonitor even when asked for.
	objs, err = renderChart(t, "ops", "ops-system", map[string]any{
		"metrics": map[string]any{"enabled": false, "serviceMonitor": map[string]any{"enabled": true}},
	})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(ofKind(objs, "Service")).To(BeEmpty())
	g.Expect(ofKind(objs, "ServiceMonitor")).To(BeEmpty())
	c = managerContainer(deploymentOf(t, objs))
	g.Expect(c.Args).To(ContainElement("--metrics-bind-address=0"))
	g.Expect(c.Ports).To(HaveLen(1))
}

// The defaults of the new values are what the chart rendered before they were values: the
// restricted security contexts, the probe timings, no PodDisruptionBudget, no spread
// constraints, only the chart's volumes.
func TestChartStaticDefaultsAreSafe(t *testing.T) {
	g := NewWithT(t)
	objs := defaultChart(t)
	d := deploymentOf(t, objs)
	pod, c := d.Spec.Template.Spec, managerContainer(d)
	g.Expect(*pod.SecurityContext.RunAsNonRoot).To(BeTrue())
	g.Expect(pod.SecurityContext.SeccompProfile.Type).To(Equal(corev1.SeccompProfileTypeRuntimeDefault))
	sc := c.SecurityContext
	g.Expect(*sc.AllowPrivilegeEscalation).To(BeFalse())
	g.Expect(*sc.ReadOnlyRootFilesystem).To(BeTrue())
	g.Expect(*sc.RunAsNonRoot).To(BeTrue())
	g.Expect(sc.Capabilities.Drop).To(Equal([]corev1.Capability{"ALL"}))
	g.Expect(sc.SeccompProfile.Type).To(Equal(corev1.SeccompProfileTypeRuntimeDefault))
	g.Expect([]int32{c.LivenessProbe.InitialDelaySeconds, c.LivenessProbe.PeriodSeconds}).To(Equal([]int32{15, 20}))
	g.Expect([]int32{c.ReadinessProbe.InitialDelaySeconds, c.ReadinessProbe.PeriodSeconds}).To(Equal([]int32{5, 10}))
	g.Expect(ofKind(objs, "PodDisruptionBudget")).To(BeEmpty())
	g.Expect(pod.TopologySpreadConstraints).To(BeEmpty())
	var volumes []string
	for _, v := range pod.Volumes {
		volumes = append(volumes, v.Name)
	}
	g.Expect(volumes).To(ConsistOf("git-cache", "tmp"))
	g.Expect(ofKind(objs, "CustomResourceDefinition")).To(HaveLen(2))
}

// crds.enabled and crds.keep are cert-manager's names. The earlier crds.install still works for
// one release: when set, it wins, and the install notes say it is deprecated.
func TestChartStaticCRDValues(t *testing.T) {
	cases := []struct {
		name     string
		crds     map[string]any
		wantCRDs bool
		wantKeep bool
		wantNote bool
	}{
		{"defaults", nil, true, true, false},
		{"enabled false", map[string]any{"enabled": false}, false, false, false},
		{"keep false", map[string]any{"keep": false}, true, false, false},
		{"deprecated install false", map[string]any{"install": false}, false, false, true},
		{"deprecated install true wins over enabled false", map[string]any{"install": true, "enabled": false}, true, true, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			var values map[string]any
			if tc.crds != nil {
				values = map[string]any{"crds": tc.crds}
			}
			rel, err := renderRelease(t, "ko", "ko-system", values)
			g.Expect(err).NotTo(HaveOccurred())
			crds := ofKind(manifestObjects(t, rel), "CustomResourceDefinition")
			if !tc.wantCRDs {
				g.Expect(crds).To(BeEmpty())
			} else {
				g.Expect(crds).To(HaveLen(2))
				for _, crd := range crds {
					if tc.wantKeep {
						g.Expect(crd.GetAnnotations()).To(HaveKeyWithValue("helm.sh/resource-policy", "keep"))
					} else {
						g.Expect(crd.GetAnnotations()).NotTo(HaveKey("helm.sh/resource-policy"))
					}
				}
			}
			if tc.wantNote {
				g.Expect(rel.Info.Notes).To(ContainSubstring("DEPRECATED: crds.install"))
			} else {
				g.Expect(rel.Info.Notes).NotTo(ContainSubstring("DEPRECATED"))
			}
		})
	}
}

// Used as a subchart, the chart receives the parent's global values: Helm validates them against
// this chart's schema, which must accept them while refusing unknown keys elsewhere. The parent
// here is built in memory with the chart as its dependency, as `helm dependency build` would.
func TestChartStaticWorksAsASubchart(t *testing.T) {
	g := NewWithT(t)
	sub := loadChart(t)
	parent := &chart.Chart{
		Metadata: &chart.Metadata{APIVersion: chart.APIVersionV2, Name: "platform", Version: "1.0.0",
			Dependencies: []*chart.Dependency{{Name: sub.Name(), Version: sub.Metadata.Version}}},
		Values: map[string]any{"global": map[string]any{"imageRegistry": "registry.example.com", "storageClass": "fast"}},
	}
	parent.AddDependency(sub)

	rel, err := renderChartRelease(t, parent, "platform", "platform-system", map[string]any{
		"kubeopera-operator": map[string]any{"watchNamespaces": []any{"team-a"}},
	})
	g.Expect(err).NotTo(HaveOccurred())
	d := deploymentOf(t, manifestObjects(t, rel))
	g.Expect(envValue(managerContainer(d), "WATCH_NAMESPACE")).To(Equal("team-a"))

	// Strict elsewhere: a misspelt key of the subchart's values still fails.
	_, err = renderChartRelease(t, parent, "platform", "platform-system", map[string]any{
		"kubeopera-operator": map[string]any{"watchNamespace": []any{"team-a"}},
	})
	g.Expect(err).To(MatchError(ContainSubstring("watchNamespace")))
}

// `helm lint --strict` (Helm's lint action, which fails on warnings in strict mode) passes with
// the defaults, with every value set and with global values; it fails on a broken copy, so the
// lint is not vacuous.
func TestChartStaticLintStrict(t *testing.T) {
	lint := func(dir string, values map[string]any) *action.LintResult {
		l := action.NewLint()
		l.Strict = true
		l.Namespace = "kubeopera-operator-system"
		l.KubeVersion = &chartutilKubeVersion
		return l.Run([]string{dir}, values)
	}
	dir := repoPath("dist", "chart")
	for name, values := range map[string]map[string]any{
		"defaults":    nil,
		"every value": everyValue(),
		"global":      {"global": map[string]any{"imageRegistry": "registry.example.com"}},
	} {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			res := lint(dir, values)
			g.Expect(res.TotalChartsLinted).To(Equal(1))
			g.Expect(res.Errors).To(BeEmpty(), "lint messages: %v", res.Messages)
		})
	}
	t.Run("a broken copy fails", func(t *testing.T) {
		g := NewWithT(t)
		broken := filepath.Join(t.TempDir(), "kubeopera-operator")
		g.Expect(os.CopyFS(broken, os.DirFS(dir))).To(Succeed())
		// An unclosed action: the template does not parse.
		f := filepath.Join(broken, "templates", "service.yaml")
		b, err := os.ReadFile(f)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(os.WriteFile(f, append(b, []byte("\n{{ .Values.metrics.port\n")...), 0o600)).To(Succeed())
		g.Expect(lint(broken, nil).Errors).NotTo(BeEmpty())
	})
}

// Values the chart cannot use are refused before anything is rendered (values.schema.json),
// with the offending key named.
func TestChartStaticRefusesBadValues(t *testing.T) {
	cases := []struct {
		name   string
		values map[string]any
		want   string
	}{
		{"watchNamespaces is a list", map[string]any{"watchNamespaces": "team-a"}, "watchNamespaces"},
		{"a namespace is a DNS label", map[string]any{"watchNamespaces": []any{"Team_A"}}, "watchNamespaces"},
		{"a misspelt key", map[string]any{"watchNamespace": []any{"team-a"}}, "watchNamespace"},
		{"a misspelt nested key", map[string]any{"crds": map[string]any{"enable": false}}, "enable"},
		{"a digest is sha256", map[string]any{"image": map[string]any{"digest": "latest"}}, "digest"},
		{"extra args are flags", map[string]any{"extraArgs": []any{"leader-elect"}}, "extraArgs"},
		{"toggles are booleans", map[string]any{"leaderElection": map[string]any{"enabled": "yes"}}, "enabled"},
		{"the pull policy is Kubernetes'", map[string]any{"image": map[string]any{"pullPolicy": "Sometimes"}}, "pullPolicy"},
		{"probes take timings only", map[string]any{"livenessProbe": map[string]any{"httpGet": map[string]any{"path": "/"}}}, "httpGet"},
		{"probe timings are positive", map[string]any{"readinessProbe": map[string]any{"periodSeconds": 0}}, "periodSeconds"},
		{"one of minAvailable and maxUnavailable", map[string]any{"podDisruptionBudget": map[string]any{"enabled": true, "minAvailable": 1, "maxUnavailable": 1}}, "podDisruptionBudget"},
		{"a budget is a count or a percentage", map[string]any{"podDisruptionBudget": map[string]any{"minAvailable": "half"}}, "minAvailable"},
		{"a spread constraint names its topology", map[string]any{"topologySpreadConstraints": []any{map[string]any{"maxSkew": 1}}}, "topologySpreadConstraints"},
		{"a volume mount has a path", map[string]any{"extraVolumeMounts": []any{map[string]any{"name": "x"}}}, "extraVolumeMounts"},
		{"global is an object", map[string]any{"global": "registry.example.com"}, "global"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			_, err := renderChart(t, "bad", "bad-system", tc.values)
			g.Expect(err).To(HaveOccurred())
			g.Expect(err.Error()).To(ContainSubstring("values don't meet the specifications of the schema"))
			g.Expect(err.Error()).To(ContainSubstring(tc.want))
		})
	}
}

// renderRelease renders dist/chart as `helm template` does and returns the release (manifest and
// notes).
func renderRelease(t *testing.T, name, ns string, values map[string]any) (*release.Release, error) {
	t.Helper()
	return renderChartRelease(t, loadChart(t), name, ns, values)
}

// renderChartRelease renders ch client-side (Helm's install action in dry-run), with values
// validated against the schemas of the chart and its subcharts.
func renderChartRelease(t *testing.T, ch *chart.Chart, name, ns string, values map[string]any) (*release.Release, error) {
	t.Helper()
	in := action.NewInstall(&action.Configuration{Log: func(string, ...any) {}})
	in.ReleaseName, in.Namespace = name, ns
	in.DryRun, in.ClientOnly, in.Replace = true, true, true
	in.KubeVersion = &chartutilKubeVersion
	return in.RunWithContext(t.Context(), ch, values)
}
