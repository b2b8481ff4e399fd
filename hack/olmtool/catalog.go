package main

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"k8s.io/apimachinery/pkg/util/version"
)

// File-based catalog helpers. A package directory holds package.yaml (opm init), channels.yaml and
// one bundle-v<version>.yaml per version (opm render of that version's bundle with the bundle image
// filled in). hack/catalog.sh rebuilds the whole directory from the released bundles
// (hack/bundles/) and bundle/, in version order.

// channelEntry is one olm.channel entry.
type channelEntry struct {
	Name      string   `json:"name"`
	Replaces  string   `json:"replaces,omitempty"`
	Skips     []string `json:"skips,omitempty"`
	SkipRange string   `json:"skipRange,omitempty"`
}

// channel is an olm.channel blob.
type channel struct {
	Schema  string         `json:"schema"`
	Package string         `json:"package"`
	Name    string         `json:"name"`
	Entries []channelEntry `json:"entries"`
}

// runFBCBundle fills in the bundle image of an `opm render <bundle dir>` result, as rendering the
// pushed bundle image would: `image` is set and the image is listed in relatedImages.
// The blob is written to OUT-DIR/bundle-v<version>.yaml, whose path is printed.
func runFBCBundle(args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("fbc-bundle", flag.ContinueOnError)
	in := fs.String("in", "", "output of `opm render <bundle dir> -o yaml`")
	image := fs.String("image", "", "the bundle image")
	outDir := fs.String("out-dir", "", "catalog package directory to write the olm.bundle blob to")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if err := required(fs, "in", "image", "out-dir"); err != nil {
		return err
	}
	b, err := readDocument(*in)
	if err != nil {
		return err
	}
	if b["schema"] != "olm.bundle" {
		return fmt.Errorf("%s: want an olm.bundle blob, found schema %v", *in, b["schema"])
	}
	b["image"] = *image
	related, _ := b["relatedImages"].([]any)
	listed := false
	for _, r := range related {
		if m, _ := r.(map[string]any); m["image"] == *image {
			listed = true
		}
	}
	if !listed {
		related = append(related, map[string]any{"name": "", "image": *image})
	}
	sort.SliceStable(related, func(i, j int) bool {
		mi, _ := related[i].(map[string]any)
		mj, _ := related[j].(map[string]any)
		si, _ := mi["image"].(string)
		sj, _ := mj["image"].(string)
		return si < sj
	})
	b["relatedImages"] = related
	_, _, v, err := bundleIdentity(b)
	if err != nil {
		return err
	}
	out := filepath.Join(*outDir, "bundle-v"+v.String()+".yaml")
	if err := writeDocuments(out, "", b); err != nil {
		return err
	}
	fmt.Fprintln(stdout, out)
	return nil
}

// bundleIdentity returns the name and version of an olm.bundle blob.
func bundleIdentity(b map[string]any) (name, pkg string, v *version.Version, err error) {
	name, _ = b["name"].(string)
	pkg, _ = b["package"].(string)
	props, _ := b["properties"].([]any)
	for _, p := range props {
		m, _ := p.(map[string]any)
		if m["type"] != "olm.package" {
			continue
		}
		val, _ := m["value"].(map[string]any)
		s, _ := val["version"].(string)
		v, err = version.ParseSemantic(s)
		if err != nil {
			return "", "", nil, fmt.Errorf("bundle %s: version %q: %w", name, s, err)
		}
		return name, pkg, v, nil
	}
	return "", "", nil, fmt.Errorf("bundle %q has no olm.package property", name)
}

