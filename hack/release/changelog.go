package main

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"regexp"
	"strings"
)

// changelogCmd turns the Unreleased section of CHANGELOG.md into the release's section.
func changelogCmd(args []string) error {
	fs := flag.NewFlagSet("changelog", flag.ContinueOnError)
	file := fs.String("file", "../../CHANGELOG.md", "the changelog")
	version := fs.String("version", "", "the version released, without v")
	date := fs.String("date", "", "the release date, YYYY-MM-DD")
	previous := fs.String("previous", "", "the version released before, without v (empty: none)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *version == "" || *date == "" {
		return errors.New("changelog: -version and -date are required")
	}
	b, err := os.ReadFile(*file)
	if err != nil {
		return err
	}
	out, err := releaseChangelog(string(b), *version, *date, *previous)
	if err != nil {
		return fmt.Errorf("%s: %w", *file, err)
	}
	return os.WriteFile(*file, []byte(out), 0o644) //nolint:gosec // G306: a file of the repository
}

var (
	sectionHeading = regexp.MustCompile(`(?m)^## \[([^\]]+)\]`)
	unreleasedLink = regexp.MustCompile(`(?m)^\[Unreleased\]: (\S+)/compare/\S+\.\.\.HEAD$`)
)

// releaseChangelog renames the Unreleased section to "[version] - date", puts a new empty
// Unreleased section above it and updates the compare links at the end. It refuses a version
// that has a section already and an Unreleased section with no entry: a release says what
// changed.
func releaseChangelog(text, version, date, previous string) (string, error) {
	headings := sectionHeading.FindAllStringSubmatchIndex(text, -1)
	unreleased := -1
	for i, h := range headings {
		name := text[h[2]:h[3]]
		if name == version {
			return "", fmt.Errorf("version %s has a section already", version)
		}
		if name == "Unreleased" && unreleased < 0 {
			unreleased = i
		}
	}
	if unreleased < 0 {
		return "", errors.New("no ## [Unreleased] section")
	}
	start := headings[unreleased][0]
	end := len(text)
	if unreleased+1 < len(headings) {
		end = headings[unreleased+1][0]
	}
	body := text[headings[unreleased][1]:end]
	if !strings.Contains(body, "\n- ") {
		return "", errors.New("the Unreleased section lists no change")
	}
	out := text[:start] + "## [Unreleased]\n\n## [" + version + "] - " + date + text[headings[unreleased][1]:]

	m := unreleasedLink.FindStringSubmatchIndex(out)
	if m == nil {
		return "", errors.New("no [Unreleased]: <repository>/compare/<from>...HEAD link")
	}
	repo := out[m[2]:m[3]]
	links := "[Unreleased]: " + repo + "/compare/v" + version + "...HEAD\n"
	if previous != "" {
		links += "[" + version + "]: " + repo + "/compare/v" + previous + "...v" + version
	} else {
		links += "[" + version + "]: " + repo + "/releases/tag/v" + version
	}
	return out[:m[0]] + links + out[m[1]:], nil
}
