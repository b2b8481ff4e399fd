// Package gitops writes application manifests to Git for the App
// Controller: Flux inside each tenant vCluster applies what is pushed here.
//
// # Layout
//
// A Writer (one per manager) keeps one working clone per (repository URL,
// branch) under its cache directory, named by a hash of URL and branch so
// that no part of the URL (nor any credential) reaches the filesystem.
// Credentials are passed per call and never stored in the clone's config.
// Each application owns one folder (e.g. apps/<namespace>/<app>); a Change
// replaces that folder with exactly the given files, or deletes it.
//
// # Ownership
//
// Every folder written holds OwnerFile, naming the owning application (ID
// and name) and the files it wrote there. A change or delete whose folder
// equals, contains or lies inside a folder marked for another owner fails
// with ErrPathConflict and writes nothing; in one batch the first owner
// claims a free folder. A marker of the same name but another ID (a
// recreated application) is taken over. Content without the owner's marker
// at the folder's path (a README, .github/, a Flux bootstrap path, a folder a
// person wrote) is never taken over: the change fails with ErrFolderNotOwned
// and writes nothing. A delete removes only the files the marker lists (and
// the marker): a file someone else added stays, and a folder without the
// owner's marker is left alone. Folders in a dot-folder are refused
// (ErrInvalidPath).
//
// # Credentials
//
// AuthFromSecretData accepts only Git credential shapes: HTTPS
// username+password, token or bearerToken (optional ca.crt), SSH identity and
// known_hosts (optional passphrase). Any other key fails with ErrInvalidAuth
// and ErrNotGitCredential, so a ServiceAccount token Secret is never sent as
// basic auth. Release frees the queue and clone of a branch no
// application uses any more; a branch with a write still queued is freed when
// that write is done, unless another change for it arrives first.
//
// # Serialization and batching
//
// All work on one clone happens on one goroutine, started when a change is
// queued and gone when the queue is empty. Submit queues the change and
// returns a Pending handle at once; its callback runs when the outcome is
// known. Apply is Submit plus a wait for that outcome (one code path). A
// change submitted for an owner and folder that still has a change queued
// (not yet being written) takes that change's place in the queue: only the
// newer content is written, and both callers receive its outcome.
// The goroutine takes every queued change (up to the batch size, default
// 100; only changes with the same credentials share a batch), applies them all
// to the head tree and makes one commit and one push. Changes queued while a
// push is in flight therefore form the next batch: under load, reconciles of
// many apps in one repository cost a handful of commits instead of one each.
// WithBatchWindow (the manager's --git-batch-window, 200ms) adds a batching
// window: a batch starts once a window passed in which no change arrived (a
// quiet window), after at most five windows however steadily changes keep
// arriving, or when it is full, so changes arriving one after the other also
// share a push. One app's change waits one window; a burst of reconciles is
// gathered for up to five. A caller that is about to submit a change announces
// it with Expect (the app controller does when an app is created or its spec
// changes) and withdraws it with Unexpect when none comes; submitting settles
// it. While a branch has announced changes outstanding, a quiet window does not
// end its wait (at most 50 windows): a burst over many repositories, whose
// changes to one branch arrive further apart than a window, still shares one
// push per branch. Without the option no delay is added. Every caller in a
// batch receives the commit that contains its change.
//
// # Freshness and determinism
//
// Before every batch the branch is fetched (forced refspec, depth 1: clones
// are shallow and hold no history; WithMaxRepositorySize bounds what they
// hold, and a fetch is cut off as soon as its pack would exceed the room
// left, so a huge repository is never downloaded in full) and the branch is
// reset to origin/<branch>, so commits made outside the controller, force
// pushes and leftovers of a failed attempt can never leave the clone stale.
// Clones have no worktree: a commit's tree is built from the head tree by
// writing the changed files' blobs and the trees along their folders' paths
// (treeEdit), so a batch costs what its changes cost, not what the branch
// holds, and no file of a repository is ever written to disk. A change whose files are byte-identical to the branch is
// detected by comparing blob hashes with the head tree; when no change in a
// batch differs, nothing is committed or pushed (never an empty commit). A
// clone that fails to open or sync for a local reason (corruption, foreign
// remote, too many pack files) is deleted and fetched again once. An empty
// remote gets the branch with the first commit; a remote that has other
// branches but not this one refuses a change unless it sets CreateBranch
// (ErrBranchNotFound), and a delete there has nothing to do.
//
// # Bounds
//
// What tenants put in their repositories must not decide the operator's memory or disk.
// WithMaxInflatedSize bounds what a branch's objects inflate to: a fetched pack streams through
// a scanner that inflates each object into a counter as it arrives (inspect.go) and the pack is
// held incomplete until the scanner accepted it, so go-git, which indexes a complete pack by
// reading every object whole into memory, never sees one over the bound; the fetched tree's
// file sizes are read from the object headers: a branch over the bound refuses the changes that
// write files and still takes deletions, which are written again alone with twice the bound, one
// such batch at a time (deletionFetchFactor). Clones are opened
// with go-git's large-object threshold (larger objects are streamed) and a small object cache.
// WithMaxConcurrentOperations bounds the batches running at once over all branches: a branch's
// goroutine waits for a slot before it takes its batch, and with WithMaxOperationsPerHost first
// for one of its Git server's, so a slow server holds only its share. Every operation ends at
// WithTimeout, an SSH connection's handshake included (sshdeadline.go). A caller need never wait
// for another caller's network I/O: Submit queues and returns, Release is carried out when the
// branch is idle, and a lookup (SameFolder, Log) that finds the clone in use returns a
// *BusyError saying when it is free (clonelock.go); Apply, which waits for its batch, is for
// callers that may. WithMaxCacheSize bounds the clones on
// disk: after each batch, clone directories no branch uses and then the clones of idle branches,
// least recently used first, are deleted while the clones hold more (evict.go).
//
// # Comparing folders across commits
//
// SameFolder tells whether an application's folder holds the same content
// (Git tree hash) at two commits, so that a revision another application's
// push produced counts as holding this one's folder. It reads the local
// clone (cached per branch by commit and folder); a commit the clone lacks
// is fetched for once (the branch's last RevisionFetchDepth commits, within
// the size limit) and, when still missing, fails with ErrRevisionNotFound
// without another fetch.
//
// # Retry policy
//
// Pushes never force. When a push fails and the remote branch is no longer
// at the commit the batch was built on, another writer won the race: the
// Writer fetches, resets to the new head, re-applies the same changes (which
// may now be no-ops) and pushes again, waiting 100ms, 200ms, 400ms, 800ms
// between the 5 attempts (configurable with WithBackoff). The race is
// detected from the remote ref, not from error text. Only when every attempt
// is rejected does Apply fail with ErrPushConflict; the reconciler requeues.
//
// # Errors
//
// Errors wrap ErrInvalidPath, ErrInvalidChange, ErrInvalidAuth,
// ErrNotGitCredential, ErrAuthFailed, ErrPushConflict, ErrPathConflict,
// ErrFolderNotOwned, ErrRepositoryNotFound or ErrRepositoryTooLarge (either size bound) where that is the cause, and never
// contain credentials: known secrets are scrubbed from every message.
package gitops
