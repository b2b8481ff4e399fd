// Package ociimage assembles the operator's OCI image without a container engine: an image
// index with one image per platform, each a single layer holding the static manager binary and
// the few files a distroless "static" base provides for a non-root process (the nonroot user in
// /etc/passwd and /etc/group, its home, a world-writable /tmp), and nothing else: no shell, no
// package manager, no CA file (the binary carries Mozilla's roots as a fallback,
// golang.org/x/crypto/x509roots/fallback). The base is empty, so nothing is pulled.
//
// The image is reproducible: file times, owners and the image's creation time are fixed by
// Config.Created (the release commit's time), so the same commit and version always give the
// same index digest. The Dockerfile at the repository root builds the same binary on a
// distroless base for users with a container engine; the image test checks both agree.
package ociimage

import (
	"archive/tar"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// What every image of the index has in common; the Dockerfile and config/manager say the same.
const (
	// Entrypoint is the manager binary's path in the image, the Deployment's command.
	Entrypoint = "/kubeopera-operator"
	// UID and GID are the non-root user the image runs as (distroless "nonroot").
	UID = 65532
	GID = 65532
	// Source is the repository the image is built from (org.opencontainers.image.source).
	Source = "https://github.com/kubeopera/kubeopera-operator"
	// Licenses is the SPDX expression of the image's license (LICENSE).
	Licenses = "Apache-2.0"
	// Title and Description name the image in registries.
	Title       = "kubeopera-operator"
	Description = "Kubernetes operator for Datasance PoT / ioFog control planes and tenant applications delivered through Git and Flux"
)

// OCI annotation keys used as config labels and index annotations.
const (
	LabelSource      = "org.opencontainers.image.source"
	LabelVersion     = "org.opencontainers.image.version"
	LabelRevision    = "org.opencontainers.image.revision"
	LabelLicenses    = "org.opencontainers.image.licenses"
	LabelTitle       = "org.opencontainers.image.title"
	LabelDescription = "org.opencontainers.image.description"
	LabelCreated     = "org.opencontainers.image.created"
	// RefName is the tag an OCI layout's index.json records for the image index.
	RefName = "org.opencontainers.image.ref.name"
)

// Binary is the manager binary built for one platform.
type Binary struct {
	Platform v1.Platform
	Path     string
}

// Config is what an image build needs.
type Config struct {
	// Binaries, one per platform, in the order of the index.
	Binaries []Binary
	// Version is the operator's version without "v" (0.2.0).
	Version string
	// Revision is the Git commit the binaries were built from (may be empty).
	Revision string
	// Created is the image's creation time and every file's modification time.
	Created time.Time
}

// User is the image's user, as the config records it.
func User() string { return fmt.Sprintf("%d:%d", UID, GID) }

// Labels are the OCI labels of every image config, and the annotations of the index.
func (c Config) Labels() map[string]string {
	l := map[string]string{
		LabelSource:      Source,
		LabelVersion:     c.Version,
		LabelLicenses:    Licenses,
		LabelTitle:       Title,
		LabelDescription: Description,
		LabelCreated:     c.Created.UTC().Format(time.RFC3339),
	}
	if c.Revision != "" {
		l[LabelRevision] = c.Revision
	}
	return l
}

// Build assembles the image index.
func Build(c Config) (v1.ImageIndex, error) {
	if len(c.Binaries) == 0 {
		return nil, errors.New("no binaries")
	}
	if c.Version == "" || c.Created.IsZero() {
		return nil, errors.New("version and creation time are required")
	}
	idx := mutate.IndexMediaType(empty.Index, types.OCIImageIndex)
	for _, b := range c.Binaries {
		img, err := c.image(b)
		if err != nil {
			return nil, fmt.Errorf("image for %s: %w", b.Platform, err)
		}
		p := b.Platform
		idx = mutate.AppendManifests(idx, mutate.IndexAddendum{Add: img, Descriptor: v1.Descriptor{Platform: &p}})
	}
	out, ok := mutate.Annotations(idx, c.Labels()).(v1.ImageIndex)
	if !ok {
		return nil, errors.New("annotated index is not an index")
	}
	return out, nil
}

// image is the image of one platform: empty base, one layer, the config.
func (c Config) image(b Binary) (v1.Image, error) {
	layer, err := c.layer(b.Path)
	if err != nil {
		return nil, err
	}
	created := v1.Time{Time: c.Created.UTC()}
	img := mutate.ConfigMediaType(mutate.MediaType(empty.Image, types.OCIManifestSchema1), types.OCIConfigJSON)
	img, err = mutate.Append(img, mutate.Addendum{
		Layer:     layer,
		MediaType: types.OCILayer,
		History:   v1.History{Created: created, CreatedBy: "make image (hack/release): " + Title + " " + c.Version, Comment: "static manager binary, nonroot user"},
	})
	if err != nil {
		return nil, err
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return nil, err
	}
	cf = cf.DeepCopy()
	cf.Architecture, cf.OS, cf.Variant, cf.OSVersion = b.Platform.Architecture, b.Platform.OS, b.Platform.Variant, b.Platform.OSVersion
	cf.Created = created
	cf.Author = Source
	cf.Config = v1.Config{
		Entrypoint: []string{Entrypoint},
		User:       User(),
		WorkingDir: "/",
		Labels:     c.Labels(),
	}
	return mutate.ConfigFile(img, cf)
}

// layer is the single layer: directories, the user database and the binary, owned by root
// (the binary is not writable by the user that runs it) except the user's home.
func (c Config) layer(binary string) (v1.Layer, error) {
	bin, err := os.ReadFile(binary) //nolint:gosec // G304: the binary the caller built
	if err != nil {
		return nil, fmt.Errorf("read the binary: %w", err)
	}
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	mtime := c.Created.UTC()
	dir := func(name string, mode int64, uid, gid int) error {
		return tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: name, Mode: mode, Uid: uid, Gid: gid, ModTime: mtime, Format: tar.FormatPAX})
	}
	file := func(name string, mode int64, data []byte) error {
		if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: name, Mode: mode, Size: int64(len(data)), ModTime: mtime, Format: tar.FormatPAX}); err != nil {
			return err
		}
		_, err := tw.Write(data)
		return err
	}
	steps := []func() error{
		func() error { return dir("etc/", 0o755, 0, 0) },
		func() error { return file("etc/passwd", 0o644, []byte(passwd)) },
		func() error { return file("etc/group", 0o644, []byte(group)) },
		func() error { return dir("home/", 0o755, 0, 0) },
		func() error { return dir("home/nonroot/", 0o700, UID, GID) },
		func() error { return dir("tmp/", 0o1777, 0, 0) },
		func() error { return file(Entrypoint[1:], 0o755, bin) },
		tw.Close,
	}
	for _, step := range steps {
		if err := step(); err != nil {
			return nil, fmt.Errorf("write the layer: %w", err)
		}
	}
	data := buf.Bytes()
	return tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(data)), nil
	}, tarball.WithMediaType(types.OCILayer))
}

// The user database: root (owner of the files) and the nonroot user the image runs as, both
// without a login shell (there is none).
const (
	passwd = "root:x:0:0:root:/root:/sbin/nologin\nnonroot:x:65532:65532:nonroot:/home/nonroot:/sbin/nologin\n" //nolint:gosec // G101: a user database without passwords ("x")
	group  = "root:x:0:\nnonroot:x:65532:\n"
)
