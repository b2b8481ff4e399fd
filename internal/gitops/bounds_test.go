package gitops

import (
	"context"
	"crypto/rand"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/fluxcd/pkg/gittestserver"
	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/go-git/go-git/v5/storage/filesystem"
	. "github.com/onsi/gomega"
)

// zeros reads as an endless stream of zero bytes.
type zeros struct{}

func (zeros) Read(p []byte) (int, error) {
	clear(p)
	return len(p), nil
}

// seedZeroBlob makes branch testBranch of the server's repository one commit whose tree holds
// name, a file of size zero bytes. The blob is streamed into the server's object store, so the
// test never holds it in memory or writes it out inflated; it compresses to about a thousandth.
func seedZeroBlob(t testing.TB, srv *gittestserver.GitServer, repoPath, name string, size int64) {
	t.Helper()
	r, err := git.PlainInit(filepath.Join(srv.Root(), repoPath), true)
	if err != nil {
		t.Fatalf("init server repository: %v", err)
	}
	storage := r.Storer.(*filesystem.Storage)
	w, header, err := storage.LazyWriter()
	if err != nil {
		t.Fatal(err)
	}
	if err := header(plumbing.BlobObject, size); err != nil {
		t.Fatal(err)
	}
	if _, err := io.CopyN(w, zeros{}, size); err != nil {
		t.Fatal(err)
	}
	blob := w.(interface{ Hash() plumbing.Hash }).Hash()
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	store := func(o interface {
		Encode(plumbing.EncodedObject) error
	}) plumbing.Hash {
		obj := storage.NewEncodedObject()
		if err := o.Encode(obj); err != nil {
			t.Fatal(err)
		}
		h, err := storage.SetEncodedObject(obj)
		if err != nil {
			t.Fatal(err)
		}
		return h
	}
	tree := store(&object.Tree{Entries: []object.TreeEntry{{Name: name, Mode: filemode.Regular, Hash: blob}}})
	sig := object.Signature{Name: "someone", Email: "someone@example.com", When: testTime}
	commit := store(&object.Commit{Author: sig, Committer: sig, Message: "a large file\n", TreeHash: tree})
	branch := plumbing.NewBranchReferenceName(testBranch)
	if err := storage.SetReference(plumbing.NewHashReference(branch, commit)); err != nil {
		t.Fatal(err)
	}
	if err := storage.SetReference(plumbing.NewSymbolicReference(plumbing.HEAD, branch)); err != nil {
		t.Fatal(err)
	}
}

// A branch holding a 256 MiB file of zeros: its pack is a quarter MiB, far under the compressed
// limit, but its objects inflate past the inflated limit. The fetch is stopped while the pack
// arrives, before go-git reads the blob into memory or the checkout writes it to disk: the
// process allocates a fraction of the file's size, and the cache keeps nothing.
func TestACompressibleLargeFileIsStoppedBeforeItIsInMemoryOrOnDisk(t *testing.T) {
	g := NewWithT(t)
	srv := newServer(t)
	const fileSize, limit = 256 << 20, 8 << 20
	seedZeroBlob(t, srv, "org/apps.git", "huge.bin", fileSize)
	cache := t.TempDir()
	w := NewWriter(cache, WithMaxRepositorySize(64<<20), WithMaxInflatedSize(limit))

	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	_, err := w.Apply(context.Background(), testRepo(srv), appChange("web", map[string]string{"a.yaml": "x"}))
	runtime.ReadMemStats(&after)
	g.Expect(err).To(MatchError(ErrRepositoryTooLarge))
	g.Expect(err.Error()).To(ContainSubstring(fmt.Sprintf("inflated %d bytes", limit)))
	allocated := after.TotalAlloc - before.TotalAlloc
	t.Logf("allocated %d bytes while refusing a %d-byte file", allocated, fileSize)
	g.Expect(allocated).To(BeNumerically("<", fileSize/4), "the file was read into memory")
	entries, err := os.ReadDir(cache)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(entries).To(BeEmpty(), "no clone (and no checked-out file) is left")
}

// The tree check reads the files' sizes from the object headers and stops at the first file that
// takes the sum over the limit. (A depth-1 fetch brings the whole tree again, so in a Writer the
// fetch's inflation count refuses such a tree first; the check is what guards the checkout.)
func TestTreeFilesSizeStopsAtTheLimit(t *testing.T) {
	g := NewWithT(t)
	srv := newServer(t)
	repo := testRepo(srv)
	cache := t.TempDir()
	w := NewWriter(cache)
	apply(t, w, repo, appChange("web", map[string]string{"a.bin": strings.Repeat("a", 600<<10), "b.bin": strings.Repeat("b", 600<<10)}))
	clone, err := openClone(filepath.Join(cache, cloneDirName(repo.URL, testBranch)))
	g.Expect(err).NotTo(HaveOccurred())
	head := plumbing.NewHash(remoteHeadOf(t, repo))

	size, err := treeFilesSize(clone, head, 0)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(size).To(BeNumerically(">", 1200<<10))
	g.Expect(size).To(BeNumerically("<", 1201<<10), "the files and the ownership marker")
	_, err = treeFilesSize(clone, head, 1<<20)
	g.Expect(err).To(MatchError(ErrRepositoryTooLarge))
	g.Expect(err.Error()).To(ContainSubstring("are larger than 1048576 bytes (at apps/ns/web/b.bin)"))
}

