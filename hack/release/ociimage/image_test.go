package ociimage

import (
	"archive/tar"
	"bytes"
	"debug/buildinfo"
	"debug/elf"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/types"
	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	"sigs.k8s.io/yaml"

	"github.com/kubeopera/kubeopera-operator/test/testenv"
)

// testVersion is stamped into the test's binaries and image.
const testVersion = "0.0.0-imagetest"

var created = time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)

var (
	buildOnce sync.Once
	built     struct {
		layout string
		cfg    Config
		err    error
	}
)

// builtImage builds the binaries for every platform of `make image` and the image index, once
// per test run, writes it as an OCI layout and returns the layout directory and the config.
func builtImage(t *testing.T) (string, Config) {
	t.Helper()
	buildOnce.Do(func() {
		dir, err := os.MkdirTemp("", "kubeopera-image-")
		if err != nil {
			built.err = err
			return
		}
		built.layout = filepath.Join(dir, "layout")
		built.cfg = Config{Version: testVersion, Revision: "0123456789abcdef0123456789abcdef01234567", Created: created}
		for _, p := range Platforms {
			bin := filepath.Join(dir, p.OS+"-"+p.Architecture, "kubeopera-operator")
			start := time.Now()
			if built.err = BuildBinary(t.Context(), testenv.Root(), testVersion, p, bin); built.err != nil {
				return
			}
			fmt.Fprintf(os.Stderr, "image test: built %s in %.1fs\n", p, time.Since(start).Seconds())
			built.cfg.Binaries = append(built.cfg.Binaries, Binary{Platform: p, Path: bin})
		}
		idx, err := Build(built.cfg)
		if err != nil {
			built.err = err
			return
		}
		built.err = WriteLayout(built.layout, idx, "v"+testVersion)
	})
	if built.err != nil {
		t.Fatal(built.err)
	}
	return built.layout, built.cfg
}

func TestMain(m *testing.M) {
	code := m.Run()
	if built.layout != "" {
		_ = os.RemoveAll(filepath.Dir(built.layout))
	}
	os.Exit(code)
}

// entry is one file of a layer.
type entry struct {
	hdr  *tar.Header
	data []byte
}

// layerFiles reads the only layer of img.
func layerFiles(t *testing.T, img v1.Image) map[string]entry {
	t.Helper()
	layers, err := img.Layers()
	if err != nil {
		t.Fatal(err)
	}
	if len(layers) != 1 {
		t.Fatalf("%d layers, want 1", len(layers))
	}
	mt, err := layers[0].MediaType()
	if err != nil || mt != types.OCILayer {
		t.Fatalf("layer media type %q (%v), want %q", mt, err, types.OCILayer)
	}
	rc, err := layers[0].Uncompressed()
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	out := map[string]entry{}
	tr := tar.NewReader(rc)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		data, err := io.ReadAll(tr)
		if err != nil {
			t.Fatal(err)
		}
		out[h.Name] = entry{hdr: h, data: data}
	}
}

