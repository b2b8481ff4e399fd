package testfixture

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	datasancev3 "github.com/kubeopera/kubeopera-operator/api/datasance/v3"
)

// SamplePath is the sample ControlPlane of config/samples, relative to the module root.
const SamplePath = "config/samples/datasance_v3_controlplane.yaml"

// Sample is the sample ControlPlane users start from (SamplePath: ControlPlane pot, NATS on,
// the Controller behind an Ingress, credentials in Secrets), read strictly (an unknown field is
// an error), with mods applied in order.
func Sample(mods ...Mod) (*datasancev3.ControlPlane, error) {
	b, err := os.ReadFile(filepath.Join(moduleRoot(), filepath.FromSlash(SamplePath)))
	if err != nil {
		return nil, fmt.Errorf("read the sample ControlPlane: %w", err)
	}
	cp := &datasancev3.ControlPlane{}
	if err := yaml.UnmarshalStrict(b, cp); err != nil {
		return nil, fmt.Errorf("parse the sample ControlPlane %s: %w", SamplePath, err)
	}
	apply(cp, mods)
	return cp, nil
}

// moduleRoot is the main module's directory, found from this file's path, so that a test of any
// package (or of another module with a replace onto this one) reads the same file.
func moduleRoot() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..")
}

// CredentialSecrets are the Secrets cp's credential references name, in the order the references
// first name them: the bootstrap password reference holds password (what a Controller double
// accepts), every other key the value "<key>-value" (nothing checks those).
func CredentialSecrets(cp *datasancev3.ControlPlane, password string) []*corev1.Secret {
	var out []*corev1.Secret
	byName := map[string]*corev1.Secret{}
	for _, r := range cp.Spec.CredentialRefs() {
		s, ok := byName[r.Ref.Name]
		if !ok {
			s = &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: cp.Namespace, Name: r.Ref.Name}, Data: map[string][]byte{}}
			byName[r.Ref.Name] = s
			out = append(out, s)
		}
		value := r.Ref.Key + "-value"
		if r.Field == datasancev3.FieldBootstrapPasswordSecretRef {
			value = password
		}
		s.Data[r.Ref.Key] = []byte(value)
	}
	return out
}
