package gitops

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"

	"github.com/go-git/go-git/v5"

	. "github.com/onsi/gomega"
)

// ownedChange is a change of owner "<ns>/<name>" (uid "uid-<ns>-<name>") at p.
func ownedChange(ns, name, p string, files map[string]string) Change {
	c := Change{AppKey: ns + "/" + name, Path: p, Owner: Owner{ID: "uid-" + ns + "-" + name, Name: ns + "/" + name}, Files: map[string][]byte{}}
	for n, content := range files {
		c.Files[n] = []byte(content)
	}
	return c
}

func TestOwnerFileMarksTheFolder(t *testing.T) {
	g := NewWithT(t)
	repo := testRepo(newServer(t))
	w := newTestWriter(t)
	apply(t, w, repo, ownedChange("cs-a", "web", "apps/cs-a/web", map[string]string{"d.yaml": "x"}))
	g.Expect(readRemote(t, repo, nil).markers(t)).To(Equal(map[string]string{
		"apps/cs-a/web": "# Written by the KubeOpera App Controller: this folder belongs to one KubeOperaApp.\n" +
			"# An app whose folder equals, contains or lies inside this one is refused (PathConflict).\n" +
			"# Deleting the app removes the files listed here, and nothing else.\n" +
			"app: cs-a/web\nuid: uid-cs-a-web\nfiles:\n- \"d.yaml\"\n",
	}))
	// The marker is part of the content: an unchanged app commits nothing.
	res := apply(t, w, repo, ownedChange("cs-a", "web", "apps/cs-a/web", map[string]string{"d.yaml": "x"}))
	g.Expect(res.Changed).To(BeFalse())
	g.Expect(readRemote(t, repo, nil).commitCount(t)).To(Equal(1))
}

func TestPathConflicts(t *testing.T) {
	const ownerPath = "apps/shared/web"
	for name, tc := range map[string]struct{ ns, path, relation string }{
		"equal, same namespace":   {"cs-a", ownerPath, "is the folder"},
		"equal, other namespace":  {"cs-b", ownerPath, "is the folder"},
		"nested, same namespace":  {"cs-a", ownerPath + "/inner", "lies inside the folder"},
		"nested, other namespace": {"cs-b", ownerPath + "/inner", "lies inside the folder"},
		"parent, same namespace":  {"cs-a", "apps/shared", "contains the folder"},
		"parent, other namespace": {"cs-b", "apps", "contains the folder"},
	} {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			repo := testRepo(newServer(t))
			w := newTestWriter(t)
			apply(t, w, repo, ownedChange("cs-a", "web", ownerPath, map[string]string{"d.yaml": "owner"}))
			before := readRemote(t, repo, nil)
			want := before.allFiles(t)

			_, err := w.Apply(context.Background(), repo, ownedChange(tc.ns, "intruder", tc.path, map[string]string{"d.yaml": "intruder"}))
			g.Expect(err).To(MatchError(ErrPathConflict))
			g.Expect(err.Error()).To(ContainSubstring(tc.relation))
			g.Expect(err.Error()).To(ContainSubstring("cs-a/web (uid uid-cs-a-web)"))
			// Deleting the intruder's folder is refused too.
			del := ownedChange(tc.ns, "intruder", tc.path, nil)
			del.Delete = true
			_, err = w.Apply(context.Background(), repo, del)
			g.Expect(err).To(MatchError(ErrPathConflict))

			after := readRemote(t, repo, nil)
			g.Expect(after.head.Hash).To(Equal(before.head.Hash), "nothing was committed")
			g.Expect(after.allFiles(t)).To(Equal(want), "the owner's files are byte-identical")
			// The owner still writes and deletes its folder.
			apply(t, w, repo, ownedChange("cs-a", "web", ownerPath, map[string]string{"d.yaml": "owner v2"}))
			g.Expect(readRemote(t, repo, nil).files(t)).To(Equal(map[string]string{ownerPath + "/d.yaml": "owner v2"}))
		})
	}
}

