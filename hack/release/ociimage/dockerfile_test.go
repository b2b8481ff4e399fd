package ociimage

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	. "github.com/onsi/gomega"

	"github.com/kubeopera/kubeopera-operator/test/testenv"
)

// instruction is one Dockerfile instruction, continuation lines joined.
type instruction struct{ cmd, args string }

// dockerfile reads the repository's Dockerfile into its instructions, by build stage.
func dockerfile(t *testing.T) [][]instruction {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(testenv.Root(), "Dockerfile"))
	if err != nil {
		t.Fatal(err)
	}
	var stages [][]instruction
	var global []instruction
	joined := strings.ReplaceAll(string(b), "\\\n", " ")
	for line := range strings.SplitSeq(joined, "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		cmd, args, _ := strings.Cut(line, " ")
		in := instruction{strings.ToUpper(cmd), strings.Join(strings.Fields(args), " ")}
		if in.cmd == "FROM" {
			stages = append(stages, nil)
		}
		if len(stages) == 0 {
			global = append(global, in)
			continue
		}
		stages[len(stages)-1] = append(stages[len(stages)-1], in)
	}
	if len(stages) < 2 {
		t.Fatalf("the Dockerfile has %d stages, want a build stage and the final one", len(stages))
	}
	stages[0] = append(global, stages[0]...)
	return stages
}

// The Dockerfile, for users with a container engine, builds what `make image` builds: the same
// static build (CGO off, paths trimmed, the same linker flags), with the Go toolchain of go.mod,
// on a distroless nonroot base with no shell, run as the image's user with the image's
// entrypoint and labels.
func TestDockerfileMatchesTheImage(t *testing.T) {
	g := NewWithT(t)
	stages := dockerfile(t)
	build, final := stages[0], stages[len(stages)-1]

	var run, goVersion string
	for _, in := range build {
		switch {
		case in.cmd == "RUN" && strings.Contains(in.args, "go build"):
			run = in.args
		case in.cmd == "ARG" && strings.HasPrefix(in.args, "GO_VERSION="):
			goVersion = strings.TrimPrefix(in.args, "GO_VERSION=")
		}
	}
	g.Expect(run).To(ContainSubstring("CGO_ENABLED=0"))
	g.Expect(run).To(ContainSubstring("-trimpath"))
	g.Expect(run).To(ContainSubstring(`-ldflags "` + LDFlags("${VERSION}") + `"`))
	gomod, err := os.ReadFile(filepath.Join(testenv.Root(), "go.mod"))
	g.Expect(err).NotTo(HaveOccurred())
	toolchain := regexp.MustCompile(`(?m)^toolchain go(\S+)$`).FindSubmatch(gomod)
	g.Expect(toolchain).NotTo(BeNil())
	g.Expect(goVersion).To(Equal(string(toolchain[1])), "the build stage's Go is go.mod's toolchain")

	got := map[string]string{}
	var labels []string
	for _, in := range final {
		switch in.cmd {
		case "FROM", "USER", "ENTRYPOINT":
			got[in.cmd] = in.args
		case "COPY":
			if strings.HasPrefix(in.args, "--from=build ") {
				got["COPY"] = in.args
			}
		case "LABEL":
			labels = append(labels, in.args)
		case "RUN", "SHELL":
			t.Errorf("the final stage runs %s: the base has no shell", in.cmd)
		}
	}
	g.Expect(got["FROM"]).To(MatchRegexp(`^gcr\.io/distroless/static-debian\d+:nonroot$`))
	g.Expect(got["USER"]).To(Equal(User()))
	var entrypoint []string
	g.Expect(json.Unmarshal([]byte(got["ENTRYPOINT"]), &entrypoint)).To(Succeed(), "ENTRYPOINT in exec form")
	g.Expect(entrypoint).To(Equal([]string{Entrypoint}))
	g.Expect(got["COPY"]).To(HaveSuffix(" " + Entrypoint))

	label := strings.Join(labels, " ")
	cfg := Config{Version: "${VERSION}", Revision: "${REVISION}"}
	for key, value := range cfg.Labels() {
		if key == LabelCreated {
			continue // the build's own time
		}
		g.Expect(label).To(ContainSubstring(key+`="`+value+`"`), "label %s", key)
	}
}
