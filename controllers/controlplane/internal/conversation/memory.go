package conversation

import (
	"math"
	"slices"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	datasancev3 "github.com/kubeopera/kubeopera-operator/api/datasance/v3"
	"github.com/kubeopera/kubeopera-operator/internal/iofog"
)

// Memory is what the operator remembers of each ControlPlane's Controller from one pass to the
// next: the Controller processes seen holding the registration (registrations) and the
// credentials the Controller rejected (loginGate). It lives as long as the Reconciler that holds
// it; its zero value is ready to use. Forget drops a ControlPlane that is gone.
type Memory struct {
	registered registrations
	logins     loginGate
}

// Forget drops everything remembered of the ControlPlane key (deleted, or not found).
func (m *Memory) Forget(key types.NamespacedName) {
	m.registered.forget(key)
	m.logins.forget(key)
}

// keyOf is the memory's key of cp.
func keyOf(cp *datasancev3.ControlPlane) types.NamespacedName {
	return types.NamespacedName{Namespace: cp.Namespace, Name: cp.Name}
}

// controllerBoot is the Controller process start an answer of GET /status implies (its clock's
// timestamp minus its uptime), in Unix seconds. It identifies the process that answered, which
// through the Service may be any pod of the Controller.
func controllerBoot(st *iofog.ControllerStatus) float64 {
	return float64(st.Timestamp)/1000 - st.UptimeSec
}

// bootTolerance absorbs rounding between the timestamp (milliseconds) and the uptime of one
// /status answer, which the Controller computes at the same instant; no Controller restarts
// faster.
const bootTolerance = time.Second

// maxKnownProcesses bounds the Controller processes remembered per ControlPlane: the pods of a
// replicated Controller and those of its last rollouts; the oldest is forgotten first (and read
// back again if it ever answers).
const maxKnownProcesses = 16

// registrations is the reconciler's memory of each ControlPlane's Controller: the processes
// (pods, by start time) seen to hold the registration, and when it was last verified. A
// Controller that loses its state does so by a process restart (SQLite on the pod's own
// filesystem, a wiped volume), so a process seen holding the registration needs no further
// check; a process not seen before is asked (the registration read back) once. It is memory
// only: no write in steady state; after an operator restart the first verification reads the
// registration back once.
type registrations struct {
	mu sync.Mutex
	m  map[types.NamespacedName]registrationRecord
}

type registrationRecord struct {
	uid types.UID
	// boots are the start times of the processes seen holding the registration, oldest first.
	boots    []float64
	verified time.Time
}

// due reports whether the ControlPlane's registration should be verified at now.
func (r *registrations) due(cp *datasancev3.ControlPlane, now time.Time, interval time.Duration) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	rec, ok := r.m[keyOf(cp)]
	return !ok || rec.uid != cp.UID || now.Sub(rec.verified) >= interval
}

// knownProcess reports whether st comes from a Controller process seen holding the
// registration, and if so records the verification.
func (r *registrations) knownProcess(cp *datasancev3.ControlPlane, st *iofog.ControllerStatus, now time.Time) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if !r.seenLocked(cp, st) {
		return false
	}
	key := keyOf(cp)
	rec := r.m[key]
	rec.verified = now
	r.m[key] = rec
	return true
}

// seen reports whether st comes from a Controller process seen holding the registration, without
// recording a verification (knownProcess does).
func (r *registrations) seen(cp *datasancev3.ControlPlane, st *iofog.ControllerStatus) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.seenLocked(cp, st)
}

func (r *registrations) seenLocked(cp *datasancev3.ControlPlane, st *iofog.ControllerStatus) bool {
	rec, ok := r.m[keyOf(cp)]
	return ok && rec.uid == cp.UID && slices.ContainsFunc(rec.boots, sameBoot(controllerBoot(st)))
}

// record remembers that the process that answered st holds the registration (it was just
// registered with, or read back from, the Controller).
func (r *registrations) record(cp *datasancev3.ControlPlane, st *iofog.ControllerStatus, now time.Time) {
	if st == nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.m == nil {
		r.m = map[types.NamespacedName]registrationRecord{}
	}
	key := keyOf(cp)
	rec := r.m[key]
	if rec.uid != cp.UID {
		rec = registrationRecord{uid: cp.UID}
	}
	if boot := controllerBoot(st); !slices.ContainsFunc(rec.boots, sameBoot(boot)) {
		rec.boots = append(rec.boots, boot)
		if len(rec.boots) > maxKnownProcesses {
			rec.boots = slices.Delete(rec.boots, 0, len(rec.boots)-maxKnownProcesses)
		}
	}
	rec.verified = now
	r.m[key] = rec
}

