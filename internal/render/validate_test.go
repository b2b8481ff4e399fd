package render_test

import (
	"errors"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	kubeoperav1alpha1 "github.com/kubeopera/kubeopera-operator/api/kubeopera/v1alpha1"
	"github.com/kubeopera/kubeopera-operator/internal/render"
)

// TestValidate: each rule refuses its value and names the field; the values next to it pass.
// (FuzzRenderedObjectsPassServerDryRun checks against the real API server that what passes is
// accepted.)
func TestValidate(t *testing.T) {
	q := resource.MustParse
	fieldRef := func(apiVersion, path string) corev1.EnvVar {
		return corev1.EnvVar{Name: "F", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{APIVersion: apiVersion, FieldPath: path}}}
	}
	resRef := func(container, res, divisor string) corev1.EnvVar {
		sel := &corev1.ResourceFieldSelector{ContainerName: container, Resource: res}
		if divisor != "" {
			sel.Divisor = q(divisor)
		}
		return corev1.EnvVar{Name: "R", ValueFrom: &corev1.EnvVarSource{ResourceFieldRef: sel}}
	}
	cases := []struct {
		name      string
		env       []corev1.EnvVar
		resources corev1.ResourceRequirements
		ports     []kubeoperav1alpha1.AppPort
		field     string // "" when valid
	}{
		{name: "ordinary", env: []corev1.EnvVar{{Name: "with.dot-and_dash", Value: "x"}, fieldRef("", "metadata.name"),
			fieldRef("v1", "status.podIPs"), fieldRef("", "metadata.labels['app.kubernetes.io/name']"), fieldRef("", "metadata.annotations['Example.com/X']"),
			resRef("", "limits.memory", "1Mi"), resRef("web", "requests.cpu", "1m"), resRef("", "limits.hugepages-2Mi", "")},
			resources: corev1.ResourceRequirements{
				Requests: corev1.ResourceList{corev1.ResourceCPU: q("500m"), corev1.ResourceMemory: q("64Mi"), "hugepages-2Mi": q("4Mi"), "example.com/gpu": q("1")},
				Limits:   corev1.ResourceList{corev1.ResourceCPU: q("1"), "hugepages-2Mi": q("4Mi"), "example.com/gpu": q("1")}}},
		{name: "ports on the same Service port with other protocols", ports: []kubeoperav1alpha1.AppPort{
			{Name: "dns", ContainerPort: 53, Protocol: corev1.ProtocolUDP}, {Name: "dns-tcp", ContainerPort: 1053, ServicePort: 53}}},
		{name: "ports on the same Service port and protocol", ports: []kubeoperav1alpha1.AppPort{
			{Name: "http", ContainerPort: 8080, ServicePort: 80}, {Name: "web", ContainerPort: 80, Protocol: corev1.ProtocolTCP}}, field: "spec.app.ports[1]"},
		{name: "env name with =", env: []corev1.EnvVar{{Name: "A=B"}}, field: "spec.app.env[0].name"},
		{name: "env name with a control character", env: []corev1.EnvVar{{Name: "A\x01"}}, field: "spec.app.env[0].name"},
		{name: "env name empty", env: []corev1.EnvVar{{Name: "A"}, {Name: ""}}, field: "spec.app.env[1].name"},
		{name: "fieldRef not exposed", env: []corev1.EnvVar{fieldRef("", "spec.restartPolicy")}, field: "spec.app.env[0].valueFrom.fieldRef.fieldPath"},
		{name: "fieldRef all labels", env: []corev1.EnvVar{fieldRef("", "metadata.labels")}, field: "spec.app.env[0].valueFrom.fieldRef.fieldPath"},
		{name: "fieldRef bad label key", env: []corev1.EnvVar{fieldRef("", "metadata.labels['a b']")}, field: "spec.app.env[0].valueFrom.fieldRef.fieldPath"},
		{name: "fieldRef apiVersion", env: []corev1.EnvVar{fieldRef("v2", "metadata.name")}, field: "spec.app.env[0].valueFrom.fieldRef.apiVersion"},
		{name: "resourceFieldRef other container", env: []corev1.EnvVar{resRef("sidecar", "limits.cpu", "")}, field: "spec.app.env[0].valueFrom.resourceFieldRef.containerName"},
		{name: "resourceFieldRef extended resource", env: []corev1.EnvVar{resRef("", "limits.example.com/gpu", "")}, field: "spec.app.env[0].valueFrom.resourceFieldRef.resource"},
		{name: "resourceFieldRef cpu divisor", env: []corev1.EnvVar{resRef("", "limits.cpu", "1Ki")}, field: "spec.app.env[0].valueFrom.resourceFieldRef.divisor"},
		{name: "request above limit", resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceMemory: q("2Gi")},
			Limits: corev1.ResourceList{corev1.ResourceMemory: q("1Gi")}}, field: "spec.app.resources.requests[memory]"},
		{name: "negative request", resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: q("-1")}}, field: "spec.app.resources.requests[cpu]"},
		{name: "negative limit", resources: corev1.ResourceRequirements{Limits: corev1.ResourceList{corev1.ResourceEphemeralStorage: q("-1")}}, field: "spec.app.resources.limits[ephemeral-storage]"},
		{name: "hugepages alone", resources: corev1.ResourceRequirements{Limits: corev1.ResourceList{"hugepages-2Mi": q("4Mi")}}, field: "spec.app.resources"},
		{name: "hugepages not a multiple of the page size", resources: corev1.ResourceRequirements{Limits: corev1.ResourceList{corev1.ResourceCPU: q("1"), "hugepages-2Mi": q("3Mi")}}, field: "spec.app.resources.limits[hugepages-2Mi]"},
		{name: "hugepages request without limit", resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: q("1"), "hugepages-2Mi": q("2Mi")}}, field: "spec.app.resources.limits[hugepages-2Mi]"},
		{name: "extended request below limit", resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{"example.com/gpu": q("1")},
			Limits: corev1.ResourceList{"example.com/gpu": q("2")}}, field: "spec.app.resources.requests[example.com/gpu]"},
		{name: "extended fraction", resources: corev1.ResourceRequirements{Limits: corev1.ResourceList{"example.com/gpu": q("500m")}}, field: "spec.app.resources.limits[example.com/gpu]"},
		{name: "claims", resources: corev1.ResourceRequirements{Claims: []corev1.ResourceClaim{{Name: "gpu"}}}, field: "spec.app.resources.claims"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			app := &kubeoperav1alpha1.KubeOperaApp{}
			app.Name = "web"
			app.Spec.App.Env, app.Spec.App.Resources, app.Spec.App.Ports = tc.env, tc.resources, tc.ports
			err := render.Validate(app)
			if tc.field == "" {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			var invalid *render.InvalidSpecError
			if !errors.As(err, &invalid) {
				t.Fatalf("not refused as an InvalidSpecError: %v", err)
			}
			if len(invalid.Errs) != 1 || invalid.Errs[0].Field != tc.field {
				t.Fatalf("refused on %v, want exactly %s", invalid.Errs, tc.field)
			}
			if !strings.Contains(err.Error(), tc.field) {
				t.Errorf("message does not name %s: %v", tc.field, err)
			}
		})
	}
}
