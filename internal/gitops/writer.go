package gitops

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/transport"

	"github.com/kubeopera/kubeopera-operator/internal/metrics"
)

// Defaults for the Writer options.
const (
	DefaultAuthorName  = "kubeopera-app-controller"
	DefaultAuthorEmail = "app-controller@kubeopera.io"
	// DefaultMaxBatch bounds how many changes go into one commit.
	DefaultMaxBatch = 100
	// DefaultTimeout bounds one batch: sync, commit and every push attempt.
	DefaultTimeout = 2 * time.Minute
	// DefaultBatchWindow is the batching window the manager uses (--git-batch-window); a
	// Writer without WithBatchWindow has none. docs/benchmarks.md records the measurements it
	// was chosen from.
	DefaultBatchWindow = 200 * time.Millisecond
)

// DefaultBackoff is the retry policy for pushes rejected because the remote
// branch moved: 5 attempts, waiting 100ms, 200ms, 400ms and 800ms between
// them (doubling, capped at 2s).
var DefaultBackoff = Backoff{Initial: 100 * time.Millisecond, Max: 2 * time.Second, Attempts: 5}

// Backoff is the retry policy for non-fast-forward pushes.
type Backoff struct {
	// Initial is the wait before the second attempt; it doubles after each.
	Initial time.Duration
	// Max caps the wait.
	Max time.Duration
	// Attempts is the total number of push attempts, at least 1.
	Attempts int
}

// Clock gives commit timestamps and the age of announced changes (Expect).
// k8s.io/utils/clock.PassiveClock satisfies it.
type Clock interface {
	Now() time.Time
}

type realClock struct{}

func (realClock) Now() time.Time { return time.Now() }

// Option configures a Writer.
type Option func(*options)

type options struct {
	authorName  string
	authorEmail string
	clock       Clock
	backoff     Backoff
	maxBatch    int
	timeout     time.Duration
	beforePush  func()
	// maxRepoSize bounds the clone's object store in bytes (0: no limit).
	maxRepoSize int64
	// maxInflatedSize bounds the inflated objects of one fetch and the checked-out tree in bytes
	// (0: no limit).
	maxInflatedSize int64
	// maxOperations bounds the batches written at once over all branches (0: no limit).
	maxOperations int
	// maxPerHost bounds the batches of one Git server written at once (0: no limit).
	maxPerHost int
	// maxCacheSize bounds the clones kept on disk; idle ones are evicted beyond it (0: no limit).
	maxCacheSize int64
	// onQueued runs after a request joined its repository's queue (tests).
	onQueued func()
	// onExpect and onUnexpect run on every Expect and Unexpect (tests).
	onExpect   func(app string, repo Repo)
	onUnexpect func(app string)
	// batchWindow is how long a batch waits for more changes, per window (0: none; see awaitWindow).
	batchWindow time.Duration
	// after starts the window's timer; time.After unless a test gates it.
	after func(time.Duration) <-chan time.Time
}

// WithAuthor sets the commit author and committer.
func WithAuthor(name, email string) Option {
	return func(o *options) { o.authorName, o.authorEmail = name, email }
}

// WithClock sets the clock used for commit timestamps and to age announced changes.
func WithClock(c Clock) Option {
	return func(o *options) { o.clock = c }
}

// WithBackoff sets the non-fast-forward retry policy.
func WithBackoff(b Backoff) Option {
	return func(o *options) { o.backoff = b }
}

// WithMaxBatch bounds the number of changes in one commit (at least 1).
func WithMaxBatch(n int) Option {
	return func(o *options) { o.maxBatch = n }
}

// WithTimeout bounds the work for one batch, independent of the callers'
// contexts (a batch serves several callers, so none of them may cancel it).
func WithTimeout(d time.Duration) Option {
	return func(o *options) { o.timeout = d }
}

