package main

import (
	"encoding/base64"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"

	"sigs.k8s.io/yaml"
)

// A release publishes its manifests with every image it knows the digest of referenced by
// digest: the operator image (its digest is that of the index `make image` built, which is
// reproducible) and the operand images listed with a digest in hack/operand-digests.yaml. The
// committed tree references images by tag; pinning happens on copies, in the release's output
// directory, so that the digest never has to be committed (it depends on the commit it is
// built from).

// digestPattern is the form of a digest a release accepts: sha256, as registries compute it.
var digestPattern = regexp.MustCompile(`^sha256:[a-f0-9]{64}$`)

// relatedImagePrefix names the manager's environment variables that hold the default operand
// images (OLM's convention: operator-sdk lists them in the CSV's relatedImages).
const relatedImagePrefix = "RELATED_IMAGE_"

// operandDigest is one entry of hack/operand-digests.yaml.
type operandDigest struct {
	// Name is the RELATED_IMAGE_* variable's suffix, in lower case (controller for
	// RELATED_IMAGE_CONTROLLER), and the CSV's relatedImages name.
	Name string `json:"name"`
	// Image is the image by tag, as config/manager/manager.yaml has it.
	Image string `json:"image"`
	// Digest is the digest of that tag's image (index), or empty when not known.
	Digest string `json:"digest"`
}