// The image as a registry or a container runtime reads it back from the OCI layout: an OCI
// index with both platforms, each image one layer with only the binary and the nonroot user's
// files (no shell, nothing else), run as 65532 with the manager as entrypoint, OCI labels set,
// the binary static and built for its platform, and the same digest when built again.
func TestImageReadBack(t *testing.T) {
	g := NewWithT(t)
	dir, cfg := builtImage(t)
	idx, tag, err := ReadLayout(dir)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(tag).To(Equal("v" + testVersion))
	g.Expect(idx.MediaType()).To(Equal(types.OCIImageIndex))
	m, err := idx.IndexManifest()
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(m.Annotations).To(Equal(cfg.Labels()))
	g.Expect(m.Annotations).To(HaveKeyWithValue(LabelSource, "https://github.com/kubeopera/kubeopera-operator"))
	g.Expect(m.Annotations).To(HaveKeyWithValue(LabelLicenses, "Apache-2.0"))
	g.Expect(m.Annotations).To(HaveKeyWithValue(LabelVersion, testVersion))

	var platforms []string
	for _, d := range m.Manifests {
		g.Expect(d.Platform).NotTo(BeNil())
		platforms = append(platforms, d.Platform.String())
		g.Expect(d.MediaType).To(Equal(types.OCIManifestSchema1))
		img, err := idx.Image(d.Digest)
		g.Expect(err).NotTo(HaveOccurred())
		cf, err := img.ConfigFile()
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(cf.OS + "/" + cf.Architecture).To(Equal(d.Platform.String()))
		g.Expect(cf.Config.Entrypoint).To(Equal([]string{"/kubeopera-operator"}))
		g.Expect(cf.Config.Cmd).To(BeEmpty())
		g.Expect(cf.Config.User).To(Equal("65532:65532"), "numeric, so runAsNonRoot can verify it")
		g.Expect(cf.Config.Labels).To(Equal(cfg.Labels()))
		g.Expect(cf.Created.Time).To(BeTemporally("==", created))

		files := layerFiles(t, img)
		names := slices.Sorted(func(yield func(string) bool) {
			for n := range files {
				if !yield(n) {
					return
				}
			}
		})
		g.Expect(names).To(Equal([]string{"etc/", "etc/group", "etc/passwd", "home/", "home/nonroot/", "kubeopera-operator", "tmp/"}),
			"the layer holds the binary and the nonroot user's files only: no shell, no package manager")
		for _, n := range names {
			h := files[n].hdr
			g.Expect(h.ModTime).To(BeTemporally("==", created), n)
			if n == "home/nonroot/" {
				g.Expect([]int{h.Uid, h.Gid}).To(Equal([]int{UID, GID}), n)
			} else {
				g.Expect([]int{h.Uid, h.Gid}).To(Equal([]int{0, 0}), "%s is root's: the user running the image cannot change it", n)
			}
		}
		g.Expect(files["kubeopera-operator"].hdr.Mode).To(Equal(int64(0o755)))
		g.Expect(files["tmp/"].hdr.Mode).To(Equal(int64(0o1777)))
		g.Expect(string(files["etc/passwd"].data)).To(ContainSubstring("nonroot:x:65532:65532:"))
		g.Expect(string(files["etc/passwd"].data)).NotTo(ContainSubstring("/bin/sh"))

		checkBinary(t, files["kubeopera-operator"].data, d.Platform.Architecture)
	}
	g.Expect(platforms).To(ConsistOf("linux/amd64", "linux/arm64"))

	// Reproducible: the same binaries, version and time give the same index.
	again, err := Build(cfg)
	g.Expect(err).NotTo(HaveOccurred())
	want, err := idx.Digest()
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(again.Digest()).To(Equal(want))
	cfg.Created = created.Add(time.Second)
	other, err := Build(cfg)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(other.Digest()).NotTo(Equal(want), "the creation time is part of the image")
}

// checkBinary checks the manager binary of one platform: an ELF executable for the platform's
// machine, static (no interpreter), CGO off, paths trimmed, with the version stamped and the
// fallback roots in.
func checkBinary(t *testing.T, data []byte, arch string) {
	t.Helper()
	g := NewWithT(t)
	f, err := elf.NewFile(bytes.NewReader(data))
	g.Expect(err).NotTo(HaveOccurred())
	defer f.Close()
	machine := map[string]elf.Machine{"amd64": elf.EM_X86_64, "arm64": elf.EM_AARCH64}[arch]
	g.Expect(f.Machine).To(Equal(machine), "ELF machine of the %s binary", arch)
	for _, p := range f.Progs {
		g.Expect(p.Type).NotTo(Equal(elf.PT_INTERP), "the %s binary is dynamically linked", arch)
	}
	g.Expect(f.Section(".symtab")).To(BeNil(), "-s: no symbol table")
	_, dwarfErr := f.DWARF()
	g.Expect(dwarfErr).To(HaveOccurred(), "-w: no DWARF")
	bi, err := buildinfo.Read(bytes.NewReader(data))
	g.Expect(err).NotTo(HaveOccurred())
	settings := map[string]string{}
	for _, s := range bi.Settings {
		settings[s.Key] = s.Value
	}
	g.Expect(settings).To(HaveKeyWithValue("CGO_ENABLED", "0"))
	g.Expect(settings).To(HaveKeyWithValue("-trimpath", "true"))
	// -trimpath keeps -ldflags out of the build settings: the stamped version is in the data.
	g.Expect(bytes.Contains(data, []byte(testVersion))).To(BeTrue(), "the version is stamped into the %s binary", arch)
	g.Expect(settings).To(HaveKeyWithValue("GOARCH", arch))
	var deps []string
	for _, d := range bi.Deps {
		deps = append(deps, d.Path)
	}
	g.Expect(deps).To(ContainElement("golang.org/x/crypto/x509roots/fallback"),
		"the image has no CA file: the binary must carry its fallback roots")
	g.Expect(bi.Path).To(Equal("github.com/kubeopera/kubeopera-operator"))
}

