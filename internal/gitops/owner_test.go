package gitops

import (
	"context"
	"testing"

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
			"app: cs-a/web\nuid: uid-cs-a-web\n",
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

func TestFolderOfAnEarlierAppOfTheSameNameIsTakenOver(t *testing.T) {
	g := NewWithT(t)
	repo := testRepo(newServer(t))
	w := newTestWriter(t)
	apply(t, w, repo, ownedChange("cs-a", "web", "apps/web", map[string]string{"a": "old"}))
	// Recreated app: same namespace/name, new UID (the old one cannot exist any more).
	again := ownedChange("cs-a", "web", "apps/web", map[string]string{"a": "new"})
	again.Owner.ID = "uid-recreated"
	apply(t, w, repo, again)
	g.Expect(readRemote(t, repo, nil).markers(t)["apps/web"]).To(ContainSubstring("uid: uid-recreated"))
}

func TestUnmarkedFolderIsAdopted(t *testing.T) {
	g := NewWithT(t)
	repo := testRepo(newServer(t))
	w := newTestWriter(t)
	apply(t, w, repo, ownedChange("cs-a", "seed", "apps/seed", map[string]string{"d.yaml": "seed"}))
	// A folder written before ownership markers existed (or by a person).
	_, err := outsideCommit(repo, false, writeFile("apps/legacy/d.yaml", "old"))
	g.Expect(err).NotTo(HaveOccurred())
	apply(t, w, repo, ownedChange("cs-a", "legacy", "apps/legacy", map[string]string{"d.yaml": "new"}))
	rem := readRemote(t, repo, nil)
	g.Expect(rem.files(t)).To(HaveKeyWithValue("apps/legacy/d.yaml", "new"))
	g.Expect(rem.markers(t)).To(HaveKey("apps/legacy"))
}