func sameBoot(boot float64) func(float64) bool {
	return func(b float64) bool { return math.Abs(b-boot) <= bootTolerance.Seconds() }
}

// forget drops a deleted ControlPlane.
func (r *registrations) forget(key types.NamespacedName) {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.m, key)
}

// The login lockout guard (docs/controlplane.md#login-lockout). The Controller locks an account
// for 15 minutes after 5 failed logins, the bootstrap admin included; the operator makes at most
// MaxRejectedLogins rejected logins in a row (one below the Controller's limit) and at most one
// per LoginRetryInterval while the credentials stay the same.
const (
	// LoginRetryInterval is how long rejected, unchanged credentials wait before the one slow
	// retry (a Controller whose account was fixed out of band, or that created its bootstrap
	// admin late, is found again).
	LoginRetryInterval = 10 * time.Minute
	// MaxRejectedLogins bounds the rejected logins in a row that slow retries may reach; after
	// that only changed credentials are tried.
	MaxRejectedLogins = 4
)

// loginGate is the reconciler's record of rejected credentials, per ControlPlane: a fingerprint
// of the credentials tried (Credentials.Fingerprint), how many logins in a row the Controller
// rejected and when the last one was. It lives in memory, which is never stale within the
// process, and in status.controller.rejectedLogins, which survives an operator restart: a
// ControlPlane the memory knows nothing about starts from its status.
type loginGate struct {
	mu sync.Mutex
	m  map[types.NamespacedName]loginRecord
}

type loginRecord struct {
	uid types.UID
	// creds is the fingerprint of the credentials last rejected.
	creds string
	// inARow counts the rejected logins since the last successful one.
	inARow int32
	last   time.Time
}

// record is the memory of cp's rejected logins, from its status when the memory has none.
// The caller holds g.mu.
func (g *loginGate) record(cp *datasancev3.ControlPlane) (loginRecord, bool) {
	if rec, ok := g.m[keyOf(cp)]; ok && rec.uid == cp.UID {
		return rec, true
	}
	if st := cp.Status.Controller.RejectedLogins; st != nil && st.Count > 0 {
		return loginRecord{uid: cp.UID, creds: st.Credentials, inARow: st.Count, last: st.LastRejection.Time}, true
	}
	return loginRecord{}, false
}

// held reports whether a login with creds must not be tried at now, and if so how long until
// the next slow retry (0: none left; only a change of the credentials is tried).
func (g *loginGate) held(cp *datasancev3.ControlPlane, creds string, now time.Time) (time.Duration, bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	rec, ok := g.record(cp)
	if !ok || rec.creds != creds {
		return 0, false
	}
	if rec.inARow >= MaxRejectedLogins {
		return 0, true
	}
	if wait := rec.last.Add(LoginRetryInterval).Sub(now); wait > 0 {
		return wait, true
	}
	return 0, false
}

// rejected records a rejected login with creds, in memory and in cp's status, and returns the
// rejections in a row.
func (g *loginGate) rejected(cp *datasancev3.ControlPlane, creds string, now time.Time) int {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.m == nil {
		g.m = map[types.NamespacedName]loginRecord{}
	}
	rec, _ := g.record(cp)
	rec.uid = cp.UID
	// The status keeps whole seconds: a restarted operator may retry up to a second early.
	rec.creds, rec.last = creds, now
	rec.inARow++
	g.m[keyOf(cp)] = rec
	cp.Status.Controller.RejectedLogins = &datasancev3.RejectedLogins{
		Count: rec.inARow, LastRejection: metav1.Time{Time: rec.last}, Credentials: creds,
	}
	return int(rec.inARow)
}

// succeeded forgets the rejections of cp, in memory and in its status.
func (g *loginGate) succeeded(cp *datasancev3.ControlPlane) {
	g.forget(keyOf(cp))
	cp.Status.Controller.RejectedLogins = nil
}

// forget drops a ControlPlane from the memory.
func (g *loginGate) forget(key types.NamespacedName) {
	g.mu.Lock()
	defer g.mu.Unlock()
	delete(g.m, key)
}
