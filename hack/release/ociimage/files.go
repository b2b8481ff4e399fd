package ociimage

import (
	"archive/tar"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
)

// Platforms are the platforms `make image` builds: the index holds one image for each.
var Platforms = []v1.Platform{{OS: "linux", Architecture: "amd64"}, {OS: "linux", Architecture: "arm64"}}

// LDFlags are the linker flags of a release binary: no symbol table or DWARF, and the version
// main.go logs at start.
func LDFlags(version string) string { return "-s -w -X main.version=" + version }

// BuildBinary builds the manager (main.go in root) for platform p into out: static
// (CGO_ENABLED=0), with paths trimmed, as the Dockerfile does.
func BuildBinary(ctx context.Context, root, version string, p v1.Platform, out string) error {
	cmd := exec.CommandContext(ctx, "go", "build", "-trimpath", "-ldflags", LDFlags(version), "-o", out, ".") //nolint:gosec // G204: fixed command, the caller's output path
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS="+p.OS, "GOARCH="+p.Architecture)
	if b, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("go build for %s: %w: %s", p, err, b)
	}
	return nil
}

// WriteLayout writes idx as an OCI image layout into dir (replacing it), with tag as the
// index's ref name.
func WriteLayout(dir string, idx v1.ImageIndex, tag string) error {
	if err := os.RemoveAll(dir); err != nil {
		return err
	}
	p, err := layout.Write(dir, empty.Index)
	if err != nil {
		return fmt.Errorf("create the OCI layout: %w", err)
	}
	if err := p.AppendIndex(idx, layout.WithAnnotations(map[string]string{RefName: tag})); err != nil {
		return fmt.Errorf("write the image index: %w", err)
	}
	return nil
}

// ReadLayout reads back the image index an OCI layout written by WriteLayout holds, and its tag.
func ReadLayout(dir string) (v1.ImageIndex, string, error) {
	top, err := layout.ImageIndexFromPath(dir)
	if err != nil {
		return nil, "", fmt.Errorf("read the OCI layout: %w", err)
	}
	m, err := top.IndexManifest()
	if err != nil {
		return nil, "", err
	}
	if len(m.Manifests) != 1 {
		return nil, "", fmt.Errorf("the layout's index.json lists %d entries, want one image index", len(m.Manifests))
	}
	idx, err := top.ImageIndex(m.Manifests[0].Digest)
	if err != nil {
		return nil, "", fmt.Errorf("read the image index: %w", err)
	}
	return idx, m.Manifests[0].Annotations[RefName], nil
}

// WriteArchive writes the OCI layout in dir as one tar file (what `docker load`, `podman load`
// and `skopeo copy oci-archive:` read), with fixed times and owners: the same layout gives the
// same archive.
func WriteArchive(dir, out string, mtime time.Time) (err error) {
	f, err := os.Create(out) //nolint:gosec // G304: the caller's output path
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, f.Close()) }()
	tw := tar.NewWriter(f)
	// WalkDir visits entries in lexical order.
	err = filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || path == dir {
			return err
		}
		rel, err := filepath.Rel(dir, path)
		if err != nil {
			return err
		}
		h := &tar.Header{Name: filepath.ToSlash(rel), ModTime: mtime.UTC(), Format: tar.FormatPAX}
		if d.IsDir() {
			h.Typeflag, h.Name, h.Mode = tar.TypeDir, h.Name+"/", 0o755
			return tw.WriteHeader(h)
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		h.Typeflag, h.Mode, h.Size = tar.TypeReg, 0o644, info.Size()
		if err := tw.WriteHeader(h); err != nil {
			return err
		}
		src, err := os.Open(path) //nolint:gosec // G304: a file of the layout just written
		if err != nil {
			return err
		}
		defer src.Close()
		_, err = io.Copy(tw, src)
		return err
	})
	if err != nil {
		return fmt.Errorf("archive %s: %w", dir, err)
	}
	return tw.Close()
}