// readOperandDigests reads the digest file and checks its form against the operand images of
// the manager (related: RELATED_IMAGE_* suffix in lower case → image): one entry per variable,
// the same image, a digest that is empty or sha256.
func readOperandDigests(path string, related map[string]string) ([]operandDigest, error) {
	b, err := os.ReadFile(path) //nolint:gosec // G304: a file of the repository
	if err != nil {
		return nil, err
	}
	var f struct {
		Images []operandDigest `json:"images"`
	}
	if err := yaml.UnmarshalStrict(b, &f); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	seen := map[string]bool{}
	var errs []error
	for _, d := range f.Images {
		want, ok := related[d.Name]
		switch {
		case !ok:
			errs = append(errs, fmt.Errorf("%s: %q is no %s* variable of the manager", path, d.Name, relatedImagePrefix))
		case seen[d.Name]:
			errs = append(errs, fmt.Errorf("%s: %q is listed twice", path, d.Name))
		case d.Image != want:
			errs = append(errs, fmt.Errorf("%s: %s is %q, but the manager's default is %q: update the digest with the image", path, d.Name, d.Image, want))
		case d.Digest != "" && !digestPattern.MatchString(d.Digest):
			errs = append(errs, fmt.Errorf("%s: %s: digest %q is not sha256:<64 hex digits>", path, d.Name, d.Digest))
		}
		seen[d.Name] = true
	}
	for name := range related {
		if !seen[name] {
			errs = append(errs, fmt.Errorf("%s: no entry for %s%s", path, relatedImagePrefix, strings.ToUpper(name)))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return f.Images, nil
}

// repository is an image reference without its tag or digest.
func repository(ref string) string {
	if i := strings.Index(ref, "@"); i >= 0 {
		ref = ref[:i]
	}
	if i := strings.LastIndex(ref, ":"); i > strings.LastIndex(ref, "/") {
		ref = ref[:i]
	}
	return ref
}

// pinnedRef is ref referenced by digest: repository@digest.
func pinnedRef(ref, digest string) string {
	return repository(ref) + "@" + digest
}

// notRefChar is what may border an image reference: a match must not be preceded or followed by
// a character that could continue it (ghcr.io/x:1.0 must not match inside ghcr.io/x:1.0.1).
const notRefChar = `[^A-Za-z0-9._:/@-]`

// replaceRef replaces every whole occurrence of the image reference from in text by to and
// returns the count.
func replaceRef(text, from, to string) (string, int) {
	re := regexp.MustCompile(`(^|` + notRefChar + `)` + regexp.QuoteMeta(from) + `($|` + notRefChar + `)`)
	n := 0
	// The boundaries are kept; a reference never overlaps another, so one pass suffices.
	out := re.ReplaceAllStringFunc(text, func(m string) string {
		n++
		sub := re.FindStringSubmatch(m)
		return sub[1] + to + sub[2]
	})
	return out, n
}

// pins are the replacements of one release: image by tag → image by digest.
type pins struct {
	operator     pin
	operands     []pin
	unknownNames []string // operands with no digest: referenced by tag
}

type pin struct{ name, from, to string }

func (p pins) all() []pin { return append([]pin{p.operator}, p.operands...) }

// newPins builds the replacements from the operator image (by tag), its index digest and the
// operand digests.
func newPins(image, digest string, operands []operandDigest) (pins, error) {
	if !digestPattern.MatchString(digest) {
		return pins{}, fmt.Errorf("operator image digest %q is not sha256:<64 hex digits>", digest)
	}
	p := pins{operator: pin{name: operatorImageName, from: image, to: pinnedRef(image, digest)}}
	for _, o := range operands {
		if o.Digest == "" {
			p.unknownNames = append(p.unknownNames, o.Name)
			continue
		}
		p.operands = append(p.operands, pin{name: o.Name, from: o.Image, to: pinnedRef(o.Image, o.Digest)})
	}
	return p, nil
}

// operatorImageName is the relatedImages (and artifacthub.io/images) name of the operator image.
const operatorImageName = "kubeopera-operator"

// apply replaces the references in text; operator says whether the operator image must occur.
func (p pins) apply(what, text string, operator bool) (string, error) {
	for _, r := range p.all() {
		var n int
		text, n = replaceRef(text, r.from, r.to)
		if n == 0 && (r.name != operatorImageName || operator) {
			return "", fmt.Errorf("%s: no reference to %s (%s)", what, r.from, r.name)
		}
	}
	return text, nil
}

// pinFile rewrites a file in place with the pins applied.
func (p pins) pinFile(path string, operator bool) error {
	b, err := os.ReadFile(path) //nolint:gosec // G304: a file of the release
	if err != nil {
		return err
	}
	out, err := p.apply(path, string(b), operator)
	if err != nil {
		return err
	}
	return os.WriteFile(path, []byte(out), 0o644) //nolint:gosec // G306: a file of the release
}

// managerRelatedImages reads the RELATED_IMAGE_* defaults of config/manager/manager.yaml.
func managerRelatedImages(root string) (map[string]string, error) {
	const src = "config/manager/manager.yaml"
	b, err := os.ReadFile(filepath.Join(root, src)) //nolint:gosec // G304: a file of the repository
	if err != nil {
		return nil, err
	}
	related := map[string]string{}
	for doc := range strings.SplitSeq(string(b), "\n---\n") {
		var d struct {
			Kind string `json:"kind"`
			Spec struct {
				Template struct {
					Spec struct {
						Containers []struct {
							Env []struct{ Name, Value string } `json:"env"`
						} `json:"containers"`
					} `json:"spec"`
				} `json:"template"`
			} `json:"spec"`
		}
		if err := yaml.Unmarshal([]byte(doc), &d); err != nil {
			return nil, fmt.Errorf("%s: %w", src, err)
		}
		for _, c := range d.Spec.Template.Spec.Containers {
			for _, e := range c.Env {
				if name, ok := strings.CutPrefix(e.Name, relatedImagePrefix); ok {
					related[strings.ToLower(name)] = e.Value
				}
			}
		}
	}
	if len(related) == 0 {
		return nil, fmt.Errorf("%s: no %s* variables", src, relatedImagePrefix)
	}
	return related, nil
}

// pinCmd writes the release's pinned manifests into -out: bundle/ (the OLM bundle, CSV pinned;
// the bundle image is built from it), catalog/ (the catalog image's content), install.yaml and
// the chart package (values and Artifact
// Hub annotations pinned, artifacthub.io/changes from CHANGELOG.md), then checks that all three
// name the same images (verifyPins).
func pinCmd(args []string) error {
	fs := flag.NewFlagSet("pin", flag.ContinueOnError)
	root := fs.String("root", "../..", "the release tree")
	version := fs.String("version", "", "operator version, without v")
	image := fs.String("image", "", "the operator image by tag (IMG)")
	digest := fs.String("digest", "", "the operator image index's digest")
	operands := fs.String("operands", "", "the operand digest file (default: <root>/hack/operand-digests.yaml)")
	out := fs.String("out", "", "the release's output directory")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *version == "" || *image == "" || *digest == "" || *out == "" {
		return errors.New("pin: -version, -image, -digest and -out are required")
	}
	if *operands == "" {
		*operands = filepath.Join(*root, "hack", "operand-digests.yaml")
	}
	p, err := pinRelease(*root, *version, *image, *digest, *operands, *out)
	if err != nil {
		return err
	}
	if err := verifyPins(*out, *version, p); err != nil {
		return err
	}
	fmt.Printf("pin: %s -> %s in bundle/, install.yaml and the chart\n", p.operator.from, p.operator.to)
	for _, o := range p.operands {
		fmt.Printf("pin: %s -> %s\n", o.from, o.to)
	}
	for _, name := range p.unknownNames {
		fmt.Printf("pin: operand image %s stays referenced by tag: hack/operand-digests.yaml has no digest for it\n", name)
	}
	return nil
}

// pinRelease writes out/bundle, out/catalog, out/install.yaml and out/<chart>-<version>.tgz from
// the tree.
func pinRelease(root, version, image, digest, operandsFile, out string) (pins, error) {
	related, err := managerRelatedImages(root)
	if err != nil {
		return pins{}, err
	}
	operands, err := readOperandDigests(operandsFile, related)
	if err != nil {
		return pins{}, err
	}
	p, err := newPins(image, digest, operands)
	if err != nil {
		return pins{}, err
	}
	if err := os.MkdirAll(out, 0o755); err != nil { //nolint:gosec // G301: the release directory
		return pins{}, err
	}

	bundle := filepath.Join(out, "bundle")
	if err := os.RemoveAll(bundle); err != nil {
		return pins{}, err
	}
	if err := os.CopyFS(bundle, os.DirFS(filepath.Join(root, "bundle"))); err != nil {
		return pins{}, fmt.Errorf("copy bundle/: %w", err)
	}
	csv := filepath.Join(bundle, "manifests", "kubeopera-operator.clusterserviceversion.yaml")
	if err := p.pinFile(csv, true); err != nil {
		return pins{}, err
	}
	if len(p.unknownNames) == 0 {
		// Every image by digest: what OpenShift's disconnected (mirrored) installs need.
		if err := setCSVAnnotation(csv, "features.operators.openshift.io/disconnected", "true"); err != nil {
			return pins{}, err
		}
	}

	installer := filepath.Join(out, "install.yaml")
	b, err := os.ReadFile(filepath.Join(root, "dist", "install.yaml")) //nolint:gosec // G304: a file of the repository
	if err != nil {
		return pins{}, err
	}
	if err := os.WriteFile(installer, b, 0o644); err != nil { //nolint:gosec // G306: a file of the release
		return pins{}, err
	}
	if err := p.pinFile(installer, true); err != nil {
		return pins{}, err
	}

	if err := pinCatalog(root, version, out, p); err != nil {
		return pins{}, err
	}

	changes, err := changelogChanges(filepath.Join(root, "CHANGELOG.md"), version)
	if err != nil {
		return pins{}, err
	}
	if _, err := packageChart(filepath.Join(root, "dist", "chart"), version, out, func(dir string) error {
		return pinChart(dir, digest, p, changes)
	}); err != nil {
		return pins{}, err
	}
	return p, nil
}

// setCSVAnnotation sets one annotation of the CSV's metadata (four spaces of indentation).
func setCSVAnnotation(path, key, value string) error {
	b, err := os.ReadFile(path) //nolint:gosec // G304: a file of the release
	if err != nil {
		return err
	}
	re := regexp.MustCompile(`(?m)^    ` + regexp.QuoteMeta(key) + `: .*$`)
	if len(re.FindAll(b, -1)) != 1 {
		return fmt.Errorf("%s: want exactly one annotation %s", path, key)
	}
	out := re.ReplaceAll(b, []byte("    "+key+": "+fmt.Sprintf("%q", value)))
	return os.WriteFile(path, out, 0o644) //nolint:gosec // G306: a file of the release
}

// chartDigestLine is image.digest in values.yaml: the only "  digest:" line (two spaces: a key
// of image).
var chartDigestLine = regexp.MustCompile(`(?m)^  digest: ""$`)

// pinChart pins the chart in dir: image.digest, the operand images of values.yaml and the
// images of Chart.yaml's artifacthub.io/images, and adds artifacthub.io/changes.
func pinChart(dir, digest string, p pins, changes []artifactHubChange) error {
	values := filepath.Join(dir, "values.yaml")
	b, err := os.ReadFile(values) //nolint:gosec // G304: a file of the release
	if err != nil {
		return err
	}
	if n := len(chartDigestLine.FindAll(b, -1)); n != 1 {
		return fmt.Errorf("%s: %d lines `  digest: \"\"`, want 1 (image.digest)", values, n)
	}
	text := chartDigestLine.ReplaceAllString(string(b), `  digest: "`+digest+`"`)
	// values.yaml names the operator image by repository only (the tag is the appVersion).
	text, err = p.apply(values, text, false)
	if err != nil {
		return err
	}
	if err := os.WriteFile(values, []byte(text), 0o644); err != nil { //nolint:gosec // G306: a file of the release
		return err
	}
	chartYAML := filepath.Join(dir, "Chart.yaml")
	if err := p.pinFile(chartYAML, true); err != nil {
		return err
	}
	return appendChangesAnnotation(chartYAML, changes)
}

// catalogData is the base64 JSON of one object of an olm.bundle's olm.bundle.object property.
var catalogData = regexp.MustCompile(`(?m)^(\s+data: )([A-Za-z0-9+/=]+)$`)

// pinCatalog writes out/catalog: the committed file-based catalog with this version's bundle
// entry pinned as its bundle is, in its relatedImages and in the CSV it carries as an object.
// The other versions' entries are as they were released.
func pinCatalog(root, version, out string, p pins) error {
	dst := filepath.Join(out, "catalog")
	if err := os.RemoveAll(dst); err != nil {
		return err
	}
	if err := os.CopyFS(dst, os.DirFS(filepath.Join(root, "catalog"))); err != nil {
		return fmt.Errorf("copy catalog/: %w", err)
	}
	entries, err := filepath.Glob(filepath.Join(dst, "*", "bundle-v"+version+".yaml"))
	if err != nil {
		return err
	}
	if len(entries) != 1 {
		return fmt.Errorf("catalog/: %d entries bundle-v%s.yaml, want 1", len(entries), version)
	}
	b, err := os.ReadFile(entries[0])
	if err != nil {
		return err
	}
	var decodeErr error
	text := catalogData.ReplaceAllStringFunc(string(b), func(line string) string {
		m := catalogData.FindStringSubmatch(line)
		obj, err := base64.StdEncoding.DecodeString(m[2])
		if err != nil {
			decodeErr = err
			return line
		}
		s := string(obj)
		for _, r := range p.all() {
			s, _ = replaceRef(s, r.from, r.to)
		}
		if len(p.unknownNames) == 0 {
			s = strings.Replace(s, `"features.operators.openshift.io/disconnected":"false"`,
				`"features.operators.openshift.io/disconnected":"true"`, 1)
		}
		return m[1] + base64.StdEncoding.EncodeToString([]byte(s))
	})
	if decodeErr != nil {
		return fmt.Errorf("%s: %w", entries[0], decodeErr)
	}
	// The relatedImages list of the entry (the CSV objects are base64 and cannot match here).
	text, err = p.apply(entries[0], text, true)
	if err != nil {
		return err
	}
	return os.WriteFile(entries[0], []byte(text), 0o644) //nolint:gosec // G306: a file of the release
}