// runFBCChannels puts a bundle into the named channels: its entry replaces the highest older
// version of the channel and skips every older version (skipRange "<version"), so a subscription
// on any older version upgrades to it in one step. The bundle is removed from channels not named.
func runFBCChannels(args []string, _ io.Writer) error {
	fs := flag.NewFlagSet("fbc-channels", flag.ContinueOnError)
	file := fs.String("file", "", "channels file (olm.channel blobs), created or updated")
	bundlePath := fs.String("bundle", "", "olm.bundle blob of the version to add")
	channels := fs.String("channels", "", "comma-separated channels the bundle belongs to")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if err := required(fs, "file", "bundle", "channels"); err != nil {
		return err
	}
	b, err := readDocument(*bundlePath)
	if err != nil {
		return err
	}
	name, pkg, v, err := bundleIdentity(b)
	if err != nil {
		return err
	}
	var existing []channel
	if _, err := os.Stat(*file); err == nil {
		docs, err := readDocuments(*file)
		if err != nil {
			return err
		}
		for _, d := range docs {
			var c channel
			if err := convert(d, &c); err != nil {
				return err
			}
			existing = append(existing, c)
		}
	} else if !errors.Is(err, os.ErrNotExist) {
		return err
	}
	updated, err := addToChannels(existing, pkg, name, v, strings.Split(*channels, ","))
	if err != nil {
		return err
	}
	docs := make([]any, len(updated))
	for i := range updated {
		docs[i] = updated[i]
	}
	return writeDocuments(*file, "", docs...)
}

func addToChannels(channels []channel, pkg, name string, v *version.Version, names []string) ([]channel, error) {
	want := map[string]bool{}
	for _, n := range names {
		if n = strings.TrimSpace(n); n == "" {
			return nil, errors.New("empty channel name")
		}
		want[n] = true
		if !slices.ContainsFunc(channels, func(c channel) bool { return c.Name == n }) {
			channels = append(channels, channel{Schema: "olm.channel", Package: pkg, Name: n})
		}
	}
	for i := range channels {
		c := &channels[i]
		if c.Package != pkg {
			return nil, fmt.Errorf("channel %s belongs to package %s, not %s", c.Name, c.Package, pkg)
		}
		c.Entries = slices.DeleteFunc(c.Entries, func(e channelEntry) bool { return e.Name == name })
		if !want[c.Name] {
			continue
		}
		entry := channelEntry{Name: name, SkipRange: "<" + v.String()}
		var prev *version.Version
		for _, e := range c.Entries {
			ev, err := entryVersion(pkg, e.Name)
			if err != nil {
				return nil, err
			}
			if ev.LessThan(v) && (prev == nil || prev.LessThan(ev)) {
				prev, entry.Replaces = ev, e.Name
			}
		}
		c.Entries = append(c.Entries, entry)
		var sortErr error
		sort.SliceStable(c.Entries, func(i, j int) bool {
			vi, err1 := entryVersion(pkg, c.Entries[i].Name)
			vj, err2 := entryVersion(pkg, c.Entries[j].Name)
			if err := errors.Join(err1, err2); err != nil {
				sortErr = err
				return false
			}
			return vi.LessThan(vj)
		})
		if sortErr != nil {
			return nil, sortErr
		}
	}
	channels = slices.DeleteFunc(channels, func(c channel) bool { return len(c.Entries) == 0 })
	sort.Slice(channels, func(i, j int) bool { return channels[i].Name < channels[j].Name })
	return channels, nil
}

// entryVersion reads the version from a bundle name "<package>.v<semver>".
func entryVersion(pkg, name string) (*version.Version, error) {
	s, ok := strings.CutPrefix(name, pkg+".v")
	if !ok {
		return nil, fmt.Errorf("channel entry %q is not named %s.v<version>", name, pkg)
	}
	return version.ParseSemantic(s)
}

