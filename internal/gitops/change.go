package gitops

import (
	"fmt"
	"net/url"
	"path"
	"sort"
	"strings"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/transport"
)

// DefaultBranch is used when Repo.Branch is empty.
const DefaultBranch = "main"

// Repo names the branch of a remote repository that changes are written to.
// One local clone and one queue exist per (URL, Branch).
type Repo struct {
	// URL of the remote: https://, http:// or ssh://. It must not carry a
	// password; credentials go in Auth.
	URL string
	// Branch to commit to; DefaultBranch when empty. It is created with the
	// first commit when the remote has no branch at all; a remote that has
	// other branches refuses a change that does not set Change.CreateBranch
	// (ErrBranchNotFound).
	Branch string
	// Auth for fetch and push; the zero value is anonymous.
	Auth Auth
}

// Change is the desired content of one application's folder.
type Change struct {
	// AppKey identifies the application in commit messages, e.g. "ns/name".
	AppKey string
	// Path of the folder relative to the repository root, e.g.
	// "apps/ns/app". It must be clean ("a/b", not "./a/b/" or "a//b").
	Path string
	// Files maps file names, relative to Path (subfolders allowed), to their
	// content. The folder is replaced by exactly these files: files that are
	// in the folder but not in Files are removed. Files are written with mode
	// 0644.
	Files map[string][]byte
	// Owner is the application the folder belongs to (required). The Writer records it in
	// the folder's OwnerFile and refuses (ErrPathConflict) a change whose folder equals,
	// contains or lies inside a folder of another owner; a Delete is refused the same way,
	// so deleting one app never removes another's files.
	Owner Owner
	// Delete removes what the owner wrote in the folder instead; Files must then be empty.
	// Only the files the folder's OwnerFile lists (the files of the owner's last write) and
	// the marker itself are removed: a file someone else added stays. A folder without the
	// owner's marker is left alone (Result.Changed false). A marker written before markers
	// listed their files removes the whole folder, as deletes did then.
	Delete bool
	// CreateBranch allows the change to create the branch when the repository has other
	// branches but not this one; without it such a change fails with ErrBranchNotFound.
	// An empty repository gets its first branch either way; a Delete never creates one.
	CreateBranch bool
	// only is set by the batch for a Delete: the files to remove (nil: the whole folder).
	only []string
	// Message is the commit message for this change. When the change is
	// committed together with others, its first line is listed in the
	// combined message. Empty means "kubeopera: update <AppKey>" (or delete).
	Message string
	// Trailers are Git trailer lines ("Key: value") that identify the change in
	// the commit, kept whole in a batched commit too: the commit's last
	// paragraph holds every change's trailers, so each app's line survives
	// batching (git interpret-trailers and `git log --format=%(trailers)` read
	// them).
	Trailers []string
}

// maxTrailerLength bounds one trailer line.
const maxTrailerLength = 1024

// validTrailer reports whether t is one Git trailer line: a token of letters, digits and
// hyphens, ": ", and a value without line breaks.
func validTrailer(t string) bool {
	key, value, ok := strings.Cut(t, ": ")
	if !ok || key == "" || value == "" || len(t) > maxTrailerLength || strings.ContainsAny(t, "\r\n\x00") {
		return false
	}
	for i, r := range key {
		letter := r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z'
		later := i > 0 && (r == '-' || r >= '0' && r <= '9')
		if !letter && !later {
			return false
		}
	}
	return true
}

// Result is the outcome of Apply.
type Result struct {
	// Commit is the SHA of the branch head after the write: the commit that
	// contains the change, or the current head when the change produced no
	// diff. It is empty only when the branch does not exist and nothing was
	// written (deleting a folder from an empty remote).
	Commit string
	// Changed reports whether this change altered the branch. It is false
	// when the files were already byte-identical to the branch (or the
	// folder to delete was absent): no commit is made for such a change.
	Changed bool
	// Created reports that the change wrote a folder the branch did not hold before (no
	// ownership marker there): the folder's first commit. A Result that is not Changed is never
	// Created.
	Created bool
}

// branch returns the branch to write to.
func (r Repo) branch() string {
	if r.Branch == "" {
		return DefaultBranch
	}
	return r.Branch
}

// validate checks the repository coordinates. Error messages never contain
// the raw URL because it may embed a password.
func (r Repo) validate() error {
	ep, err := transport.NewEndpoint(r.URL)
	if err != nil || r.URL == "" {
		return fmt.Errorf("%w: repository URL %q cannot be parsed", ErrInvalidChange, redactURL(r.URL))
	}
	switch ep.Protocol {
	case "https", "http", "ssh":
	default:
		return fmt.Errorf("%w: repository URL %q: scheme %q is not supported (use https, http or ssh)",
			ErrInvalidChange, redactURL(r.URL), ep.Protocol)
	}
	if ep.Protocol == "ssh" && r.Auth.method == nil {
		// Without our auth go-git would fall back to the SSH agent and the
		// process's known_hosts files.
		return fmt.Errorf("%w: ssh repositories need an identity and known_hosts (AuthFromSecretData)", ErrInvalidAuth)
	}
	if ep.Password != "" {
		return fmt.Errorf("%w: repository URL %q embeds a password; put credentials in the Secret",
			ErrInvalidChange, redactURL(r.URL))
	}
	if err := plumbing.NewBranchReferenceName(r.branch()).Validate(); err != nil {
		return fmt.Errorf("%w: branch %q: %w", ErrInvalidChange, r.branch(), err)
	}
	return nil
}