// WithBeforePush registers a hook called before every push attempt, on the
// goroutine doing the write. It exists for tests that need to act while a
// push is pending (block it, or move the remote branch); production code has
// no use for it.
func WithBeforePush(f func()) Option {
	return func(o *options) { o.beforePush = f }
}

// WithMaxRepositorySize bounds what the clone of one branch may hold on
// disk, in bytes: a fetch that would bring more is cut off while the pack
// arrives, fails with ErrRepositoryTooLarge, and the clone is deleted (see
// fetchRemote). Clones are shallow (depth 1), so the bound is on the
// branch's current tree plus the changes fetched since. 0 means no limit.
func WithMaxRepositorySize(bytes int64) Option {
	return func(o *options) { o.maxRepoSize = bytes }
}

// WithMaxInflatedSize bounds, in bytes, what the objects of one branch inflate to: the objects of
// every fetch are counted as they are inflated, and a fetch whose objects would inflate to more is
// stopped before go-git indexes its pack (which holds each object whole in memory), and the
// branch's tree, whose file sizes are read from the object headers, is refused before it is
// checked out when its files together are larger. Either fails with ErrRepositoryTooLarge and
// deletes the clone. WithMaxRepositorySize counts compressed bytes, so a large file that
// compresses well passes it; this bound does not let it pass. 0 means no limit.
func WithMaxInflatedSize(bytes int64) Option {
	return func(o *options) { o.maxInflatedSize = bytes }
}

// WithMaxConcurrentOperations bounds how many batches (fetch, checkout, commit and push of one
// branch) run at once over all branches. The other branches' batches wait for a free slot, their
// queues still open to new changes, so a restart that finds every application pending does not
// fetch every repository at once. 0 means no limit.
func WithMaxConcurrentOperations(n int) Option {
	return func(o *options) { o.maxOperations = n }
}

// WithMaxOperationsPerHost bounds how many of the WithMaxConcurrentOperations slots the
// batches of one Git server (host and port of the repository URL) hold at once. A server that
// answers slowly, or holds every request until the batch's timeout, then keeps at most n slots
// busy, and the branches of other servers still find one: set n below the total. Its batches
// beyond n wait without holding a slot of the total. 0 means no limit of its own.
func WithMaxOperationsPerHost(n int) Option {
	return func(o *options) { o.maxPerHost = n }
}

// WithMaxCacheSize bounds, in bytes, the clones the Writer keeps in its cache directory: after
// every batch, while the clones together are larger, the clone of the branch used least recently
// that is idle (nothing queued, no batch running, no caller waiting) is deleted, and clone
// directories no branch of this Writer uses (left by an earlier process) go first. An evicted
// branch is fetched again on its next change. The running batches may exceed the bound by what
// they fetch and check out (at most WithMaxRepositorySize plus WithMaxInflatedSize each). 0
// means no limit.
func WithMaxCacheSize(bytes int64) Option {
	return func(o *options) { o.maxCacheSize = bytes }
}

// WithOnQueued registers a hook called after every Apply joined its
// repository's queue. Like WithBeforePush it exists for tests, which gate a
// push until a known number of changes wait behind it.
func WithOnQueued(f func()) Option {
	return func(o *options) { o.onQueued = f }
}

// WithOnExpect registers hooks called on every Expect (with the announced branch) and every
// Unexpect (Submit's included), with or without a batching window. Like WithOnQueued they exist
// for tests, which check what a caller announces and withdraws; production code has no use for
// them.
func WithOnExpect(expect func(app string, repo Repo), unexpect func(app string)) Option {
	return func(o *options) { o.onExpect, o.onUnexpect = expect, unexpect }
}

// WithBatchWindow makes a batch wait d before it is written, and d again
// while changes keep arriving (at most maxWindowsPerBatch windows), so that
// changes arriving one after the other (reconciles of many apps of one
// repository) share one commit and one push. A window in which no change
// arrived ends the wait, unless changes to the branch announced with Expect
// are outstanding (then at most maxExpectedWindows windows); a full batch
// (WithMaxBatch) starts at once. 0, the default, adds no wait: only the
// changes queued during a push are grouped.
func WithBatchWindow(d time.Duration) Option {
	return func(o *options) { o.batchWindow = max(d, 0) }
}

