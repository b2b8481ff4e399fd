package testenv

import (
	"bufio"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
)

// auditPolicy keeps the requests of the manager users (ManagerGroup) at Metadata level and
// nothing else, so the log stays small whatever the tests' own clients do.
const auditPolicy = `apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: [RequestReceived]
rules:
- level: Metadata
  userGroups: ["` + ManagerGroup + `"]
- level: None
`

// configureAudit points the API server's audit log (blocking mode: an event is on disk when the
// request has been answered) at a new temporary directory.
func (e *Env) configureAudit() error {
	dir, err := os.MkdirTemp("", "testenv-audit-")
	if err != nil {
		return fmt.Errorf("audit directory: %w", err)
	}
	policy := filepath.Join(dir, "policy.yaml")
	if err := os.WriteFile(policy, []byte(auditPolicy), 0o600); err != nil {
		_ = os.RemoveAll(dir)
		return fmt.Errorf("audit policy: %w", err)
	}
	e.auditDir, e.AuditLog = dir, filepath.Join(dir, "audit.log")
	args := e.Env.ControlPlane.GetAPIServer().Configure()
	args.Set("audit-policy-file", policy)
	args.Set("audit-log-path", e.AuditLog)
	args.Set("audit-log-mode", "blocking")
	args.Set("audit-log-format", "json")
	args.Set("audit-log-maxbackup", "0")
	return nil
}

// Request is one request of a manager user, as the audit log recorded it.
type Request struct {
	User        string
	Verb        string
	Group       string
	Resource    string
	Subresource string
	Namespace   string
	Name        string
	Code        int
}

func (r Request) String() string {
	return fmt.Sprintf("%s %s %s ns=%q name=%q by %s: %d", r.Verb, r.Group, r.resource(), r.Namespace, r.Name, r.User, r.Code)
}

func (r Request) resource() string {
	if r.Subresource != "" {
		return r.Resource + "/" + r.Subresource
	}
	return r.Resource
}

// ManagerRequests reads every resource request of the manager users from the audit log
// (non-resource requests such as discovery are left out).
func (e *Env) ManagerRequests() ([]Request, error) {
	if e.AuditLog == "" {
		return nil, fmt.Errorf("no audit log: the environment was started with an audit policy of its own")
	}
	f, err := os.Open(e.AuditLog)
	if err != nil {
		return nil, fmt.Errorf("open the audit log: %w", err)
	}
	defer f.Close()
	return parseAudit(f)
}

func parseAudit(r io.Reader) ([]Request, error) {
	type event struct {
		Stage string `json:"stage"`
		Verb  string `json:"verb"`
		User  struct {
			Username string   `json:"username"`
			Groups   []string `json:"groups"`
		} `json:"user"`
		ObjectRef *struct {
			Resource    string `json:"resource"`
			Namespace   string `json:"namespace"`
			Name        string `json:"name"`
			APIGroup    string `json:"apiGroup"`
			Subresource string `json:"subresource"`
		} `json:"objectRef"`
		ResponseStatus *struct {
			Code int `json:"code"`
		} `json:"responseStatus"`
	}
	var out []Request
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 1<<20), 16<<20)
	for sc.Scan() {
		var ev event
		if err := json.Unmarshal(sc.Bytes(), &ev); err != nil {
			return nil, fmt.Errorf("audit log line: %w", err)
		}
		if ev.ObjectRef == nil || ev.ObjectRef.Resource == "" || !slices.Contains(ev.User.Groups, ManagerGroup) {
			continue
		}
		req := Request{
			User: ev.User.Username, Verb: ev.Verb, Group: ev.ObjectRef.APIGroup, Resource: ev.ObjectRef.Resource,
			Subresource: ev.ObjectRef.Subresource, Namespace: ev.ObjectRef.Namespace, Name: ev.ObjectRef.Name,
		}
		if ev.ResponseStatus != nil {
			req.Code = ev.ResponseStatus.Code
		}
		out = append(out, req)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("read the audit log: %w", err)
	}
	return out, nil
}

// Permission is one (group, resource, verb) a marker grants; Resource may name a subresource
// ("kubeoperaapps/status"). Name is set when the marker grants the verb on named objects only
// (resourceNames): one Permission per name.
type Permission struct {
	Group, Resource, Verb, Name string
}

func (p Permission) String() string {
	s := p.Verb + " " + p.Group + "/" + p.Resource
	if p.Name != "" {
		s += " " + p.Name
	}
	return s
}

// usedBy reports whether request r exercised p.
func (p Permission) usedBy(r Request) bool {
	return p.Group == r.Group && p.Resource == r.resource() && p.Verb == r.Verb && (p.Name == "" || p.Name == r.Name)
}

var markerRE = regexp.MustCompile(`^\s*//\s*\+kubebuilder:rbac:(.+)$`)