// The binary starts from the extracted layer of the linux/amd64 image, with the image's
// entrypoint, as the image's user (when the test runs as root), with the Deployment's arguments
// (config/manager) and a kubeconfig of a real API server, and answers /healthz and /readyz; it
// stops cleanly on SIGTERM, as the kubelet stops it.
func TestImageBinaryStartsFromTheLayer(t *testing.T) {
	g := NewWithT(t)
	dir, _ := builtImage(t)
	idx, _, err := ReadLayout(dir)
	g.Expect(err).NotTo(HaveOccurred())
	img, err := idx.Image(platformDigest(t, idx, "linux/amd64"))
	g.Expect(err).NotTo(HaveOccurred())
	cf, err := img.ConfigFile()
	g.Expect(err).NotTo(HaveOccurred())

	rootfs, err := os.MkdirTemp("", "kubeopera-rootfs-")
	g.Expect(err).NotTo(HaveOccurred())
	t.Cleanup(func() { _ = os.RemoveAll(rootfs) })
	g.Expect(os.Chmod(rootfs, 0o755)).To(Succeed())
	extract(t, img, rootfs)

	env := testenv.StartForTest(t, testenv.Options{})
	kubeconfig, err := env.Kubeconfig("image-test")
	g.Expect(err).NotTo(HaveOccurred())
	kubeconfigPath := filepath.Join(rootfs, "tmp", "kubeconfig")
	g.Expect(os.WriteFile(kubeconfigPath, kubeconfig, 0o644)).To(Succeed())

	container := managerContainer(t)
	g.Expect(container.Command).To(Equal(cf.Config.Entrypoint), "config/manager runs the image's entrypoint")
	health := testenv.MustFreeAddr(t)
	// The Deployment's arguments, then what differs outside a pod: the probe address on
	// loopback, no metrics port, the Lease namespace a pod would know, a cache in the image's /tmp.
	args := append(slices.Clone(container.Args),
		"--health-probe-bind-address="+health, "--metrics-bind-address=0",
		"--leader-election-namespace=default", "--git-cache-dir=/tmp/git")
	args = rebase(args, rootfs)
	entrypoint := filepath.Join(rootfs, cf.Config.Entrypoint[0])
	cmd := exec.CommandContext(t.Context(), entrypoint, args...)
	cmd.Dir = rootfs
	cmd.Env = []string{"KUBECONFIG=" + kubeconfigPath, "WATCH_NAMESPACE=", "HOME=/home/nonroot"}
	logPath := filepath.Join(t.TempDir(), "manager.log")
	logFile, err := os.Create(logPath)
	g.Expect(err).NotTo(HaveOccurred())
	defer logFile.Close()
	cmd.Stdout, cmd.Stderr = logFile, logFile
	if os.Geteuid() == 0 {
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: UID, Gid: GID}}
	} else {
		t.Log("not root: the binary runs as the test's user, not as 65532")
	}
	g.Expect(cmd.Start()).To(Succeed())
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		if t.Failed() {
			b, _ := os.ReadFile(logPath)
			t.Logf("manager log:\n%s", b)
		}
	})

	for _, probe := range []string{"/healthz", "/readyz"} {
		g.Eventually(func(g Gomega) {
			g.Expect(exited).NotTo(Receive(), "the manager exited")
			code, body, err := testenv.Get(t.Context(), nil, "http://"+health+probe, "")
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(code).To(Equal(http.StatusOK), "%s: %s", probe, body)
		}, 60*time.Second, 100*time.Millisecond).Should(Succeed())
	}
	logText, err := os.ReadFile(logPath)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(string(logText)).To(MatchRegexp(`"msg":"Starting manager","version":"` + regexp.QuoteMeta(testVersion) + `"`))

	g.Expect(cmd.Process.Signal(syscall.SIGTERM)).To(Succeed())
	g.Eventually(exited, 30*time.Second).Should(Receive(BeNil()), "the manager stops cleanly on SIGTERM")
}