// Writer commits and pushes application folders to Git repositories. Create
// one per manager with NewWriter and share it between reconcilers; it is safe
// for concurrent use. See the package documentation for the layout, the
// batching and the retry policy.
type Writer struct {
	cacheDir string
	opts     options

	// slots holds a token per running batch when WithMaxConcurrentOperations is set.
	slots chan struct{}
	// overLimit holds a token while a batch of deletions fetches beyond WithMaxInflatedSize
	// (writeDeletionsOverLimit).
	overLimit chan struct{}
	// hostSlots hold a token per running batch of each Git server when
	// WithMaxOperationsPerHost is set, by hostKey (guarded by hostMu).
	hostMu    sync.Mutex
	hostSlots map[string]chan struct{}
	// waiting counts the queues waiting for a slot (tests).
	waiting atomic.Int32

	mu    sync.Mutex
	repos map[string]*repoState
	// orphans are clone directories of the cache that no state uses, by name, with their size
	// (found by the first eviction pass; guarded by mu).
	orphans        map[string]int64
	orphansScanned bool

	// expected are the announced changes not yet submitted, by app (expect.go).
	expectMu sync.Mutex
	expected map[string]expectation
}

// NewWriter returns a Writer that keeps its clones under cacheDir (created
// on first use, mode 0700). No other Writer or process may use cacheDir.
func NewWriter(cacheDir string, opts ...Option) *Writer {
	o := options{
		authorName:  DefaultAuthorName,
		authorEmail: DefaultAuthorEmail,
		clock:       realClock{},
		backoff:     DefaultBackoff,
		maxBatch:    DefaultMaxBatch,
		timeout:     DefaultTimeout,
		after:       time.After,
	}
	for _, opt := range opts {
		opt(&o)
	}
	o.maxBatch = max(o.maxBatch, 1)
	o.backoff.Attempts = max(o.backoff.Attempts, 1)
	w := &Writer{cacheDir: cacheDir, opts: o, repos: map[string]*repoState{}, overLimit: make(chan struct{}, 1)}
	if o.maxOperations > 0 {
		w.slots = make(chan struct{}, o.maxOperations)
	}
	return w
}

// repoState is the queue and the clone of one (URL, branch).
type repoState struct {
	url string
	// host is the repository's Git server (hostKey).
	host   string
	branch string
	dir    string

	// refs counts the Apply calls holding this state (guarded by Writer.mu),
	// so Release never drops a state a caller is about to queue on.
	refs int
	// released is a Release that found the state busy (guarded by Writer.mu):
	// the state is dropped once it is idle, unless a caller takes it first.
	released bool

	// mu guards pending, running and arrivals.
	mu      sync.Mutex
	pending []*request
	running bool
	// arrivals counts the changes ever queued (superseding ones too): a batching window in
	// which it did not move was quiet.
	arrivals uint64
	// full wakes a drain waiting out the batching window when the queue
	// holds a full batch (capacity 1, never blocks the sender).
	full chan struct{}

	// work is held while the clone is in use (clonelock.go), so Forget never deletes it
	// under a running batch. It also guards owners.
	work cloneLock
	// branchMissing: the last sync found branches on the remote, but not this
	// one (guarded by work). A change creates it only with CreateBranch.
	branchMissing bool
	// owners of the folders at commit ownersBase (a cache: the branch head
	// changes far less often than batches run).
	owners     owners
	ownersBase plumbing.Hash
	// treeBase is the last commit checkTreeSize measured, and treeTooLarge what it found: an
	// ErrRepositoryTooLarge when the commit's files are larger together than
	// WithMaxInflatedSize, nil otherwise (both guarded by work).
	treeBase     plumbing.Hash
	treeTooLarge error
	// deletionsOnly: the running batch only removes folders from a branch over its size limit,
	// and may fetch more (guarded by work; writeDeletionsOverLimit).
	deletionsOnly bool

	// diskBytes is what the clone holds on disk, as measured by its last sync; lastUsed is when
	// its last batch ended (Unix nanoseconds). Both are read by evictIdleClones.
	diskBytes atomic.Int64
	lastUsed  atomic.Int64

	// revisions caches what SameFolder read from the clone (its own lock).
	revisions revisionCache
}

