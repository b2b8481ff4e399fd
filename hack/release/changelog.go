package main

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"regexp"
	"strings"

	"sigs.k8s.io/yaml"
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

// artifactHubChange is one entry of the artifacthub.io/changes annotation.
type artifactHubChange struct {
	Kind        string `json:"kind"`
	Description string `json:"description"`
}

// changeKinds maps the CHANGELOG.md subsection headings to Artifact Hub's kinds of change. An
// upgrade action is a change a user must act on: it is listed first, as "changed", and says so.
var changeKinds = map[string]string{
	"Upgrade actions": "changed",
	"Added":           "added",
	"Changed":         "changed",
	"Deprecated":      "deprecated",
	"Removed":         "removed",
	"Fixed":           "fixed",
	"Security":        "security",
}

var subsectionHeading = regexp.MustCompile(`^### (.+)$`)

// changelogChanges reads the section of version in CHANGELOG.md as Artifact Hub changes: one per
// top-level list item (continuation lines joined), its kind from the subsection's heading.
func changelogChanges(path, version string) ([]artifactHubChange, error) {
	b, err := os.ReadFile(path) //nolint:gosec // G304: a file of the repository
	if err != nil {
		return nil, err
	}
	text := string(b)
	headings := sectionHeading.FindAllStringSubmatchIndex(text, -1)
	var body string
	for i, h := range headings {
		if text[h[2]:h[3]] != version {
			continue
		}
		end := len(text)
		if i+1 < len(headings) {
			end = headings[i+1][0]
		}
		body = text[h[1]:end]
	}
	if body == "" {
		return nil, fmt.Errorf("%s: no section ## [%s]", path, version)
	}
	var out []artifactHubChange
	kind := ""
	for line := range strings.SplitSeq(body, "\n") {
		switch {
		case subsectionHeading.MatchString(line):
			heading := subsectionHeading.FindStringSubmatch(line)[1]
			k, ok := changeKinds[heading]
			if !ok {
				return nil, fmt.Errorf("%s: section %s: unknown heading %q (want one of Keep a Changelog's, or Upgrade actions)", path, version, heading)
			}
			kind = k
			if heading == "Upgrade actions" {
				kind = "upgrade"
			}
		case strings.HasPrefix(line, "- "):
			if kind == "" {
				return nil, fmt.Errorf("%s: section %s: an item before any ### heading", path, version)
			}
			out = append(out, artifactHubChange{Kind: kind, Description: strings.TrimPrefix(line, "- ")})
		case strings.HasPrefix(line, "  ") && len(out) > 0 && strings.TrimSpace(line) != "":
			out[len(out)-1].Description += " " + strings.TrimSpace(line)
		}
	}
	for i, c := range out {
		if c.Kind == "upgrade" {
			out[i] = artifactHubChange{Kind: "changed", Description: "Upgrade action: " + c.Description}
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%s: section %s lists no change", path, version)
	}
	return out, nil
}

// appendChangesAnnotation appends artifacthub.io/changes to Chart.yaml, whose annotations map is
// its last key (hack/chartgen writes it so).
func appendChangesAnnotation(path string, changes []artifactHubChange) error {
	b, err := os.ReadFile(path) //nolint:gosec // G304: a file of the release
	if err != nil {
		return err
	}
	list, err := yaml.Marshal(changes)
	if err != nil {
		return err
	}
	entry, err := yaml.Marshal(map[string]string{"artifacthub.io/changes": string(list)})
	if err != nil {
		return err
	}
	var w strings.Builder
	w.Write(b)
	for line := range strings.SplitSeq(strings.TrimSuffix(string(entry), "\n"), "\n") {
		w.WriteString("  " + line + "\n")
	}
	return os.WriteFile(path, []byte(w.String()), 0o644) //nolint:gosec // G306: a file of the release
}

// notesCmd prints the section of -version of CHANGELOG.md, without its heading: the GitHub
// release's notes.
func notesCmd(args []string) error {
	fs := flag.NewFlagSet("notes", flag.ContinueOnError)
	file := fs.String("file", "../../CHANGELOG.md", "the changelog")
	version := fs.String("version", "", "the version released, without v")
	if err := fs.Parse(args); err != nil {
		return err
	}
	b, err := os.ReadFile(*file)
	if err != nil {
		return err
	}
	text := string(b)
	headings := sectionHeading.FindAllStringSubmatchIndex(text, -1)
	for i, h := range headings {
		if text[h[2]:h[3]] != *version {
			continue
		}
		end := len(text)
		if i+1 < len(headings) {
			end = headings[i+1][0]
		}
		// The heading line ends with the date; the body starts on the next line.
		body := text[h[1]:end]
		if j := strings.Index(body, "\n"); j >= 0 {
			body = body[j+1:]
		}
		// The compare links at the end of the file are not part of the last section.
		if k := strings.Index(body, "\n[Unreleased]: "); k >= 0 {
			body = body[:k]
		}
		fmt.Println(strings.TrimSpace(body))
		return nil
	}
	return fmt.Errorf("%s: no section ## [%s]", *file, *version)
}