// runFBCCheck checks what `opm validate` does not: every bundle and related image is filled in,
// and (with -head) every channel's head is the given bundle. It prints each channel's graph.
func runFBCCheck(args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("fbc-check", flag.ContinueOnError)
	dir := fs.String("dir", "", "package directory of a file-based catalog")
	head := fs.String("head", "", "bundle every channel's head must be")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if err := required(fs, "dir"); err != nil {
		return err
	}
	files, err := filepath.Glob(filepath.Join(*dir, "*.yaml"))
	if err != nil {
		return err
	}
	var problems []string
	var channels []channel
	bundles := 0
	// The CSV's spec.replaces of each bundle, which every channel entry of it must repeat.
	csvReplaces := map[string]string{}
	for _, f := range files {
		docs, err := readDocuments(f)
		if err != nil {
			return err
		}
		for _, d := range docs {
			switch d["schema"] {
			case "olm.bundle":
				bundles++
				if img, _ := d["image"].(string); img == "" {
					problems = append(problems, fmt.Sprintf("%s: bundle %v has an empty image", f, d["name"]))
				}
				name, _ := d["name"].(string)
				r, err := bundleCSVReplaces(d)
				if err != nil {
					return fmt.Errorf("%s: bundle %s: %w", f, name, err)
				}
				csvReplaces[name] = r
				related, _ := d["relatedImages"].([]any)
				for _, r := range related {
					if m, _ := r.(map[string]any); m["image"] == "" || m["image"] == nil {
						problems = append(problems, fmt.Sprintf("%s: bundle %v lists an empty related image", f, d["name"]))
					}
				}
			case "olm.channel":
				var c channel
				if err := convert(d, &c); err != nil {
					return err
				}
				channels = append(channels, c)
			}
		}
	}
	if bundles == 0 {
		problems = append(problems, *dir+": no olm.bundle")
	}
	for _, c := range channels {
		heads := channelHeads(c)
		fmt.Fprintf(stdout, "  channel %s: head %s\n", c.Name, strings.Join(heads, ","))
		for _, e := range c.Entries {
			fmt.Fprintf(stdout, "    %s replaces=%q skipRange=%q\n", e.Name, e.Replaces, e.SkipRange)
			if r, ok := csvReplaces[e.Name]; ok && r != e.Replaces {
				problems = append(problems, fmt.Sprintf("channel %s: %s replaces %q, its CSV replaces %q", c.Name, e.Name, e.Replaces, r))
			}
		}
		if *head != "" && (len(heads) != 1 || heads[0] != *head) {
			problems = append(problems, fmt.Sprintf("channel %s: head is %v, want %s", c.Name, heads, *head))
		}
	}
	for _, p := range problems {
		fmt.Fprintln(stdout, "  "+p)
	}
	if len(problems) > 0 {
		return errFailed
	}
	return nil
}

// channelHeads returns the entries no other entry replaces or skips.
func channelHeads(c channel) []string {
	replaced := map[string]bool{}
	for _, e := range c.Entries {
		replaced[e.Replaces] = true
		for _, s := range e.Skips {
			replaced[s] = true
		}
	}
	var heads []string
	for _, e := range c.Entries {
		if !replaced[e.Name] {
			heads = append(heads, e.Name)
		}
	}
	return heads
}

// bundleCSVReplaces returns spec.replaces of the CSV among a bundle blob's olm.bundle.object
// properties ("" when the bundle carries no objects or the CSV replaces nothing).
func bundleCSVReplaces(bundle map[string]any) (string, error) {
	props, _ := bundle["properties"].([]any)
	for _, p := range props {
		m, _ := p.(map[string]any)
		if m["type"] != "olm.bundle.object" {
			continue
		}
		v, _ := m["value"].(map[string]any)
		data, _ := v["data"].(string)
		raw, err := base64.StdEncoding.DecodeString(data)
		if err != nil {
			return "", fmt.Errorf("olm.bundle.object: %w", err)
		}
		var obj struct {
			Kind string `json:"kind"`
			Spec struct {
				Replaces string `json:"replaces"`
			} `json:"spec"`
		}
		if err := json.Unmarshal(raw, &obj); err != nil {
			return "", fmt.Errorf("olm.bundle.object: %w", err)
		}
		if obj.Kind == "ClusterServiceVersion" {
			return obj.Spec.Replaces, nil
		}
	}
	return "", nil
}
