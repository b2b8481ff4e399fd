package apptest

import (
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/fluxcd/pkg/gittestserver"
	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/config"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/go-git/go-git/v5/plumbing/transport"
	githttp "github.com/go-git/go-git/v5/plumbing/transport/http"
)

// GitServer is a Git smart-HTTP server on loopback with basic auth; repositories are created on
// the first push.
type GitServer struct {
	*gittestserver.GitServer
	User, Password string
	// ReadUser and ReadPassword may fetch but never push (the server answers 403 to a push),
	// as a read-only deploy token of a Git host does.
	ReadUser, ReadPassword string

	sshOnce sync.Once
	ssh     SSHAccess
	sshErr  error

	mu      sync.Mutex
	removed map[string]bool
	// pushes counts the push requests (git-receive-pack POSTs) per repository.
	pushes map[string]int
	// fetches counts the upload-pack ref advertisements (one per fetch) per repository.
	fetches map[string]int
	// forbidden holds the body of the 403 the server answers every request of a repository with
	// (Forbid), as a Git host does under a rate limit or an IP allow-list.
	forbidden map[string]string
}

// StartGitServer starts the server. It needs the git CLI.
func StartGitServer(user, password string) (*GitServer, error) {
	if _, err := exec.LookPath("git"); err != nil {
		return nil, fmt.Errorf("%w: the git CLI (the test Git server runs git http-backend): %w", ErrMissingTool, err)
	}
	srv, err := gittestserver.NewTempGitServer()
	if err != nil {
		return nil, fmt.Errorf("create git server: %w", err)
	}
	s := &GitServer{GitServer: srv, User: user, Password: password,
		ReadUser: "reader", ReadPassword: "r3ad-0nly-pa55", removed: map[string]bool{},
		pushes: map[string]int{}, fetches: map[string]int{}, forbidden: map[string]string{}}
	srv.AutoCreate().Auth(user, password)
	srv.AddHTTPMiddlewares(s.countPushes, s.countFetches, s.refuseRepositories, s.readOnlyUser)
	if err := srv.StartHTTP(); err != nil {
		return nil, fmt.Errorf("start git server: %w", err)
	}
	return s, nil
}

// RemoveRepository deletes a repository from the server for good: from now on the server
// answers 404 for it, as a Git host does for a deleted repository (without this, the server's
// auto-create would bring back an empty one on the next request).
func (s *GitServer) RemoveRepository(repo string) error {
	s.mu.Lock()
	s.removed[repo] = true
	s.mu.Unlock()
	return os.RemoveAll(filepath.Join(s.Root(), repo+".git"))
}

// Forbid makes the server answer every request of repo with HTTP 403 and body until Allow.
func (s *GitServer) Forbid(repo, body string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.forbidden[repo] = body
}

// Allow ends Forbid.
func (s *GitServer) Allow(repo string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.forbidden, repo)
}

// repoOf splits a request path of the smart-HTTP protocol ("/<repo>.git/<rest>") into the
// repository and the rest; ok is false for any other path.
func repoOf(r *http.Request) (repo, rest string, ok bool) {
	return strings.Cut(strings.TrimPrefix(r.URL.Path, "/"), ".git/")
}

// refuseRepositories answers for the repositories a test took away: 404 for a removed one
// (RemoveRepository), 403 with its body for a forbidden one (Forbid).
func (s *GitServer) refuseRepositories(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		repo, _, _ := repoOf(r)
		s.mu.Lock()
		gone := s.removed[repo]
		body, forbidden := s.forbidden[repo]
		s.mu.Unlock()
		switch {
		case gone:
			http.NotFound(w, r)
		case forbidden:
			http.Error(w, body, http.StatusForbidden)
		default:
			next.ServeHTTP(w, r)
		}
	})
}

// countPushes counts every push request that reaches the server, refused or not: "nothing was
// pushed" is a count of zero, not an unchanged head.
func (s *GitServer) countPushes(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost && strings.HasSuffix(r.URL.Path, "/git-receive-pack") {
			repo, _, _ := repoOf(r)
			s.mu.Lock()
			s.pushes[repo]++
			s.mu.Unlock()
		}
		next.ServeHTTP(w, r)
	})
}

// Pushes is the number of push requests the server received for repo.
func (s *GitServer) Pushes(repo string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.pushes[repo]
}