// A delta that declares a result over the limit is refused by its declared size; a whole object by
// the bytes it inflates to.
func TestInflateCounter(t *testing.T) {
	g := NewWithT(t)
	whole := &inflateCounter{left: 10}
	_, err := whole.Write([]byte("0123456789"))
	g.Expect(err).NotTo(HaveOccurred())
	_, err = whole.Write([]byte("a"))
	g.Expect(err).To(MatchError(ErrRepositoryTooLarge))

	// Base size 5, result size 300 (0xac 0x02), then instructions.
	delta := &inflateCounter{left: 299, delta: true}
	_, err = delta.Write([]byte{0x05, 0xac})
	g.Expect(err).NotTo(HaveOccurred(), "the result size is not complete yet")
	_, err = delta.Write([]byte{0x02, 0x90, 0x01})
	g.Expect(err).To(MatchError(ErrRepositoryTooLarge))
	small := &inflateCounter{left: 300, delta: true}
	_, err = small.Write([]byte{0x05, 0xac, 0x02, 0x90})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(small.counted).To(Equal(int64(300)))
}

// fetchGate holds every fetch (upload-pack request) of the server until the test lets it go, and
// records how many were held at once.
type fetchGate struct {
	release chan struct{}
	mu      sync.Mutex
	held    int
	most    int
}

func (f *fetchGate) middleware(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost || !strings.HasSuffix(r.URL.Path, "/git-upload-pack") {
			next.ServeHTTP(w, r)
			return
		}
		f.mu.Lock()
		f.held++
		f.most = max(f.most, f.held)
		f.mu.Unlock()
		<-f.release
		f.mu.Lock()
		f.held--
		f.mu.Unlock()
		next.ServeHTTP(w, r)
	})
}

func (f *fetchGate) counts() (held, most int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.held, f.most
}

// Five branches with a change each and room for two batches at once: two fetches reach the
// server, the other three batches wait for a slot (not for the server), and every change is
// written once slots free up.
func TestConcurrentOperationsAreBounded(t *testing.T) {
	g := NewWithT(t)
	gate := &fetchGate{release: make(chan struct{})}
	srv := newServer(t, func(s *gittestserver.GitServer) { s.AddHTTPMiddlewares(gate.middleware) })
	// Runs before the server stops: a failed test leaves no fetch held.
	t.Cleanup(func() { close(gate.release) })
	repos := make([]Repo, 5)
	for i := range repos {
		repos[i] = Repo{URL: fmt.Sprintf("%s/org/apps-%d.git", srv.HTTPAddress(), i), Branch: testBranch}
		// Seeded first, by another writer: the fetch of an empty repository sends no
		// upload-pack request, so the gate does not hold it.
		apply(t, newTestWriter(t), repos[i], appChange("seed", map[string]string{"a.yaml": "x"}))
	}
	w := newTestWriter(t, WithMaxConcurrentOperations(2))
	var pending []*Pending
	for i, repo := range repos {
		p, err := w.Submit(context.Background(), repo, appChange(fmt.Sprintf("app-%d", i), map[string]string{"a.yaml": "x"}), nil)
		g.Expect(err).NotTo(HaveOccurred())
		pending = append(pending, p)
	}
	g.Eventually(func() []int {
		held, _ := gate.counts()
		return []int{held, int(w.waiting.Load())}
	}, 10*time.Second, 10*time.Millisecond).Should(Equal([]int{2, 3}), "fetches at the server, batches waiting for a slot")

	for range repos {
		gate.release <- struct{}{}
	}
	for _, p := range pending {
		g.Eventually(p.Done(), 10*time.Second).Should(BeClosed())
		_, err := p.Result()
		g.Expect(err).NotTo(HaveOccurred())
	}
	_, most := gate.counts()
	g.Expect(most).To(Equal(2), "fetches at once")
}

