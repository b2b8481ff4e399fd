package main

import (
	"os"
	"path/filepath"
	"testing"

	. "github.com/onsi/gomega"

	"github.com/kubeopera/kubeopera-operator/test/testenv"
)

const changelog = `# Changelog

Intro.

## [Unreleased]

### Added
- Something new.

## [0.1.0] - 2026-11-29

### Added
- The first.

[Unreleased]: https://github.com/kubeopera/kubeopera-operator/compare/v0.1.0...HEAD
[0.1.0]: https://github.com/kubeopera/kubeopera-operator/releases/tag/v0.1.0
`

func TestReleaseChangelog(t *testing.T) {
	g := NewWithT(t)
	out, err := releaseChangelog(changelog, "0.2.0", "2026-12-02", "0.1.0")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(out).To(Equal(`# Changelog

Intro.

## [Unreleased]

## [0.2.0] - 2026-12-02

### Added
- Something new.

## [0.1.0] - 2026-11-29

### Added
- The first.

[Unreleased]: https://github.com/kubeopera/kubeopera-operator/compare/v0.2.0...HEAD
[0.2.0]: https://github.com/kubeopera/kubeopera-operator/compare/v0.1.0...v0.2.0
[0.1.0]: https://github.com/kubeopera/kubeopera-operator/releases/tag/v0.1.0
`))

	// The next release: nothing listed yet, so it is refused.
	_, err = releaseChangelog(out, "0.3.0", "2026-12-03", "0.2.0")
	g.Expect(err).To(MatchError(ContainSubstring("lists no change")))
	// A version released already.
	_, err = releaseChangelog(changelog, "0.1.0", "2026-12-03", "")
	g.Expect(err).To(MatchError(ContainSubstring("has a section already")))
	// No Unreleased section at all.
	_, err = releaseChangelog("# Changelog\n\n## [0.1.0] - x\n- a\n", "0.2.0", "2026-12-03", "0.1.0")
	g.Expect(err).To(MatchError(ContainSubstring("no ## [Unreleased]")))
}

// The repository's own CHANGELOG.md can be released as the Makefile's VERSION: it has an
// Unreleased section with entries and the links the release rewrites (make release fails early
// otherwise).
func TestRepositoryChangelogIsReleasable(t *testing.T) {
	g := NewWithT(t)
	b, err := os.ReadFile(filepath.Join(testenv.Root(), "CHANGELOG.md"))
	g.Expect(err).NotTo(HaveOccurred())
	_, err = releaseChangelog(string(b), "99.0.0", "2026-12-31", "0.1.0")
	g.Expect(err).NotTo(HaveOccurred())
}