// Fetches is the number of fetches the server has received for repo, so a test can assert that
// something cost no Git traffic: every fetch (or clone, or ls-remote) starts with the upload-pack
// ref advertisement, also the one of a client that finds it has the branch head already and
// downloads nothing.
func (s *GitServer) Fetches(repo string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.fetches[repo]
}

func (s *GitServer) countFetches(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		repo, rest, ok := repoOf(r)
		if ok && rest == "info/refs" && r.URL.Query().Get("service") == "git-upload-pack" {
			s.mu.Lock()
			s.fetches[repo]++
			s.mu.Unlock()
		}
		next.ServeHTTP(w, r)
	})
}

// readOnlyUser lets ReadUser fetch (the request goes on with the server's own credentials) and
// refuses its pushes with 403, before the server's basic auth sees them.
func (s *GitServer) readOnlyUser(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		user, pass, ok := r.BasicAuth()
		if !ok || user != s.ReadUser || pass != s.ReadPassword {
			next.ServeHTTP(w, r)
			return
		}
		if strings.HasSuffix(r.URL.Path, "/git-receive-pack") || r.URL.Query().Get("service") == "git-receive-pack" {
			http.Error(w, "read-only credentials", http.StatusForbidden)
			return
		}
		r = r.Clone(r.Context())
		r.SetBasicAuth(s.User, s.Password)
		next.ServeHTTP(w, r)
	})
}

// ReadOnlySecretData is the content of a credentials Secret that can fetch but not push.
func (s *GitServer) ReadOnlySecretData() map[string][]byte {
	return map[string][]byte{"username": []byte(s.ReadUser), "password": []byte(s.ReadPassword)}
}

// TryPush pushes a new commit on a new branch, probe, of repo with auth, as anyone holding
// those credentials could: nil means the credentials can push (the branch then exists).
func (s *GitServer) TryPush(repo, probe string, auth transport.AuthMethod) error {
	dir, err := os.MkdirTemp("", "probe-clone-")
	if err != nil {
		return err
	}
	defer func() { _ = os.RemoveAll(dir) }()
	r, err := initClone(dir, s.URL(repo), probe)
	if err != nil {
		return err
	}
	wt, err := r.Worktree()
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "probe.txt"), []byte(probe), 0o600); err != nil {
		return err
	}
	if _, err := wt.Add("probe.txt"); err != nil {
		return err
	}
	sig := &object.Signature{Name: "probe", Email: "probe@example.com", When: time.Now()}
	if _, err := wt.Commit("probe "+probe, &git.CommitOptions{Author: sig, Committer: sig}); err != nil {
		return err
	}
	ref := plumbing.NewBranchReferenceName(probe)
	return r.Push(&git.PushOptions{Auth: auth, RefSpecs: []config.RefSpec{config.RefSpec(ref + ":" + ref)}})
}

// Stop stops the server and removes its repositories.
func (s *GitServer) Stop() {
	s.StopHTTP()
	_ = s.StopSSH()
	_ = os.RemoveAll(s.Root())
}

// URL of a repository (no credentials in it).
func (s *GitServer) URL(repo string) string {
	return s.HTTPAddress() + "/" + repo + ".git"
}

// SecretData is the content of a Git credentials Secret for this server.
func (s *GitServer) SecretData() map[string][]byte {
	return map[string][]byte{"username": []byte(s.User), "password": []byte(s.Password)}
}

func (s *GitServer) open(repo string) (*git.Repository, error) {
	r, err := git.PlainOpen(filepath.Join(s.Root(), repo+".git"))
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", repo, err)
	}
	return r, nil
}

// Head returns the commit SHA at the branch, "" when the repository or branch does not exist.
func (s *GitServer) Head(repo, branch string) (string, error) {
	r, err := s.open(repo)
	if errors.Is(err, git.ErrRepositoryNotExists) {
		return "", nil
	}
	if err != nil {
		return "", err
	}
	ref, err := r.Reference(plumbing.NewBranchReferenceName(branch), true)
	if errors.Is(err, plumbing.ErrReferenceNotFound) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("read %s: %w", branch, err)
	}
	return ref.Hash().String(), nil
}

