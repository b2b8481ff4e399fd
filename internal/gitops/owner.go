package gitops

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"path"
	"slices"
	"sort"
	"strings"

	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/object"
	"sigs.k8s.io/yaml"
)

// OwnerFile is the ownership marker the Writer keeps in every folder it writes. It names the
// application the folder belongs to, so ownership lives in the repository itself: it survives
// restarts of the operator, is shared by every operator writing to the repository, and a person
// reading the repository sees who owns what. It is not a Kubernetes manifest; the folder's
// kustomization.yaml does not list it, so Flux never applies it.
const OwnerFile = ".kubeopera-owner.yaml"

// Owner identifies the application a folder belongs to.
type Owner struct {
	// ID is unique and stable for the application's lifetime (the KubeOperaApp's UID).
	ID string `json:"uid"`
	// Name is the application's "<namespace>/<name>", for people reading the marker. It grants
	// nothing: a marker of the same Name with another ID may be an application of the same
	// namespace and name on another host cluster writing to the same repository.
	Name string `json:"app"`
	// Adopts is the ID of an earlier application of the same Name whose folders this one may take
	// over (a recreated application whose folder was left behind); "" for none. Never written
	// into a marker.
	Adopts string `json:"-"`
}

func (o Owner) String() string { return fmt.Sprintf("%s (uid %s)", o.Name, o.ID) }

// same reports whether a folder marked with o may be written by other: other is o, or adopts o
// by its ID and has its Name. Ownership is by ID, never by Name alone.
func (o Owner) same(other Owner) bool {
	return o.ID == other.ID || (other.Adopts != "" && other.Adopts == o.ID && other.Name == o.Name)
}

func (o Owner) validate() error {
	if o.ID == "" || o.Name == "" || strings.ContainsAny(o.ID+o.Name, "\n\r") {
		return fmt.Errorf("%w: owner needs a one-line ID and Name", ErrInvalidChange)
	}
	return nil
}

// marker is the content of OwnerFile: the owner and the files the owner wrote in the folder
// (names relative to the folder, sorted), so that a delete removes exactly those. Deterministic,
// so an unchanged owner never changes a folder.
func (o Owner) marker(files []string) []byte {
	var b strings.Builder
	b.WriteString("# Written by the KubeOpera App Controller: this folder belongs to one KubeOperaApp.\n" +
		"# An app whose folder equals, contains or lies inside this one is refused (PathConflict).\n" +
		"# Deleting the app removes the files listed here, and nothing else.\n" +
		"app: " + o.Name + "\n" +
		"uid: " + o.ID + "\n" +
		"files:\n")
	sorted := slices.Clone(files)
	slices.Sort(sorted)
	for _, f := range sorted {
		// JSON quoting is valid YAML and keeps any file name on one line.
		q, _ := json.Marshal(f)
		b.WriteString("- " + string(q) + "\n")
	}
	return []byte(b.String())
}

// mark is what a folder's OwnerFile says: its owner and the files the owner wrote there.
type mark struct {
	Owner
	// Files the owner wrote, relative to the folder; nil for a marker written before markers
	// listed them (see Change.Delete).
	Files []string `json:"files"`
}

func parseMarker(content []byte) (mark, error) {
	var m mark
	if err := yaml.Unmarshal(content, &m); err != nil {
		return mark{}, err
	}
	if m.ID == "" {
		return mark{}, errors.New("no uid")
	}
	return m, nil
}

// owners maps each marked folder of a tree to its marker.
type owners map[string]mark

// readOwners finds every OwnerFile of the tree (nil: no branch yet). A marker that cannot be
// parsed still marks its folder as owned, by an unknown owner nobody matches.
func readOwners(t *object.Tree) (owners, error) {
	out := owners{}
	if t == nil {
		return out, nil
	}
	walker := object.NewTreeWalker(t, true, nil)
	defer walker.Close()
	for {
		name, entry, err := walker.Next()
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return nil, fmt.Errorf("walk tree: %w", err)
		}
		if entry.Mode == filemode.Dir || path.Base(name) != OwnerFile {
			continue
		}
		dir := path.Dir(name)
		blob, err := t.File(name)
		if err != nil {
			return nil, fmt.Errorf("read %s: %w", name, err)
		}
		content, err := blob.Contents()
		if err != nil {
			return nil, fmt.Errorf("read %s: %w", name, err)
		}
		m, err := parseMarker([]byte(content))
		if err != nil {
			// Unreadable: owned by nobody this operator knows, and no file of it is deletable.
			m = mark{Owner: Owner{ID: "<unreadable " + OwnerFile + ">", Name: "<unknown>"}, Files: []string{}}
		}
		out[dir] = m
	}
}

// conflict returns the error for a change of owner at folder p that overlaps a folder of
// another owner: the same folder, one that contains p, or one inside p. nil when p is free.
func (os owners) conflict(p string, owner Owner) error {
	var hits []string
	for dir, o := range os {
		if o.same(owner) {
			continue
		}
		if dir == p || isUnder(dir, p) || isUnder(p, dir) {
			hits = append(hits, dir)
		}
	}
	if len(hits) == 0 {
		return nil
	}
	sort.Strings(hits)
	dir := hits[0]
	relation := "is the folder"
	switch {
	case isUnder(p, dir):
		relation = "lies inside the folder"
	case isUnder(dir, p):
		relation = "contains the folder"
	}
	return &ConflictError{Owner: os[dir].Owner, msg: fmt.Sprintf("%s: folder %q %s %q of %s", ErrPathConflict, p, relation, dir, os[dir].Owner)}
}

// isUnder reports whether p lies strictly inside dir.
func isUnder(p, dir string) bool { return strings.HasPrefix(p, dir+"/") }

// ConflictError is ErrPathConflict with the owner of the folder in the way, so a caller can tell
// an earlier application of the same Name (which it may adopt, Owner.Adopts) from another one.
type ConflictError struct {
	Owner Owner
	msg   string
}

func (e *ConflictError) Error() string { return e.msg }

// Unwrap makes errors.Is(err, ErrPathConflict) hold.
func (e *ConflictError) Unwrap() error { return ErrPathConflict }