// rebase points the arguments' absolute paths (the Deployment's volume mounts and /tmp) into
// the extracted root, as the container's mounts would.
func rebase(args []string, rootfs string) []string {
	out := make([]string, len(args))
	for i, a := range args {
		if k, v, ok := strings.Cut(a, "="); ok && strings.HasPrefix(v, "/") {
			a = k + "=" + filepath.Join(rootfs, "tmp", "mounts", v)
		}
		out[i] = a
	}
	return out
}

func platformDigest(t *testing.T, idx v1.ImageIndex, platform string) v1.Hash {
	t.Helper()
	m, err := idx.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range m.Manifests {
		if d.Platform != nil && d.Platform.String() == platform {
			return d.Digest
		}
	}
	t.Fatalf("no %s image in the index", platform)
	return v1.Hash{}
}

// extract unpacks the image's layer into dir as a container runtime would (modes and, as root,
// owners).
func extract(t *testing.T, img v1.Image, dir string) {
	t.Helper()
	for name, e := range layerFiles(t, img) {
		target := filepath.Join(dir, filepath.FromSlash(path.Clean(name)))
		mode := os.FileMode(e.hdr.Mode & 0o777)
		if e.hdr.Mode&0o1000 != 0 {
			mode |= os.ModeSticky
		}
		switch e.hdr.Typeflag {
		case tar.TypeDir:
			if err := os.MkdirAll(target, 0o755); err != nil {
				t.Fatal(err)
			}
		case tar.TypeReg:
			if err := os.MkdirAll(filepath.Dir(target), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(target, e.data, 0o600); err != nil {
				t.Fatal(err)
			}
		default:
			t.Fatalf("%s: unexpected entry type %c", name, e.hdr.Typeflag)
		}
		if err := os.Chmod(target, mode); err != nil {
			t.Fatal(err)
		}
		if os.Geteuid() == 0 {
			if err := os.Lchown(target, e.hdr.Uid, e.hdr.Gid); err != nil {
				t.Fatal(err)
			}
		}
	}
	// The Deployment's emptyDir mounts, writable by the image's user.
	mounts := filepath.Join(dir, "tmp", "mounts")
	if err := os.MkdirAll(mounts, 0o777); err != nil {
		t.Fatal(err)
	}
	if os.Geteuid() == 0 {
		if err := os.Chown(mounts, UID, GID); err != nil {
			t.Fatal(err)
		}
	}
}

// managerContainer is the manager container of config/manager/manager.yaml.
func managerContainer(t *testing.T) struct{ Command, Args []string } {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(testenv.Root(), "config", "manager", "manager.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	for doc := range strings.SplitSeq(string(b), "\n---\n") {
		var d appsv1.Deployment
		if err := yaml.Unmarshal([]byte(doc), &d); err != nil || d.Kind != "Deployment" {
			continue
		}
		for _, c := range d.Spec.Template.Spec.Containers {
			if c.Name == "manager" {
				return struct{ Command, Args []string }{c.Command, c.Args}
			}
		}
	}
	t.Fatal("config/manager/manager.yaml: no manager container")
	return struct{ Command, Args []string }{}
}