// Files returns the files under dir (relative names; "" is the whole tree) at the branch head;
// empty when the folder does not exist.
func (s *GitServer) Files(repo, branch, dir string) (map[string]string, error) {
	files := map[string]string{}
	head, err := s.Head(repo, branch)
	if err != nil || head == "" {
		return files, err
	}
	r, err := s.open(repo)
	if err != nil {
		return nil, err
	}
	c, err := r.CommitObject(plumbing.NewHash(head))
	if err != nil {
		return nil, fmt.Errorf("read commit: %w", err)
	}
	tree, err := c.Tree()
	if err != nil {
		return nil, fmt.Errorf("read tree: %w", err)
	}
	err = tree.Files().ForEach(func(f *object.File) error {
		rel, ok := f.Name, true
		if dir != "" {
			rel, ok = strings.CutPrefix(f.Name, dir+"/")
		}
		if !ok {
			return nil
		}
		content, err := f.Contents()
		if err != nil {
			return err
		}
		files[rel] = content
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("read files: %w", err)
	}
	return files, nil
}

// Commits returns the commits of the branch, newest first.
func (s *GitServer) Commits(repo, branch string) ([]*object.Commit, error) {
	head, err := s.Head(repo, branch)
	if err != nil || head == "" {
		return nil, err
	}
	r, err := s.open(repo)
	if err != nil {
		return nil, err
	}
	iter, err := r.Log(&git.LogOptions{From: plumbing.NewHash(head)})
	if err != nil {
		return nil, fmt.Errorf("log: %w", err)
	}
	var commits []*object.Commit
	err = iter.ForEach(func(c *object.Commit) error {
		commits = append(commits, c)
		return nil
	})
	return commits, err
}

// PushOutsideCommit commits one file to the branch from a separate clone, as another writer of
// the repository would, and returns the commit.
func (s *GitServer) PushOutsideCommit(repo, branch, file, content string) (string, error) {
	dir, err := os.MkdirTemp("", "outside-clone-")
	if err != nil {
		return "", err
	}
	defer func() { _ = os.RemoveAll(dir) }()
	auth := &githttp.BasicAuth{Username: s.User, Password: s.Password}
	r, err := git.PlainClone(dir, false, &git.CloneOptions{
		URL: s.URL(repo), Auth: auth, ReferenceName: plumbing.NewBranchReferenceName(branch), SingleBranch: true,
	})
	if errors.Is(err, plumbing.ErrReferenceNotFound) || errors.Is(err, git.ErrRepositoryNotExists) || isEmptyRemote(err) {
		r, err = initClone(dir, s.URL(repo), branch)
	}
	if err != nil {
		return "", fmt.Errorf("clone: %w", err)
	}
	wt, err := r.Worktree()
	if err != nil {
		return "", err
	}
	if err := os.MkdirAll(filepath.Join(dir, path.Dir(file)), 0o750); err != nil {
		return "", err
	}
	if err := os.WriteFile(filepath.Join(dir, file), []byte(content), 0o600); err != nil {
		return "", err
	}
	if _, err := wt.Add(file); err != nil {
		return "", err
	}
	sig := &object.Signature{Name: "outsider", Email: "outsider@example.com", When: time.Now()}
	h, err := wt.Commit("outside change "+file, &git.CommitOptions{Author: sig, Committer: sig})
	if err != nil {
		return "", err
	}
	ref := plumbing.NewBranchReferenceName(branch)
	err = r.Push(&git.PushOptions{Auth: auth, RefSpecs: []config.RefSpec{config.RefSpec(ref + ":" + ref)}})
	if err != nil {
		return "", fmt.Errorf("push: %w", err)
	}
	return h.String(), nil
}

func isEmptyRemote(err error) bool {
	return errors.Is(err, transport.ErrEmptyRemoteRepository)
}

func initClone(dir, url, branch string) (*git.Repository, error) {
	_ = os.RemoveAll(dir)
	r, err := git.PlainInitWithOptions(dir, &git.PlainInitOptions{
		InitOptions: git.InitOptions{DefaultBranch: plumbing.NewBranchReferenceName(branch)},
	})
	if err != nil {
		return nil, err
	}
	if _, err := r.CreateRemote(&config.RemoteConfig{Name: "origin", URLs: []string{url}}); err != nil {
		return nil, err
	}
	return r, nil
}