// MarkerPermissions reads the `+kubebuilder:rbac` markers of a Go file (relative to the
// repository root) and expands them to permissions.
func MarkerPermissions(file string) ([]Permission, error) {
	b, err := os.ReadFile(filepath.Join(Root(), file)) //nolint:gosec // G304: a file of this repository
	if err != nil {
		return nil, fmt.Errorf("read RBAC markers: %w", err)
	}
	var out []Permission
	for line := range strings.SplitSeq(string(b), "\n") {
		m := markerRE.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		fields := map[string][]string{}
		for kv := range strings.SplitSeq(m[1], ",") {
			k, v, ok := strings.Cut(kv, "=")
			if !ok {
				return nil, fmt.Errorf("%s: marker %q: %q is not key=value", file, m[1], kv)
			}
			fields[k] = strings.Split(strings.Trim(v, `"`), ";")
		}
		if fields["groups"] == nil || fields["resources"] == nil || fields["verbs"] == nil {
			return nil, fmt.Errorf("%s: marker %q: want groups, resources and verbs", file, m[1])
		}
		names := fields["resourceNames"]
		if names == nil {
			names = []string{""}
		}
		for _, g := range fields["groups"] {
			for _, r := range fields["resources"] {
				for _, v := range fields["verbs"] {
					for _, n := range names {
						out = append(out, Permission{Group: g, Resource: r, Verb: v, Name: n})
					}
				}
			}
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%s: no RBAC markers", file)
	}
	return out, nil
}

// Unused returns the permissions no request used, sorted. A permission on named objects is used
// by a request for that name only.
func Unused(perms []Permission, reqs []Request) []Permission {
	var out []Permission
	for _, p := range perms {
		if !slices.ContainsFunc(reqs, p.usedBy) && !slices.Contains(out, p) {
			out = append(out, p)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].String() < out[j].String() })
	return out
}

// Refused returns the requests the API server answered 403 Forbidden.
func Refused(reqs []Request) []Request {
	var out []Request
	for _, r := range reqs {
		if r.Code == http.StatusForbidden {
			out = append(out, r)
		}
	}
	return out
}

// expectedRefusal is a request a test provokes on purpose, and why the RBAC refuses it.
type expectedRefusal struct {
	verb, group, resource, namespace, name, why string
}

func (x expectedRefusal) matches(r Request) bool {
	return r.Verb == x.verb && r.Group == x.group && r.resource() == x.resource && r.Namespace == x.namespace && r.Name == x.name
}

// ExpectRefused records that a test makes the manager send a request the bundle's RBAC refuses,
// on purpose, with the reason: CheckRBACUse then passes that one request (verb, group,
// resource, namespace and name must all match) and still fails on any other refusal.
func (e *Env) ExpectRefused(verb, group, resource, namespace, name, why string) {
	e.refusalsMu.Lock()
	defer e.refusalsMu.Unlock()
	e.refusals = append(e.refusals, expectedRefusal{verb: verb, group: group, resource: resource, namespace: namespace, name: name, why: why})
}

// unexpected returns the refused requests no test expected.
func (e *Env) unexpected(refused []Request) []Request {
	e.refusalsMu.Lock()
	defer e.refusalsMu.Unlock()
	var out []Request
	for _, r := range refused {
		i := slices.IndexFunc(e.refusals, func(x expectedRefusal) bool { return x.matches(r) })
		if i < 0 {
			out = append(out, r)
			continue
		}
		fmt.Fprintf(os.Stderr, "RBAC use: %s refused, as the test expects: %s\n", r, e.refusals[i].why)
	}
	return out
}

// CheckRBACUse is run by a suite's TestMain after m.Run, with m.Run's exit code, and returns the
// exit code: 1 when a manager request was refused (the bundle's RBAC is too narrow), or, when the
// whole suite ran and passed (no -run, no -short), when a permission of the markers in
// markerFile was never used and is not in unusedOK (permission string → why it stays). A
// filtered run (-run, -skip, -short) that started no manager has nothing to check; the whole
// suite with no manager request fails (the manager was not run with ManagerConfig).
func (e *Env) CheckRBACUse(code int, markerFile string, unusedOK map[string]string) int {
	if e == nil {
		return code
	}
	reqs, err := e.ManagerRequests()
	if err != nil {
		fmt.Fprintln(os.Stderr, "FAIL RBAC use:", err)
		return 1
	}
	if len(reqs) == 0 {
		if filtered() {
			// A -run subset may start no manager at all: nothing to check.
			return code
		}
		fmt.Fprintln(os.Stderr, "FAIL RBAC use: the audit log holds no request of a manager user (is the manager run with testenv.ManagerConfig?)")
		return 1
	}
	if refused := e.unexpected(Refused(reqs)); len(refused) > 0 {
		fmt.Fprintf(os.Stderr, "FAIL RBAC use: %d manager requests refused by the bundle's RBAC:\n", len(refused))
		for _, r := range refused[:min(len(refused), 20)] {
			fmt.Fprintln(os.Stderr, "  ", r)
		}
		code = 1
	}
	if code != 0 || filtered() {
		return code
	}
	perms, err := MarkerPermissions(markerFile)
	if err != nil {
		fmt.Fprintln(os.Stderr, "FAIL RBAC use:", err)
		return 1
	}
	for _, p := range Unused(perms, reqs) {
		if why, ok := unusedOK[p.String()]; ok {
			fmt.Fprintf(os.Stderr, "RBAC use: %s unused by this suite: %s\n", p, why)
			continue
		}
		fmt.Fprintf(os.Stderr, "FAIL RBAC use: %s (%s) is granted but the suite never used it: drop the marker or explain it\n", p, markerFile)
		code = 1
	}
	return code
}

// filtered reports whether only part of the suite ran (-run, -skip or -short).
func filtered() bool {
	for _, name := range []string{"test.run", "test.skip"} {
		if f := flag.Lookup(name); f != nil && f.Value.String() != "" {
			return true
		}
	}
	return MaySkipMissingTools()
}
