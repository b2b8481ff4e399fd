// Command release builds the release artifacts that need Go libraries the operator itself does
// not use, so that they stay out of the operator's module (and out of its SBOM and govulncheck
// scan): `make image` and `make release` run it from this directory.
//
//	go run . image -root ../.. -version 0.2.0 -out ../../bin/image [-archive FILE] [-platforms linux/amd64,linux/arm64]
//	go run . pin -root ../.. -version 0.2.0 -image ghcr.io/kubeopera/kubeopera-operator:v0.2.0 -digest sha256:... -out ../../bin/release/v0.2.0
//	go run . changelog -file ../../CHANGELOG.md -version 0.2.0 -date 2026-12-02 -previous 0.1.0
//	go run . notes -file ../../CHANGELOG.md -version 0.2.0
//
// image builds the static manager binary for each platform and assembles the OCI image index
// (package ociimage) into an OCI layout directory, optionally also as one tar archive; it prints
// the index digest. pin writes the release's manifests with the images referenced by digest
// (pin.go): the OLM bundle, install.yaml and the packaged chart, and checks they agree
// (verify.go). changelog renames the
// Unreleased section of CHANGELOG.md to the release (refusing an empty one) and updates its links;
// notes prints a release's section (the GitHub release's notes).
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"

	"github.com/kubeopera/kubeopera-operator/hack/release/ociimage"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	err := run(ctx, os.Args[1:])
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "release:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, args []string) error {
	if len(args) == 0 {
		return errors.New("usage: release image|pin|changelog|notes [flags]")
	}
	switch args[0] {
	case "image":
		return imageCmd(ctx, args[1:])
	case "pin":
		return pinCmd(args[1:])
	case "changelog":
		return changelogCmd(args[1:])
	case "notes":
		return notesCmd(args[1:])
	default:
		return fmt.Errorf("unknown command %q (image, pin, changelog, notes)", args[0])
	}
}

func imageCmd(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("image", flag.ContinueOnError)
	root := fs.String("root", "../..", "repository root (main.go)")
	version := fs.String("version", "", "operator version, without v")
	revision := fs.String("revision", "", "Git commit of the build (org.opencontainers.image.revision)")
	created := fs.String("created", "", "creation time: Unix seconds or RFC 3339 (default: $SOURCE_DATE_EPOCH, else now)")
	platforms := fs.String("platforms", "linux/amd64,linux/arm64", "comma-separated os/arch")
	out := fs.String("out", "", "OCI layout directory to write")
	archive := fs.String("archive", "", "also write the layout as this tar file")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *version == "" || *out == "" {
		return errors.New("image: -version and -out are required")
	}
	when, err := creationTime(*created)
	if err != nil {
		return err
	}
	// go build runs in -root: every path is made absolute first.
	for _, p := range []*string{root, out, archive} {
		if *p == "" {
			continue
		}
		if *p, err = filepath.Abs(*p); err != nil {
			return err
		}
	}
	cfg := ociimage.Config{Version: *version, Revision: *revision, Created: when}
	binDir := *out + ".binaries"
	for _, p := range strings.Split(*platforms, ",") {
		plat, err := v1.ParsePlatform(strings.TrimSpace(p))
		if err != nil {
			return err
		}
		path := filepath.Join(binDir, plat.OS+"-"+plat.Architecture, "kubeopera-operator")
		start := time.Now()
		if err := ociimage.BuildBinary(ctx, *root, *version, *plat, path); err != nil {
			return err
		}
		fmt.Fprintf(os.Stderr, "image: built %s in %.1fs\n", path, time.Since(start).Seconds())
		cfg.Binaries = append(cfg.Binaries, ociimage.Binary{Platform: *plat, Path: path})
	}
	idx, err := ociimage.Build(cfg)
	if err != nil {
		return err
	}
	if err := ociimage.WriteLayout(*out, idx, "v"+*version); err != nil {
		return err
	}
	digest, err := idx.Digest()
	if err != nil {
		return err
	}
	if *archive != "" {
		if err := ociimage.WriteArchive(*out, *archive, when); err != nil {
			return err
		}
	}
	m, err := idx.IndexManifest()
	if err != nil {
		return err
	}
	for _, d := range m.Manifests {
		fmt.Printf("image: %s %s (%d bytes manifest)\n", d.Platform, d.Digest, d.Size)
	}
	fmt.Printf("image: index %s, OCI layout %s\n", digest, *out)
	return nil
}

// creationTime parses -created, defaulting to SOURCE_DATE_EPOCH (reproducible builds).
func creationTime(s string) (time.Time, error) {
	if s == "" {
		s = os.Getenv("SOURCE_DATE_EPOCH")
	}
	if s == "" {
		return time.Now().UTC().Truncate(time.Second), nil
	}
	if secs, err := strconv.ParseInt(s, 10, 64); err == nil {
		return time.Unix(secs, 0).UTC(), nil
	}
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		return time.Time{}, fmt.Errorf("creation time %q: neither Unix seconds nor RFC 3339", s)
	}
	return t.UTC(), nil
}