func TestPathConflictInOneBatchFirstComeFirstServed(t *testing.T) {
	g := NewWithT(t)
	repo := testRepo(newServer(t))
	gate := holdFirstPushUntilQueued(3)
	w := newTestWriter(t, gate.options()...)
	// The first change is pushed alone (the gate holds it); the two others arrive while it is
	// in flight and form one batch, in arrival order.
	first := make(chan error, 1)
	go func() {
		_, err := w.Apply(context.Background(), repo, ownedChange("cs-x", "first", "apps/first", map[string]string{"a": "1"}))
		first <- err
	}()
	g.Eventually(gate.queued.Load).Should(BeEquivalentTo(1))
	owner := make(chan error, 1)
	go func() {
		_, err := w.Apply(context.Background(), repo, ownedChange("cs-a", "web", "apps/web", map[string]string{"a": "owner"}))
		owner <- err
	}()
	g.Eventually(gate.queued.Load).Should(BeEquivalentTo(2))
	_, err := w.Apply(context.Background(), repo, ownedChange("cs-b", "web", "apps/web", map[string]string{"a": "intruder"}))
	g.Expect(err).To(MatchError(ErrPathConflict), "the later of two owners in one batch is refused, not told it succeeded")
	g.Expect(<-first).To(Succeed())
	g.Expect(<-owner).To(Succeed())
	g.Expect(readRemote(t, repo, nil).files(t)).To(HaveKeyWithValue("apps/web/a", "owner"))
}

// Ownership is by UID, never by name: an app of the same namespace and name with another UID (a
// recreated app, or one of another host cluster writing to the same repository) is refused, and
// takes the folder over only when it adopts exactly that UID.
func TestFolderOfAnotherUIDIsTakenOverOnlyWhenAdopted(t *testing.T) {
	g := NewWithT(t)
	repo := testRepo(newServer(t))
	w := newTestWriter(t)
	first := ownedChange("cs-a", "web", "apps/web", map[string]string{"a": "old"})
	apply(t, w, repo, first)
	again := ownedChange("cs-a", "web", "apps/web", map[string]string{"a": "new"})
	again.Owner.ID = "uid-recreated"

	_, err := w.Apply(context.Background(), repo, again)
	g.Expect(err).To(MatchError(ErrPathConflict))
	var conflict *ConflictError
	g.Expect(errors.As(err, &conflict)).To(BeTrue())
	g.Expect(conflict.Owner).To(Equal(first.Owner))

	again.Owner.Adopts = "uid-of-someone-else"
	_, err = w.Apply(context.Background(), repo, again)
	g.Expect(err).To(MatchError(ErrPathConflict), "adopting another UID than the marker's")
	g.Expect(readRemote(t, repo, nil).files(t)).To(HaveKeyWithValue("apps/web/a", "old"))

	again.Owner.Adopts = first.Owner.ID
	apply(t, w, repo, again)
	g.Expect(readRemote(t, repo, nil).markers(t)["apps/web"]).To(ContainSubstring("uid: uid-recreated"))
	g.Expect(readRemote(t, repo, nil).files(t)).To(HaveKeyWithValue("apps/web/a", "new"))
}

// A path that holds content without the owner's marker is refused, and
// nothing is pushed. Each case is content no app wrote: a README at the path, a folder a person
// wrote, a Flux bootstrap folder.
func TestUnmarkedContentIsNeverTakenOver(t *testing.T) {
	for name, tc := range map[string]struct{ outside map[string]string }{
		"file at the path":         {map[string]string{"apps/web": "a file, not a folder"}},
		"folder a person wrote":    {map[string]string{"apps/web/README.md": "hand-written"}},
		"flux bootstrap folder":    {map[string]string{"apps/web/flux-system/gotk-sync.yaml": "kind: Kustomization"}},
		"legacy folder, no marker": {map[string]string{"apps/web/deployment.yaml": "kind: Deployment"}},
	} {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			repo := testRepo(newServer(t))
			var pushes atomic.Int32
			w := newTestWriter(t, WithBeforePush(func() { pushes.Add(1) }))
			apply(t, w, repo, ownedChange("cs-a", "seed", "apps/seed", map[string]string{"d.yaml": "seed"}))
			for f, content := range tc.outside {
				_, err := outsideCommit(repo, false, writeFile(f, content))
				g.Expect(err).NotTo(HaveOccurred())
			}
			before := readRemote(t, repo, nil)
			want := before.allFiles(t)
			pushes.Store(0)

			_, err := w.Apply(context.Background(), repo, ownedChange("cs-a", "web", "apps/web", map[string]string{"d.yaml": "new"}))
			g.Expect(err).To(MatchError(ErrFolderNotOwned))
			g.Expect(err.Error()).To(ContainSubstring(`"apps/web"`))
			// Deleting it is no error and removes nothing: it was never the app's.
			del := ownedChange("cs-a", "web", "apps/web", nil)
			del.Delete = true
			res, err := w.Apply(context.Background(), repo, del)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(res.Changed).To(BeFalse())

			g.Expect(pushes.Load()).To(BeZero(), "nothing was pushed")
			after := readRemote(t, repo, nil)
			g.Expect(after.head.Hash).To(Equal(before.head.Hash))
			g.Expect(after.allFiles(t)).To(Equal(want))
		})
	}
}