// request is one Apply call waiting for its batch.
type request struct {
	ctx    context.Context
	auth   Auth
	change Change
	done   chan struct{}

	// notify, when set (Submit), runs on the batch goroutine after done is
	// closed; it must not block.
	notify func()
	// superseded are earlier queued changes of the same owner and folder that
	// this one replaced before they were picked up (guarded by repoState.mu
	// until the request is taken); they receive this one's outcome.
	superseded []*request

	// Written by the batch goroutine before done is closed.
	changed, created bool
	result           Result
	err              error
}

// finish hands the outcome to the caller and to the changes it superseded.
func (r *request) finish() {
	close(r.done)
	if r.notify != nil {
		r.notify()
	}
	for _, old := range r.superseded {
		old.changed, old.created, old.result, old.err = r.changed, r.created, r.result, r.err
		old.finish()
	}
}

// Pending is a change submitted with Submit: queued, being written, or done.
type Pending struct {
	req *request
}

// Done is closed once the change is on the remote (or was already there),
// or its batch failed.
func (p *Pending) Done() <-chan struct{} { return p.req.done }

// Result is the outcome of the change, as Apply returns it. It is valid once
// Done is closed; before that it returns ErrPending.
func (p *Pending) Result() (Result, error) {
	select {
	case <-p.req.done:
		return p.req.result, p.req.err
	default:
		return Result{}, ErrPending
	}
}

// Apply writes change to the branch of repo and pushes it, and returns when
// the change is on the remote (or was already there). It is Submit followed
// by a wait for the outcome.
//
// Calls for the same (URL, branch) are serialized; calls that arrive while a
// write is in progress are committed together in the next single commit and
// push, and each gets that commit in its Result. Apply is idempotent: content
// identical to the branch creates no commit. When ctx ends before the change
// was picked up, it is withdrawn; once it is being written (or when it
// replaced an earlier submitted change), it may still be pushed after Apply
// returned ctx's error.
//
// Errors wrap ErrInvalidPath, ErrInvalidChange, ErrInvalidAuth (ssh without
// credentials), ErrAuthFailed or ErrPushConflict when that is the cause;
// others are network or server errors worth retrying later. Error messages
// never contain credentials. Every caller of a batch gets the same Commit;
// Changed is per change.
func (w *Writer) Apply(ctx context.Context, repo Repo, change Change) (Result, error) {
	p, st, err := w.submit(ctx, repo, change, nil)
	if err != nil {
		return Result{}, err
	}
	defer w.unref(st)
	select {
	case <-p.req.done:
		return p.req.result, p.req.err
	case <-ctx.Done():
		if st.withdraw(p.req) {
			return Result{}, fmt.Errorf("wait for git write: %w", ctx.Err())
		}
		return Result{}, fmt.Errorf("wait for git write (the change may still be pushed): %w", ctx.Err())
	}
}

// Submit queues change like Apply but returns at once: the change is written
// in the next batch of its (URL, branch), exactly as Apply's, and notify (if
// not nil) is called when its outcome is known, on the Writer's goroutine
// (it must not block). ctx gives the batch its logger only: a submitted
// change is not withdrawn when ctx ends.
//
// A change of the same owner and folder that is still queued (not yet being
// written) is replaced by this one where it stood in the queue: only the
// newer content is committed, and the earlier change's caller receives this
// one's outcome. Validation errors are returned at once.
func (w *Writer) Submit(ctx context.Context, repo Repo, change Change, notify func()) (*Pending, error) {
	p, st, err := w.submit(ctx, repo, change, notify)
	if err != nil {
		return nil, err
	}
	w.unref(st)
	return p, nil
}