// validate checks a change before it is queued, so a bad change fails alone
// and never poisons the batch it would have joined.
func (c Change) validate() error {
	if c.AppKey == "" {
		return fmt.Errorf("%w: AppKey is empty", ErrInvalidChange)
	}
	if err := validateFolder(c.Path); err != nil {
		return fmt.Errorf("app %s: folder: %w", c.AppKey, err)
	}
	if err := c.Owner.validate(); err != nil {
		return fmt.Errorf("app %s: %w", c.AppKey, err)
	}
	if _, reserved := c.Files[OwnerFile]; reserved {
		return fmt.Errorf("%w: app %s: %s is written by the Writer", ErrInvalidChange, c.AppKey, OwnerFile)
	}
	for _, t := range c.Trailers {
		if !validTrailer(t) {
			return fmt.Errorf("%w: app %s: %q is not a Git trailer line", ErrInvalidChange, c.AppKey, t)
		}
	}
	if c.Delete && len(c.Files) > 0 {
		return fmt.Errorf("%w: app %s: Delete with %d files", ErrInvalidChange, c.AppKey, len(c.Files))
	}
	if !c.Delete && len(c.Files) == 0 {
		// An empty folder cannot exist in Git; refusing it keeps a renderer
		// bug from silently deleting an application.
		return fmt.Errorf("%w: app %s: no files (set Delete to remove the folder)", ErrInvalidChange, c.AppKey)
	}
	for name := range c.Files {
		if err := validatePath(name); err != nil {
			return fmt.Errorf("app %s: file: %w", c.AppKey, err)
		}
		for dir := path.Dir(name); dir != "."; dir = path.Dir(dir) {
			if _, clash := c.Files[dir]; clash {
				return fmt.Errorf("%w: app %s: %q is both a file and the folder of %q", ErrInvalidPath, c.AppKey, dir, name)
			}
		}
	}
	return nil
}

// validatePath accepts a clean, relative, slash-separated path that does not
// leave the repository and does not touch any ".git" directory.
func validatePath(p string) error {
	switch {
	case p == "":
		return fmt.Errorf("%w: empty", ErrInvalidPath)
	case strings.ContainsAny(p, "\\\x00"):
		return fmt.Errorf("%w: %q contains a backslash or NUL", ErrInvalidPath, p)
	case path.IsAbs(p):
		return fmt.Errorf("%w: %q is absolute", ErrInvalidPath, p)
	case p == ".":
		return fmt.Errorf("%w: %q is the repository root", ErrInvalidPath, p)
	case path.Clean(p) != p:
		return fmt.Errorf("%w: %q is not clean (want %q)", ErrInvalidPath, p, path.Clean(p))
	}
	for _, seg := range strings.Split(p, "/") {
		if seg == ".." {
			return fmt.Errorf("%w: %q leaves the repository", ErrInvalidPath, p)
		}
		if strings.EqualFold(seg, ".git") {
			return fmt.Errorf("%w: %q is inside .git", ErrInvalidPath, p)
		}
	}
	return nil
}

// validateFolder is validatePath for an application's folder, which also must not be or lie
// in a dot-folder (".github", ".flux", ".gitea"): those belong to the repository's tooling.
func validateFolder(p string) error {
	if err := validatePath(p); err != nil {
		return err
	}
	for _, seg := range strings.Split(p, "/") {
		if strings.HasPrefix(seg, ".") {
			return fmt.Errorf("%w: %q is in the dot-folder %q, reserved for the repository's tooling", ErrInvalidPath, p, seg)
		}
	}
	return nil
}

// redactURL hides the password of a URL for messages.
func redactURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		// Unparsable: show nothing of it rather than risk a credential.
		return "<unparsable URL>"
	}
	return u.Redacted()
}

// fileNames are the names of the files the change writes, OwnerFile excluded, sorted.
func (c Change) fileNames() []string {
	names := make([]string, 0, len(c.Files))
	for n := range c.Files {
		if n != OwnerFile {
			names = append(names, n)
		}
	}
	sort.Strings(names)
	return names
}

// message returns the commit message for this change alone.
func (c Change) message() string {
	if m := strings.TrimSpace(c.Message); m != "" {
		return m
	}
	verb := "update"
	if c.Delete {
		verb = "delete"
	}
	return fmt.Sprintf("kubeopera: %s %s", verb, c.AppKey)
}