// Deletion removes the files the app wrote (listed in its marker), not what
// someone else put in its folder.
func TestDeleteRemovesOnlyWhatTheAppWrote(t *testing.T) {
	g := NewWithT(t)
	repo := testRepo(newServer(t))
	w := newTestWriter(t)
	apply(t, w, repo, ownedChange("cs-a", "web", "apps/web", map[string]string{"d.yaml": "x", "sub/s.yaml": "y"}))
	_, err := outsideCommit(repo, false, writeFile("apps/web/NOTES.md", "a person's notes"))
	g.Expect(err).NotTo(HaveOccurred())
	_, err = outsideCommit(repo, false, writeFile("apps/web/sub/extra.yaml", "someone else's"))
	g.Expect(err).NotTo(HaveOccurred())

	del := ownedChange("cs-a", "web", "apps/web", nil)
	del.Delete = true
	res := apply(t, w, repo, del)
	g.Expect(res.Changed).To(BeTrue())
	g.Expect(readRemote(t, repo, nil).allFiles(t)).To(Equal(map[string]string{
		"apps/web/NOTES.md":       "a person's notes",
		"apps/web/sub/extra.yaml": "someone else's",
	}))
	// Deleting again changes nothing: the rest is not the app's.
	res = apply(t, w, repo, del)
	g.Expect(res.Changed).To(BeFalse())
}

// A marker written before markers listed their files: the delete removes the folder, as
// deletes did when that marker was written.
func TestDeleteWithALegacyMarkerRemovesTheFolder(t *testing.T) {
	g := NewWithT(t)
	repo := testRepo(newServer(t))
	w := newTestWriter(t)
	apply(t, w, repo, ownedChange("cs-a", "seed", "apps/seed", map[string]string{"d.yaml": "seed"}))
	_, err := outsideCommit(repo, false, func(r *git.Repository, wt *git.Worktree) error {
		if err := writeFile("apps/web/d.yaml", "x")(r, wt); err != nil {
			return err
		}
		return writeFile("apps/web/"+OwnerFile, "app: cs-a/web\nuid: uid-cs-a-web\n")(r, wt)
	})
	g.Expect(err).NotTo(HaveOccurred())
	del := ownedChange("cs-a", "web", "apps/web", nil)
	del.Delete = true
	g.Expect(apply(t, w, repo, del).Changed).To(BeTrue())
	g.Expect(readRemote(t, repo, nil).allFiles(t)).NotTo(HaveKey(HavePrefix("apps/web/")))
}

// Dot-folders belong to the repository's tooling.
func TestDotFoldersAreReserved(t *testing.T) {
	for _, p := range []string{".github", ".github/workflows", "apps/.flux", ".kubeopera/web"} {
		t.Run(p, func(t *testing.T) {
			g := NewWithT(t)
			repo := testRepo(newServer(t))
			var pushes atomic.Int32
			w := newTestWriter(t, WithBeforePush(func() { pushes.Add(1) }))
			_, err := w.Apply(context.Background(), repo, ownedChange("cs-a", "web", p, map[string]string{"d.yaml": "x"}))
			g.Expect(err).To(MatchError(ErrInvalidPath))
			g.Expect(err.Error()).To(ContainSubstring("reserved"))
			g.Expect(pushes.Load()).To(BeZero(), "nothing was pushed")
		})
	}
}
