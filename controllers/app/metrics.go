package app

import (
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	kubeoperav1alpha1 "github.com/kubeopera/kubeopera-operator/api/kubeopera/v1alpha1"
	"github.com/kubeopera/kubeopera-operator/internal/metrics"
)

// The reconciler's metrics (internal/metrics) are recorded from this file only: once per pass,
// from the status it ends with, and when the app is gone.

// observeApp records the pass's placement outcome (the Ready reason) and whether the app is
// Synced, from the status the pass computed.
func observeApp(app *kubeoperav1alpha1.KubeOperaApp) {
	p := metrics.AppPass{Namespace: app.Namespace, Name: app.Name, Commit: app.Status.Commit}
	if c := findCondition(app, kubeoperav1alpha1.ConditionReady); c != nil {
		p.ReadyReason = c.Reason
	}
	if c := findCondition(app, kubeoperav1alpha1.ConditionSynced); c != nil {
		p.Synced, p.SyncedReason = c.Status == metav1.ConditionTrue, c.Reason
	}
	metrics.ObserveAppPass(p)
}

// forgetAppIfGone drops the app from the metrics when the read found it gone.
func forgetAppIfGone(key types.NamespacedName, err error) {
	if apierrors.IsNotFound(err) {
		metrics.ForgetApp(key.Namespace, key.Name)
	}
}
