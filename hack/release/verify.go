package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/chartutil"
	"helm.sh/helm/v3/pkg/engine"
	"sigs.k8s.io/yaml"
)

// imageSet is what one published manifest says the images are: relatedImages-style names
// (kubeopera-operator, controller, router, nats) to references.
type imageSet map[string]string

// manifestContainer is what verifyPins reads of a Deployment's manager container.
type manifestContainer struct {
	Name  string                         `json:"name"`
	Image string                         `json:"image"`
	Env   []struct{ Name, Value string } `json:"env"`
}

// podImages reads the manager container of a pod template: its image and RELATED_IMAGE_* values.
func podImages(containers []manifestContainer) (imageSet, error) {
	for _, c := range containers {
		if c.Name != "manager" {
			continue
		}
		set := imageSet{operatorImageName: c.Image}
		for _, e := range c.Env {
			if name, ok := strings.CutPrefix(e.Name, relatedImagePrefix); ok {
				set[strings.ToLower(name)] = e.Value
			}
		}
		return set, nil
	}
	return nil, errors.New("no manager container")
}

// deploymentSpec is what verifyPins reads of a Deployment's spec.
type deploymentSpec struct {
	Template struct {
		Spec struct {
			Containers []manifestContainer `json:"containers"`
		} `json:"spec"`
	} `json:"template"`
}

type deploymentDoc struct {
	Kind string         `json:"kind"`
	Spec deploymentSpec `json:"spec"`
}

// deploymentImages reads the one Deployment of a multi-document manifest.
func deploymentImages(manifest string) (imageSet, error) {
	var found []imageSet
	for doc := range strings.SplitSeq(manifest, "\n---") {
		var d deploymentDoc
		if err := yaml.Unmarshal([]byte(doc), &d); err != nil {
			return nil, err
		}
		if d.Kind != "Deployment" {
			continue
		}
		set, err := podImages(d.Spec.Template.Spec.Containers)
		if err != nil {
			return nil, err
		}
		found = append(found, set)
	}
	if len(found) != 1 {
		return nil, fmt.Errorf("%d Deployments, want 1", len(found))
	}
	return found[0], nil
}

// csvImages reads the CSV's images three ways: the Deployment of its install strategy,
// relatedImages, and containerImage (as the operator's).
func csvImages(path string) (deployment, related imageSet, containerImage string, err error) {
	b, err := os.ReadFile(path) //nolint:gosec // G304: a file of the release
	if err != nil {
		return nil, nil, "", err
	}
	var csv struct {
		Metadata struct {
			Annotations map[string]string `json:"annotations"`
		} `json:"metadata"`
		Spec struct {
			Install struct {
				Spec struct {
					Deployments []struct {
						Spec deploymentSpec `json:"spec"`
					} `json:"deployments"`
				} `json:"spec"`
			} `json:"install"`
			RelatedImages []struct{ Name, Image string } `json:"relatedImages"`
		} `json:"spec"`
	}
	if err := yaml.Unmarshal(b, &csv); err != nil {
		return nil, nil, "", fmt.Errorf("%s: %w", path, err)
	}
	if n := len(csv.Spec.Install.Spec.Deployments); n != 1 {
		return nil, nil, "", fmt.Errorf("%s: %d deployments, want 1", path, n)
	}
	deployment, err = podImages(csv.Spec.Install.Spec.Deployments[0].Spec.Template.Spec.Containers)
	if err != nil {
		return nil, nil, "", fmt.Errorf("%s: %w", path, err)
	}
	related = imageSet{}
	for _, r := range csv.Spec.RelatedImages {
		related[r.Name] = r.Image
	}
	return deployment, related, csv.Metadata.Annotations["containerImage"], nil
}

// chartImages renders the packaged chart with its default values (release kubeopera-operator,
// as the README installs it) and reads the Deployment, and reads artifacthub.io/images.
func chartImages(path string) (deployment, annotated imageSet, err error) {
	ch, err := loader.Load(path)
	if err != nil {
		return nil, nil, err
	}
	vals, err := chartutil.ToRenderValues(ch, nil, chartutil.ReleaseOptions{
		Name: "kubeopera-operator", Namespace: "kubeopera-operator-system", IsInstall: true,
	}, chartutil.DefaultCapabilities)
	if err != nil {
		return nil, nil, err
	}
	files, err := engine.Render(ch, vals)
	if err != nil {
		return nil, nil, err
	}
	deployment, err = deploymentImages(files[ch.Name()+"/templates/deployment.yaml"])
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %w", path, err)
	}
	var listed []struct{ Name, Image string }
	if err := yaml.Unmarshal([]byte(ch.Metadata.Annotations["artifacthub.io/images"]), &listed); err != nil {
		return nil, nil, fmt.Errorf("%s: artifacthub.io/images: %w", path, err)
	}
	annotated = imageSet{}
	for _, l := range listed {
		annotated[l.Name] = l.Image
	}
	return deployment, annotated, nil
}

// verifyPins checks that the published manifests in out agree, with each other and with the
// pins: the CSV (its Deployment, relatedImages, containerImage), install.yaml and the chart (its
// rendered Deployment and its Artifact Hub images) name the operator image by the release's
// digest and every operand image as the digest file says (by digest where it has one).
func verifyPins(out, version string, p pins) error {
	want := imageSet{operatorImageName: p.operator.to}
	for _, o := range p.operands {
		want[o.name] = o.to
	}
	csvDeployment, csvRelated, containerImage, err := csvImages(filepath.Join(out, "bundle", "manifests", "kubeopera-operator.clusterserviceversion.yaml"))
	if err != nil {
		return err
	}
	b, err := os.ReadFile(filepath.Join(out, "install.yaml")) //nolint:gosec // G304: a file of the release
	if err != nil {
		return err
	}
	installer, err := deploymentImages(string(b))
	if err != nil {
		return fmt.Errorf("install.yaml: %w", err)
	}
	chartDeployment, chartAnnotated, err := chartImages(filepath.Join(out, "kubeopera-operator-"+version+".tgz"))
	if err != nil {
		return err
	}
	// The operands without a digest: whatever the CSV's Deployment says, the others must say too.
	for _, name := range p.unknownNames {
		want[name] = csvDeployment[name]
	}
	sources := []struct {
		what string
		set  imageSet
	}{
		{"the CSV's Deployment", csvDeployment},
		{"the CSV's relatedImages", csvRelated},
		{"install.yaml's Deployment", installer},
		{"the chart's Deployment", chartDeployment},
		{"the chart's artifacthub.io/images", chartAnnotated},
	}
	var errs []error
	for _, s := range sources {
		for _, name := range slices.Sorted(func(yield func(string) bool) {
			for k := range want {
				if !yield(k) {
					return
				}
			}
		}) {
			if got := s.set[name]; got != want[name] {
				errs = append(errs, fmt.Errorf("%s: %s is %q, want %q", s.what, name, got, want[name]))
			}
		}
		for name := range s.set {
			if _, ok := want[name]; !ok {
				errs = append(errs, fmt.Errorf("%s: unexpected image %s=%s", s.what, name, s.set[name]))
			}
		}
	}
	if containerImage != want[operatorImageName] {
		errs = append(errs, fmt.Errorf("the CSV's containerImage is %q, want %q", containerImage, want[operatorImageName]))
	}
	return errors.Join(errs...)
}
