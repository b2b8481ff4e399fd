package gitops

import (
	"errors"
	"fmt"
	"io"
	"path"
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
	// Name is the application's "<namespace>/<name>". A folder whose marker has the same Name
	// but another ID belonged to an earlier application of that name, which cannot exist at the
	// same time as this one: the folder is taken over.
	Name string `json:"app"`
}

func (o Owner) String() string { return fmt.Sprintf("%s (uid %s)", o.Name, o.ID) }

// same reports whether a folder marked with o may be written by other.
func (o Owner) same(other Owner) bool { return o.ID == other.ID || o.Name == other.Name }

func (o Owner) validate() error {
	if o.ID == "" || o.Name == "" || strings.ContainsAny(o.ID+o.Name, "\n\r") {
		return fmt.Errorf("%w: owner needs a one-line ID and Name", ErrInvalidChange)
	}
	return nil
}

// marker is the content of OwnerFile: deterministic, so an unchanged owner never changes a
// folder.
func (o Owner) marker() []byte {
	return []byte("# Written by the KubeOpera App Controller: this folder belongs to one KubeOperaApp.\n" +
		"# An app whose folder equals, contains or lies inside this one is refused (PathConflict).\n" +
		"app: " + o.Name + "\n" +
		"uid: " + o.ID + "\n")
}

func parseMarker(content []byte) (Owner, error) {
	var o Owner
	if err := yaml.Unmarshal(content, &o); err != nil {
		return Owner{}, err
	}
	if o.ID == "" {
		return Owner{}, errors.New("no uid")
	}
	return o, nil
}

// owners maps each marked folder of a tree to its owner.
type owners map[string]Owner

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
		o, err := parseMarker([]byte(content))
		if err != nil {
			o = Owner{ID: "<unreadable " + OwnerFile + ">", Name: "<unknown>"}
		}
		out[dir] = o
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
	return fmt.Errorf("%w: folder %q %s %q of %s", ErrPathConflict, p, relation, dir, os[dir])
}

// isUnder reports whether p lies strictly inside dir.
func isUnder(p, dir string) bool { return strings.HasPrefix(p, dir+"/") }
