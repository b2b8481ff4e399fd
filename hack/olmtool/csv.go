package main

import (
	"encoding/base64"
	"errors"
	"flag"
	"fmt"
	"io"
	"mime"
	"os"
	"path/filepath"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// operatorImageName is the relatedImages name of the operator's own image.
const operatorImageName = "kubeopera-operator"

// managerContainer is the operator's container in the bundle's Deployment.
const managerContainer = "manager"

// runFinalize sets what operator-sdk cannot take from the base CSV:
//   - createdAt: operator-sdk writes the wall clock; the base's pinned value keeps regeneration
//     reproducible;
//   - olm.skipRange: "<version", so this version can replace any older one;
//   - containerImage and relatedImages: operator-sdk lists only RELATED_IMAGE_* values; the
//     operator's own image (the manager container's) is added first;
//   - spec.icon and spec.description from files (the catalog's package uses the same files);
//   - spec.replaces: the released version this one upgrades (hack/bundles/), when there is one.
func runFinalize(args []string, _ io.Writer) error {
	fs := flag.NewFlagSet("finalize", flag.ContinueOnError)
	csvPath := fs.String("csv", "", "the ClusterServiceVersion written by operator-sdk generate bundle (edited in place)")
	basePath := fs.String("base", "", "the base ClusterServiceVersion (config/manifests/bases)")
	iconPath := fs.String("icon", "", "icon file (svg, png, jpeg or gif)")
	descriptionPath := fs.String("description", "", "markdown file with the long description")
	replaces := fs.String("replaces", "", "name of the CSV this version replaces (empty: none)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if err := required(fs, "csv", "base", "icon", "description"); err != nil {
		return err
	}
	csv, err := readDocument(*csvPath)
	if err != nil {
		return err
	}
	base, err := readDocument(*basePath)
	if err != nil {
		return err
	}
	icon, err := iconOf(*iconPath)
	if err != nil {
		return err
	}
	description, err := os.ReadFile(filepath.Clean(*descriptionPath))
	if err != nil {
		return err
	}
	if err := finalizeCSV(csv, base, icon, string(description), *replaces); err != nil {
		return fmt.Errorf("%s: %w", *csvPath, err)
	}
	return writeDocuments(*csvPath, "", csv)
}

func iconOf(path string) (map[string]any, error) {
	data, err := os.ReadFile(filepath.Clean(path))
	if err != nil {
		return nil, err
	}
	mediatype := mime.TypeByExtension(filepath.Ext(path))
	switch mediatype = strings.SplitN(mediatype, ";", 2)[0]; mediatype {
	case "image/svg+xml", "image/png", "image/jpeg", "image/gif":
	default:
		return nil, fmt.Errorf("%s: media type %q is not one OLM accepts (svg, png, jpeg, gif)", path, mediatype)
	}
	return map[string]any{"base64data": base64.StdEncoding.EncodeToString(data), "mediatype": mediatype}, nil
}

func finalizeCSV(csv, base, icon map[string]any, description, replaces string) error {
	if strings.TrimSpace(description) == "" {
		return errors.New("the description is empty")
	}
	createdAt, _, _ := unstructured.NestedString(base, "metadata", "annotations", "createdAt")
	if createdAt == "" {
		return errors.New("the base CSV has no metadata.annotations.createdAt to pin")
	}
	version, _, _ := unstructured.NestedString(csv, "spec", "version")
	if version == "" {
		return errors.New("spec.version is empty")
	}
	image, err := managerImage(csv)
	if err != nil {
		return err
	}
	annotations, _, _ := unstructured.NestedStringMap(csv, "metadata", "annotations")
	if annotations == nil {
		annotations = map[string]string{}
	}
	annotations["createdAt"] = createdAt
	annotations["olm.skipRange"] = "<" + version
	annotations["containerImage"] = image
	if err := unstructured.SetNestedStringMap(csv, annotations, "metadata", "annotations"); err != nil {
		return err
	}

	related := []any{map[string]any{"name": operatorImageName, "image": image}}
	existing, _, _ := unstructured.NestedSlice(csv, "spec", "relatedImages")
	for _, r := range existing {
		m, ok := r.(map[string]any)
		if !ok {
			return fmt.Errorf("spec.relatedImages: unexpected entry %v", r)
		}
		if m["image"] == image {
			continue
		}
		if m["name"] == operatorImageName {
			return fmt.Errorf("spec.relatedImages: name %q is reserved for the operator image", operatorImageName)
		}
		related = append(related, m)
	}
	if err := unstructured.SetNestedSlice(csv, related, "spec", "relatedImages"); err != nil {
		return err
	}
	if replaces != "" {
		if err := unstructured.SetNestedField(csv, replaces, "spec", "replaces"); err != nil {
			return err
		}
	} else {
		unstructured.RemoveNestedField(csv, "spec", "replaces")
	}
	if err := unstructured.SetNestedField(csv, description, "spec", "description"); err != nil {
		return err
	}
	return unstructured.SetNestedSlice(csv, []any{icon}, "spec", "icon")
}

// managerImage returns the image of the manager container of the CSV's only Deployment.
func managerImage(csv map[string]any) (string, error) {
	deployments, _, _ := unstructured.NestedSlice(csv, "spec", "install", "spec", "deployments")
	if len(deployments) != 1 {
		return "", fmt.Errorf("want one Deployment in spec.install, found %d", len(deployments))
	}
	d, _ := deployments[0].(map[string]any)
	containers, _, _ := unstructured.NestedSlice(d, "spec", "template", "spec", "containers")
	for _, c := range containers {
		m, _ := c.(map[string]any)
		if m["name"] == managerContainer {
			if img, _ := m["image"].(string); img != "" {
				return img, nil
			}
		}
	}
	return "", fmt.Errorf("no container %q with an image in the Deployment", managerContainer)
}