// submit validates and queues change; the caller unrefs the state.
func (w *Writer) submit(ctx context.Context, repo Repo, change Change, notify func()) (*Pending, *repoState, error) {
	if err := repo.validate(); err != nil {
		return nil, nil, err
	}
	if err := change.validate(); err != nil {
		return nil, nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, nil, fmt.Errorf("wait for git write: %w", err)
	}
	change = change.deepCopy()
	if !change.Delete {
		change.Files[OwnerFile] = change.Owner.marker(slices.Collect(maps.Keys(change.Files)))
	}
	req := &request{ctx: ctx, auth: repo.Auth, change: change, done: make(chan struct{}), notify: notify}
	st := w.state(repo)
	w.Unexpect(change.AppKey)
	w.enqueue(st, req)
	return &Pending{req: req}, st, nil
}

// Forget deletes the local clone of repo; the next Apply clones again. It
// waits for a running write to finish. Use it when a clone keeps failing in a
// way Apply's own self-healing does not cover.
func (w *Writer) Forget(repo Repo) error {
	st := w.state(repo)
	defer w.unref(st)
	st.work.Lock()
	defer st.work.Unlock()
	if err := os.RemoveAll(st.dir); err != nil {
		return fmt.Errorf("remove clone of %s: %w", redactURL(st.url), err)
	}
	st.diskBytes.Store(0)
	return nil
}

// state returns the queue of repo, creating it on first use, and holds a
// reference to it until unref.
func (w *Writer) state(repo Repo) *repoState {
	name := cloneDirName(repo.URL, repo.branch())
	w.mu.Lock()
	defer w.mu.Unlock()
	st, ok := w.repos[name]
	if !ok {
		st = &repoState{url: repo.URL, host: hostKey(repo.URL), branch: repo.branch(), dir: filepath.Join(w.cacheDir, name), full: make(chan struct{}, 1)}
		w.repos[name] = st
		if size, ok := w.orphans[name]; ok {
			// A clone an earlier process left: this state uses it from now on.
			st.diskBytes.Store(size)
			delete(w.orphans, name)
		}
		metrics.SetGitClones(len(w.repos))
	}
	st.refs++
	st.released = false // used again: a Release that waited for it no longer applies
	return st
}

func (w *Writer) unref(st *repoState) {
	w.mu.Lock()
	defer w.mu.Unlock()
	st.refs--
	// A batch may still be running: then the drain goroutine's exit drops it
	// (waiting for the batch here would hold w.mu, and every other branch, as
	// long as the push takes). A clone it fails to delete: see dropReleasedWhenIdle.
	_ = w.dropIfReleased(st)
}

// Release frees what the Writer keeps for the branch of a repository no
// application uses any more: its queue and its local clone. It never waits:
// while a batch of the branch runs, a write is queued or a caller holds the
// branch, the release is recorded and carried out once the branch is idle
// (the batch's goroutine ends, or the last caller lets go), unless another
// change for the branch arrives first. The next Apply after a release starts
// afresh.
func (w *Writer) Release(repo Repo) error {
	name := cloneDirName(repo.URL, repo.branch())
	// Holding w.mu keeps new callers from finding or recreating the state
	// (and its directory) until the clone is gone. It is never held across
	// a wait for a batch: every branch's callers need it.
	w.mu.Lock()
	defer w.mu.Unlock()
	st, ok := w.repos[name]
	if !ok {
		return w.removeClone(name, repo.URL)
	}
	st.released = true
	return w.dropIfReleased(st)
}