// Clones over the cache limit: after each batch the least recently used idle clone is deleted,
// and a directory left by an earlier process goes first. An evicted branch is fetched again.
func TestIdleClonesAreEvictedOverTheCacheLimit(t *testing.T) {
	g := NewWithT(t)
	srv := newServer(t)
	noise := make([]byte, 300<<10)
	_, _ = rand.Read(noise)
	cache := t.TempDir()
	leftover := filepath.Join(cache, "0123456789abcdef0123456789abcdef")
	g.Expect(os.MkdirAll(leftover, 0o700)).To(Succeed())
	g.Expect(os.WriteFile(filepath.Join(leftover, "pack"), append(noise, noise...), 0o600)).To(Succeed())

	// Each clone holds the file once (an object; clones have no worktree): about 300 KiB; the
	// limit holds one clone, not two, and not one beside the leftover.
	w := NewWriter(cache, WithMaxCacheSize(512<<10))
	repo := func(i int) Repo {
		return Repo{URL: fmt.Sprintf("%s/org/apps-%d.git", srv.HTTPAddress(), i), Branch: testBranch}
	}
	cloned := func(i int) bool {
		_, err := os.Stat(filepath.Join(cache, cloneDirName(repo(i).URL, testBranch)))
		return err == nil
	}
	idle := func(i int) func() bool {
		return func() bool {
			w.mu.Lock()
			st := w.repos[cloneDirName(repo(i).URL, testBranch)]
			w.mu.Unlock()
			st.mu.Lock()
			defer st.mu.Unlock()
			return !st.running
		}
	}
	change := appChange("web", map[string]string{"blob.bin": string(noise)})

	// Apply returns once its batch is pushed; the eviction runs after the batch, before the
	// branch's drain goroutine ends: a branch that is idle again has been through it.
	apply(t, w, repo(1), change)
	g.Eventually(idle(1)).Should(BeTrue())
	g.Expect(leftover).NotTo(BeADirectory(), "the earlier process's clone goes first")
	g.Expect(cloned(1)).To(BeTrue())

	apply(t, w, repo(2), change)
	g.Eventually(idle(2)).Should(BeTrue())
	g.Expect(cloned(1)).To(BeFalse(), "the idle clone used least recently is evicted")
	g.Expect(cloned(2)).To(BeTrue(), "the clone just used stays")

	res := apply(t, w, repo(1), appChange("web", map[string]string{"blob.bin": string(noise), "b.yaml": "y"}))
	g.Expect(res.Changed).To(BeTrue(), "the evicted branch is fetched again and written")
	g.Eventually(idle(1)).Should(BeTrue())
	g.Expect(cloned(2)).To(BeFalse())
	g.Expect(w.Repositories()).To(Equal(2), "eviction keeps the branches' queues")
}

// A branch whose files grew past the inflated limit refuses every change that writes files, but
// lets the folders of deleted apps go, in a batch of their own (which may fetch twice the limit)
// or beside refused changes: removing them is how the branch gets smaller.
func TestDeletionsGoThroughABranchOverItsContentLimit(t *testing.T) {
	g := NewWithT(t)
	repo := testRepo(newServer(t))
	const limit = 64 << 10
	seed := newTestWriter(t)
	apply(t, seed, repo, appChange("web", map[string]string{"a.yaml": "web"}))
	apply(t, seed, repo, appChange("api", map[string]string{"a.yaml": "api"}))
	apply(t, seed, repo, appChange("big1", map[string]string{"a.bin": strings.Repeat("1", 40<<10)}))

	// A writer that knows the branch while it is under the limit: the next fetches are small.
	w := newTestWriter(t, WithMaxInflatedSize(limit), WithBatchWindow(300*time.Millisecond))
	apply(t, w, repo, appChange("web", map[string]string{"a.yaml": "web 2"}))
	apply(t, seed, repo, appChange("big2", map[string]string{"a.bin": strings.Repeat("2", 40<<10)}))

	// One batch: api's update is refused, web's folder is removed.
	update, err := w.Submit(context.Background(), repo, appChange("api", map[string]string{"a.yaml": "api 2"}), nil)
	g.Expect(err).NotTo(HaveOccurred())
	remove, err := w.Submit(context.Background(), repo, deleteChange("web"), nil)
	g.Expect(err).NotTo(HaveOccurred())
	<-update.Done()
	<-remove.Done()
	_, err = update.Result()
	g.Expect(err).To(MatchError(ErrRepositoryTooLarge))
	res, err := remove.Result()
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(res.Changed).To(BeTrue())
	files := readRemote(t, repo, nil).files(t)
	g.Expect(files).NotTo(HaveKey("apps/ns/web/a.yaml"))
	g.Expect(files).To(HaveKeyWithValue("apps/ns/api/a.yaml", "api"))

	// A writer with no clone fetches the whole branch (over the limit): a batch of deletions
	// alone may.
	fresh := newTestWriter(t, WithMaxInflatedSize(limit))
	_, err = fresh.Apply(context.Background(), repo, appChange("api", map[string]string{"a.yaml": "api 3"}))
	g.Expect(err).To(MatchError(ErrRepositoryTooLarge))
	res, err = fresh.Apply(context.Background(), repo, deleteChange("api"))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(res.Changed).To(BeTrue())
	g.Expect(readRemote(t, repo, nil).files(t)).NotTo(HaveKey("apps/ns/api/a.yaml"))
}
