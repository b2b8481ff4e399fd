package gitops

import "errors"

// Sentinel errors. Errors returned by this package wrap one of these when the
// cause is known, so callers classify with errors.Is and never by text.
var (
	// ErrInvalidPath means a Change.Path or one of its file names is not a
	// clean, non-empty path relative to the repository root, contains "..",
	// or points into ".git". The change is never retried: fix the input.
	ErrInvalidPath = errors.New("invalid path")

	// ErrInvalidChange means a Change or Repo is malformed in another way
	// (no files for an update, files on a delete, unsupported URL, invalid
	// branch name, credentials embedded in the URL).
	ErrInvalidChange = errors.New("invalid change")

	// ErrInvalidAuth means the credentials Secret cannot be turned into an
	// auth method (missing keys, unparsable private key or known_hosts).
	// Callers usually report it with the same reason as ErrAuthFailed.
	ErrInvalidAuth = errors.New("invalid git credentials")

	// ErrNotGitCredential means the credentials Secret's data is not one of the Git
	// credential shapes (a key no shape has, such as a ServiceAccount token Secret's
	// "namespace", or only empty values). It is wrapped together with ErrInvalidAuth.
	ErrNotGitCredential = errors.New("not a Git credential")

	// ErrAuthFailed means the Git server refused the credentials (HTTP
	// 401, SSH authentication failure) or the SSH host key did not match
	// known_hosts. The App Controller reports it as reason GitAuthFailed.
	ErrAuthFailed = errors.New("git authentication failed")

	// ErrForbidden means the Git server answered HTTP 403: it knows who asks
	// but refuses the request now. Hosts answer so for a rate limit, an IP
	// allow-list, an archived or read-only repository, or a token without
	// the scope, so it says nothing certain about the credentials; the App
	// Controller retries it (reason GitForbidden) and never treats it as
	// credentials that cannot work.
	ErrForbidden = errors.New("git request forbidden (HTTP 403)")

	// ErrPushConflict means every push attempt was rejected because the
	// remote branch kept moving (non-fast-forward), even after fetching,
	// resetting and re-applying the changes each time.
	ErrPushConflict = errors.New("git push conflict: remote branch kept moving")

	// ErrRepositoryNotFound means the server says the repository does not
	// exist (HTTP 404 on the smart-HTTP discovery).
	ErrRepositoryNotFound = errors.New("git repository not found")

	// ErrRepositoryTooLarge means a (shallow) fetch of the branch would
	// bring more than the Writer's size limits (WithMaxRepositorySize: the
	// compressed pack; WithMaxInflatedSize: what its objects inflate to): the
	// fetch is cut off while the pack arrives, or the clone measured after it,
	// or the fetched tree, is over a limit. The clone is
	// deleted again.
	ErrRepositoryTooLarge = errors.New("git repository too large")

	// ErrPathConflict means the change's folder equals, contains or lies inside a folder whose
	// OwnerFile names another application. Nothing of the change is written.
	ErrPathConflict = errors.New("folder belongs to another application")

	// ErrFolderNotOwned means the change's folder (or a file at its path) is on the branch
	// without an ownership marker: no application wrote it (a README, .github/, a Flux
	// bootstrap path), so it is neither taken over nor replaced. Nothing of the change is
	// written.
	ErrFolderNotOwned = errors.New("folder not written by an application")

	// ErrBranchNotFound means the repository has branches but not the change's, and the
	// change does not ask to create it (Change.CreateBranch): a mistyped branch must not start
	// an orphan branch. Nothing of the change is written. An empty repository gets its first
	// branch without asking.
	ErrBranchNotFound = errors.New("git branch not found")

	// ErrPending is what Pending.Result returns while the change is not yet
	// written: not a failure, the outcome is not known yet.
	ErrPending = errors.New("git write pending")
)
