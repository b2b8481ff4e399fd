package metrics

import (
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// AppPass is what one KubeOperaApp pass ended with, as the metrics need it. It carries no label
// value per app: the tracker keys its state by namespace and name but exports only aggregates.
type AppPass struct {
	Namespace, Name string
	// ReadyReason is the reason of the Ready condition ("" when there is none yet).
	ReadyReason string
	// Commit is status.commit, the last pushed commit.
	Commit string
	// Synced is true when the Synced condition is True for Commit.
	Synced bool
	// SyncedReason is the reason of the Synced condition (why it is not Synced).
	SyncedReason string
}

// ObserveAppPass records one KubeOperaApp pass: its placement outcome, whether it is Synced, and
// the sync lag when Flux has just applied a commit this process saw pushed.
func ObserveAppPass(p AppPass) { std.observeAppPass(p) }

func (s *set) observeAppPass(p AppPass) {
	if p.ReadyReason != "" {
		s.appPlacements.WithLabelValues(p.ReadyReason).Inc()
	}
	if lag, ok := s.apps.observe(p); ok {
		s.appSyncLag.Observe(lag.Seconds())
	}
}

// ForgetApp drops the app from the not-Synced count (it was deleted).
func ForgetApp(namespace, name string) { std.apps.forget(namespace, name) }

// appTracker remembers, per app, the commit it last saw and since when, and whether the app is
// Synced; it is a collector of the kubeopera_apps_not_synced gauge (by reason).
type appTracker struct {
	now  func() time.Time
	desc *prometheus.Desc

	mu   sync.Mutex
	apps map[controlPlaneKey]*appState
}

type appState struct {
	commit     string
	commitSeen time.Time
	// lagDone is true once the commit's lag was observed (or cannot be: it was already applied
	// when this process first saw the app).
	lagDone      bool
	synced       bool
	syncedReason string
}

func newAppTracker(now func() time.Time) *appTracker {
	if now == nil {
		now = time.Now
	}
	return &appTracker{
		now: now,
		desc: prometheus.NewDesc(AppsNotSynced,
			"KubeOperaApps whose Synced condition is not True for their last pushed commit, by reason.",
			[]string{reasonLabel}, nil),
		apps: map[controlPlaneKey]*appState{},
	}
}

// observe updates the app's state and returns the sync lag when this pass is the first to see
// the commit applied.
func (t *appTracker) observe(p AppPass) (time.Duration, bool) {
	now := t.now()
	key := controlPlaneKey{p.Namespace, p.Name}
	t.mu.Lock()
	defer t.mu.Unlock()
	st, known := t.apps[key]
	if !known {
		st = &appState{commit: p.Commit, commitSeen: now, lagDone: p.Synced || p.Commit == ""}
		t.apps[key] = st
	}
	if p.Commit != st.commit {
		st.commit, st.commitSeen, st.lagDone = p.Commit, now, p.Commit == ""
	}
	st.synced, st.syncedReason = p.Synced, p.SyncedReason
	if p.Synced && !st.lagDone {
		st.lagDone = true
		return now.Sub(st.commitSeen), true
	}
	return 0, false
}

func (t *appTracker) forget(namespace, name string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	delete(t.apps, controlPlaneKey{namespace, name})
}

// Describe implements prometheus.Collector.
func (t *appTracker) Describe(ch chan<- *prometheus.Desc) { ch <- t.desc }

// Collect implements prometheus.Collector.
func (t *appTracker) Collect(ch chan<- prometheus.Metric) {
	t.mu.Lock()
	counts := map[string]int{}
	for _, st := range t.apps {
		if !st.synced {
			reason := st.syncedReason
			if reason == "" {
				reason = "Unknown"
			}
			counts[reason]++
		}
	}
	t.mu.Unlock()
	for reason, n := range counts {
		ch <- prometheus.MustNewConstMetric(t.desc, prometheus.GaugeValue, float64(n), reason)
	}
}

// Outcomes of a vCluster event that concerns an app, under the per-Tenant pacing of the App
// Controller: the app is enqueued at once (a token was free), deferred (it waits for a token),
// coalesced (it already waits: the event adds nothing), or released (a waiting app enqueued as a
// token came back). Passes started by vCluster events are enqueued plus released.
const (
	VClusterEventEnqueued  = "enqueued"
	VClusterEventDeferred  = "deferred"
	VClusterEventCoalesced = "coalesced"
	VClusterEventReleased  = "released"
)

// CountVClusterEvent counts one vCluster event's outcome (a VClusterEvent constant).
func CountVClusterEvent(outcome string) { std.appEvents.WithLabelValues(outcome).Inc() }

// Answers of the folder comparison a Kustomization event of a Synced app asks (the revision
// Flux applied holds the app's folder as the app's commit does): unchanged (the event starts no
// pass), changed (a pass), unanswered (a pass decides: the comparison failed, or the Git
// writer's clone stayed in use).
const (
	FolderUnchanged  = "unchanged"
	FolderChanged    = "changed"
	FolderUnanswered = "unanswered"
)

// CountFolderCheck counts one folder comparison's answer (a Folder constant).
func CountFolderCheck(answer string) { std.folderCheck.WithLabelValues(answer).Inc() }