// dropIfReleased drops a released state that is idle (nothing queued, no
// batch running, no caller holding it) and deletes its clone. A busy state is
// left as it is: the batch's goroutine or the last caller drops it when it is
// done. The caller holds w.mu.
func (w *Writer) dropIfReleased(st *repoState) error {
	name := filepath.Base(st.dir)
	if !st.released || st.refs > 0 || w.repos[name] != st {
		return nil
	}
	st.mu.Lock()
	busy := len(st.pending) > 0 || st.running
	st.mu.Unlock()
	// Idle and without callers, nothing holds the clone; TryLock only makes sure.
	if busy || !st.work.TryLock() {
		return nil
	}
	defer st.work.Unlock()
	delete(w.repos, name)
	metrics.SetGitClones(len(w.repos))
	return w.removeClone(name, st.url)
}

// removeClone deletes the clone directory name of url; the caller holds w.mu.
func (w *Writer) removeClone(name, url string) error {
	if err := os.RemoveAll(filepath.Join(w.cacheDir, name)); err != nil {
		return fmt.Errorf("remove clone of %s: %w", redactURL(url), err)
	}
	return nil
}

// Repositories is the number of (repository, branch) queues the Writer
// keeps.
func (w *Writer) Repositories() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.repos)
}

// cloneDirName derives the clone directory from the URL and branch. A hash
// keeps it short, filesystem-safe and free of anything in the URL.
func cloneDirName(url, branch string) string {
	sum := sha256.Sum256([]byte(url + "\x00" + branch))
	return hex.EncodeToString(sum[:16])
}

// enqueue adds req to the queue and starts the queue's goroutine when none
// runs. The goroutine drains the queue in batches and exits when it is empty,
// so requests that arrive during a push (or the batching window) form the
// next batch.
func (w *Writer) enqueue(st *repoState, req *request) {
	st.mu.Lock()
	st.arrivals++
	if !st.supersede(req) {
		st.pending = append(st.pending, req)
	}
	start := !st.running
	st.running = true
	if len(st.pending) >= w.opts.maxBatch {
		select {
		case st.full <- struct{}{}:
		default:
		}
	}
	st.mu.Unlock()

	if w.opts.onQueued != nil {
		w.opts.onQueued()
	}
	if start {
		go w.drain(st)
	}
}

func (w *Writer) drain(st *repoState) {
	for {
		w.awaitWindow(st)
		// The batch is taken once a slot is free: changes queued while it waits join it.
		w.acquireSlot(st.host)
		st.mu.Lock()
		batch := st.takeBatch(w.opts.maxBatch)
		if len(batch) == 0 {
			st.running = false
			st.mu.Unlock()
			w.releaseSlot(st.host)
			w.dropReleasedWhenIdle(st)
			return
		}
		st.mu.Unlock()
		w.process(st, batch)
		st.lastUsed.Store(time.Now().UnixNano())
		w.releaseSlot(st.host)
		w.evictIdleClones(batch[0].ctx)
	}
}

// acquireSlot waits for a slot of the Git server host (WithMaxOperationsPerHost), then for one
// of the WithMaxConcurrentOperations slots: a batch waiting for its server holds none of the
// total.
func (w *Writer) acquireSlot(host string) {
	if hs := w.hostSlot(host); hs != nil {
		hs <- struct{}{}
	}
	if w.slots == nil {
		return
	}
	w.waiting.Add(1)
	w.slots <- struct{}{}
	w.waiting.Add(-1)
}

func (w *Writer) releaseSlot(host string) {
	if w.slots != nil {
		<-w.slots
	}
	if hs := w.hostSlot(host); hs != nil {
		<-hs
	}
}

// hostSlot is the slot channel of Git server host, nil without WithMaxOperationsPerHost. The
// channels of servers no branch uses any more are kept: one per server ever written to.
func (w *Writer) hostSlot(host string) chan struct{} {
	if w.opts.maxPerHost <= 0 {
		return nil
	}
	w.hostMu.Lock()
	defer w.hostMu.Unlock()
	hs, ok := w.hostSlots[host]
	if !ok {
		if w.hostSlots == nil {
			w.hostSlots = map[string]chan struct{}{}
		}
		hs = make(chan struct{}, w.opts.maxPerHost)
		w.hostSlots[host] = hs
	}
	return hs
}

