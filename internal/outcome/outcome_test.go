package outcome

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

var errCause = errors.New("cause")

func TestResult(t *testing.T) {
	cases := []struct {
		name         string
		err          error
		wantRequeue  time.Duration
		wantErr      bool
		wantTerminal bool
		wantReason   string
	}{
		{name: "nil is success", err: nil},
		{name: "unclassified error backs off", err: errCause, wantErr: true},
		{name: "retry backs off", err: Retry("GitPushFailed", errCause), wantErr: true, wantReason: "GitPushFailed"},
		{name: "wrapped retry backs off", err: fmt.Errorf("step: %w", Retry("GitPushFailed", errCause)), wantErr: true, wantReason: "GitPushFailed"},
		{name: "wait requeues without error", err: Wait("TenantAPIUnavailable", 5*time.Minute, errCause), wantRequeue: 5 * time.Minute, wantReason: "TenantAPIUnavailable"},
		{name: "wait without delay is not dropped", err: Wait("X", 0, errCause), wantErr: true, wantReason: "X"},
		{name: "stop is terminal", err: Stop("InvalidSpec", errCause), wantErr: true, wantTerminal: true, wantReason: "InvalidSpec"},
		{name: "terminal stays terminal", err: Terminal("InvalidSpec", errCause), wantErr: true, wantTerminal: true, wantReason: "InvalidSpec"},
		{name: "terminal wait is terminal", err: reconcile.TerminalError(Wait("X", time.Second, errCause)), wantErr: true, wantTerminal: true, wantReason: "X"},
		{name: "joined keeps the first reason", err: errors.Join(Retry("A", errCause), Stop("B", errCause)), wantErr: true, wantTerminal: false, wantReason: "A"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			res, err := Result(tc.err)
			if res.RequeueAfter != tc.wantRequeue {
				t.Errorf("RequeueAfter = %v, want %v", res.RequeueAfter, tc.wantRequeue)
			}
			if (err != nil) != tc.wantErr {
				t.Fatalf("err = %v, want error %v", err, tc.wantErr)
			}
			if got := errors.Is(err, reconcile.TerminalError(nil)); got != tc.wantTerminal {
				t.Errorf("returned error terminal = %v, want %v", got, tc.wantTerminal)
			}
			if err != nil && !errors.Is(err, errCause) && tc.err != nil && errors.Is(tc.err, errCause) {
				t.Errorf("the returned error lost its cause: %v", err)
			}
			reason, ok := ReasonOf(tc.err)
			if reason != tc.wantReason || ok != (tc.wantReason != "") {
				t.Errorf("ReasonOf = %q, %v; want %q", reason, ok, tc.wantReason)
			}
		})
	}
}

func TestIsTerminal(t *testing.T) {
	cases := []struct {
		name string
		err  error
		want bool
	}{
		{"nil", nil, false},
		{"plain", errCause, false},
		{"retry", Retry("R", errCause), false},
		{"wait", Wait("R", time.Second, errCause), false},
		{"stop before Result", Stop("R", errCause), false},
		{"stop after Result", func() error { _, err := Result(Stop("R", errCause)); return err }(), true},
		{"stripped terminal", StripTerminal(Terminal("R", errCause)), false},
		{"terminal", Terminal("R", errCause), true},
		{"controller-runtime terminal", reconcile.TerminalError(errCause), true},
	}
	for _, tc := range cases {
		if got := IsTerminal(tc.err); got != tc.want {
			t.Errorf("%s: IsTerminal = %v, want %v", tc.name, got, tc.want)
		}
	}
}

func TestFailureWrapsItsCause(t *testing.T) {
	f := Retry("R", errCause)
	if f.Error() != "cause" {
		t.Errorf("Error() = %q, want the cause's text", f.Error())
	}
	if !errors.Is(f, errCause) {
		t.Error("errors.Is does not reach the cause")
	}
	if got := (&Failure{Reason: "OnlyReason"}).Error(); got != "OnlyReason" {
		t.Errorf("Error() without a cause = %q", got)
	}
	var f2 *Failure
	if stripped := StripTerminal(Terminal("R", errCause)); !errors.As(stripped, &f2) || f2.Reason != "R" {
		t.Errorf("StripTerminal lost the Failure: %#v", stripped)
	}
	if errors.Is(StripTerminal(Terminal("R", errCause)), reconcile.TerminalError(nil)) {
		t.Error("StripTerminal kept the TerminalError wrapper")
	}
	if StripTerminal(errCause) != errCause { //nolint:errorlint // the very same error, not one wrapping it
		t.Error("StripTerminal changed a non-terminal error")
	}
	for n, want := range map[Next]string{Backoff: "Backoff", RequeueAfter: "RequeueAfter", WaitForChange: "WaitForChange", Next(9): "Unknown"} {
		if n.String() != want {
			t.Errorf("%d.String() = %q", n, n.String())
		}
	}
}