// hostKey names the Git server of a repository URL for WithMaxOperationsPerHost: its host in
// lower case and its port (the scheme's default when the URL names none). A URL that does not
// parse is its own server.
func hostKey(rawURL string) string {
	ep, err := transport.NewEndpoint(rawURL)
	if err != nil {
		return rawURL
	}
	port := ep.Port
	if port == 0 {
		port = defaultPorts[ep.Protocol]
	}
	return fmt.Sprintf("%s:%d", strings.ToLower(ep.Host), port)
}

// defaultPorts are the ports of the Git transports' schemes.
var defaultPorts = map[string]int{"http": 80, "https": 443, "ssh": 22, "git": 9418}

// dropReleasedWhenIdle carries out a Release that found st busy, now that its
// queue ran empty. A clone it fails to delete stays on disk until the next
// Release of the branch; the next write to the branch reuses it (the state
// opens an existing clone and rebuilds one that is broken).
func (w *Writer) dropReleasedWhenIdle(st *repoState) {
	w.mu.Lock()
	defer w.mu.Unlock()
	_ = w.dropIfReleased(st)
}

// maxWindowsPerBatch bounds how often a batch's window is extended: a batch waits at most this
// many windows (1s with the default 200ms window), however steadily changes keep arriving.
const maxWindowsPerBatch = 5

// awaitWindow waits out the batching window of the next batch: one window, extended by another
// window as long as changes keep arriving (a window in which none was queued ends the wait), up
// to maxWindowsPerBatch windows, or until the queue holds a full batch. While changes to the
// branch are announced (Expect) and not yet submitted, a quiet window does not end the wait:
// it goes on up to maxExpectedWindows windows. It returns at once without a window or with an
// empty or full queue. The changes queued while a push was in flight wait a window as well: when
// they keep arriving, as during a burst of reconciles, the next batch gathers more of them.
func (w *Writer) awaitWindow(st *repoState) {
	if w.opts.batchWindow <= 0 {
		return
	}
	st.mu.Lock()
	// A stale wake-up of an earlier full queue must not cut this window short.
	select {
	case <-st.full:
	default:
	}
	st.mu.Unlock()
	for windows := 1; ; windows++ {
		st.mu.Lock()
		if len(st.pending) == 0 || len(st.pending) >= w.opts.maxBatch {
			st.mu.Unlock()
			return
		}
		seen := st.arrivals
		st.mu.Unlock()
		select {
		case <-w.opts.after(w.opts.batchWindow):
		case <-st.full:
			return
		}
		if windows >= maxExpectedWindows {
			return
		}
		if w.expecting(st) {
			continue
		}
		st.mu.Lock()
		quiet := st.arrivals == seen
		st.mu.Unlock()
		if quiet || windows >= maxWindowsPerBatch {
			return
		}
	}
}

// takeBatch removes up to n requests from the queue: the oldest and every
// later one with the same credentials, in arrival order. Callers hold st.mu.
func (st *repoState) takeBatch(n int) []*request {
	if len(st.pending) == 0 {
		return nil
	}
	id := st.pending[0].auth.id
	var batch, rest []*request
	for _, r := range st.pending {
		if r.auth.id == id && len(batch) < n {
			batch = append(batch, r)
		} else {
			rest = append(rest, r)
		}
	}
	st.pending = rest
	return batch
}

// supersede puts req in the place of a queued change of the same owner and
// folder, which then receives req's outcome. It reports whether it did.
// Callers hold st.mu.
func (st *repoState) supersede(req *request) bool {
	for i, old := range st.pending {
		if old.change.Owner.ID != req.change.Owner.ID || old.change.Path != req.change.Path {
			continue
		}
		req.superseded = append(old.superseded, old)
		old.superseded = nil
		st.pending[i] = req
		return true
	}
	return false
}

// withdraw removes req from the queue if it has not been picked up yet and
// no superseded change waits on it.
func (st *repoState) withdraw(req *request) bool {
	st.mu.Lock()
	defer st.mu.Unlock()
	for i, r := range st.pending {
		if r == req && len(r.superseded) == 0 {
			st.pending = append(st.pending[:i], st.pending[i+1:]...)
			return true
		}
	}
	return false
}

// process writes one batch and hands the outcome to every caller in it.
func (w *Writer) process(st *repoState, batch []*request) {
	commit, err := w.writeBatch(st, batch)
	for _, r := range batch {
		switch {
		case r.err != nil:
		case err != nil:
			r.err = err
		default:
			r.result = Result{Commit: commit, Changed: r.changed, Created: r.changed && r.created}
		}
		r.finish()
	}
}

// writeBatch writes one batch holding the branch's clone, which it frees before process hands
// the outcome to the callers: a caller that reads the branch next (SameFolder, Log) finds it free.
func (w *Writer) writeBatch(st *repoState, batch []*request) (string, error) {
	st.work.Lock()
	defer st.work.Unlock()

	// The batch serves several callers: it keeps the first one's values (the
	// logger) but none of their cancellations.
	ctx, cancel := context.WithTimeout(context.WithoutCancel(batch[0].ctx), w.opts.timeout)
	defer cancel()

	auth := batch[0].auth
	commit, err := w.timedWrite(ctx, st, auth, batch)
	if deletions := slices.DeleteFunc(slices.Clone(batch), func(r *request) bool { return !r.change.Delete }); errors.Is(err, ErrRepositoryTooLarge) &&
		len(deletions) > 0 && w.opts.maxInflatedSize > 0 {
		// The branch is over a size limit: the changes that write files fail, and the
		// deletions, which make it smaller, are written alone (deletionFetchFactor).
		for _, r := range batch {
			if !r.change.Delete && r.err == nil {
				r.err = err
			}
		}
		commit, err = w.writeDeletionsOverLimit(ctx, st, auth, deletions)
	}
	err = auth.redact(err)
	w.recordDiskUsage(st)
	return commit, err
}

// writeDeletionsOverLimit writes a batch of deletions to a branch over the inflated limit: its
// fetch may inflate deletionFetchFactor times the limit, one such batch at a time over all
// branches, so the memory of the batches running at once stays bounded (docs/operability.md).
func (w *Writer) writeDeletionsOverLimit(ctx context.Context, st *repoState, auth Auth, batch []*request) (string, error) {
	select {
	case w.overLimit <- struct{}{}:
	case <-ctx.Done():
		return "", fmt.Errorf("wait to remove folders from a branch over its size limit: %w", ctx.Err())
	}
	defer func() { <-w.overLimit }()
	st.deletionsOnly = true
	defer func() { st.deletionsOnly = false }()
	return w.timedWrite(ctx, st, auth, batch)
}

// recordDiskUsage records what the clone holds after a batch, for evictIdleClones: its object
// store, measured (a clone has no worktree, so that is all of it). A clone the batch deleted
// holds nothing.
func (w *Writer) recordDiskUsage(st *repoState) {
	objects, err := objectStoreSize(st)
	if err != nil {
		st.diskBytes.Store(0)
		return
	}
	st.diskBytes.Store(objects)
}

// deepCopy copies the change so a caller that gave up waiting may reuse its
// buffers while the batch still reads them.
func (c Change) deepCopy() Change {
	files := make(map[string][]byte, len(c.Files)+1)
	for name, content := range c.Files {
		files[name] = append([]byte(nil), content...)
	}
	c.Files = files
	c.Trailers = slices.Clone(c.Trailers)
	return c
}
