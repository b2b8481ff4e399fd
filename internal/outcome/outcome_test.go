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
		{name: "wait requeues without error", err: Wait("TenantAPIUnavailable", 5*time.Minute, "waiting"), wantRequeue: 5 * time.Minute, wantReason: "TenantAPIUnavailable"},
		{name: "hand-off ends the pass without error or requeue", err: fmt.Errorf("push: %w", Pending("GitPushPending", errCause)), wantReason: "GitPushPending"},
		{name: "wait without delay is not dropped", err: Wait("X", 0, "waiting"), wantErr: true, wantReason: "X"},
		{name: "stop is terminal", err: Stop("InvalidSpec", errCause), wantErr: true, wantTerminal: true, wantReason: "InvalidSpec"},
		{name: "terminal wait is terminal", err: reconcile.TerminalError(Wait("X", time.Second, "waiting")), wantErr: true, wantTerminal: true, wantReason: "X"},
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

func TestClassify(t *testing.T) {
	stopped := func() error { _, err := Result(Stop("R", errCause)); return err }()
	cases := []struct {
		name                    string
		err                     error
		terminal, wait, pending bool
	}{
		{name: "nil"},
		{name: "plain", err: errCause},
		{name: "retry", err: Retry("R", errCause)},
		{name: "wait", err: Wait("R", time.Second, "waiting"), wait: true},
		{name: "wrapped wait", err: fmt.Errorf("step: %w", Wait("R", time.Second, "waiting")), wait: true},
		{name: "pending", err: Pending("R", errCause), pending: true},
		{name: "stop", err: Stop("R", errCause), terminal: true},
		{name: "stop after Result", err: stopped, terminal: true},
		{name: "retry wrapping a stop", err: Retry("R", Stop("S", errCause))},
		{name: "controller-runtime terminal", err: reconcile.TerminalError(errCause), terminal: true},
	}
	for _, tc := range cases {
		if got := IsTerminal(tc.err); got != tc.terminal {
			t.Errorf("%s: IsTerminal = %v, want %v", tc.name, got, tc.terminal)
		}
		if got := IsWait(tc.err); got != tc.wait {
			t.Errorf("%s: IsWait = %v, want %v", tc.name, got, tc.wait)
		}
		if got := IsPending(tc.err); got != tc.pending {
			t.Errorf("%s: IsPending = %v, want %v", tc.name, got, tc.pending)
		}
	}
}

func TestErrorText(t *testing.T) {
	e := Retry("R", errCause)
	if e.Error() != "cause" {
		t.Errorf("Error() = %q, want the cause's text", e.Error())
	}
	if !errors.Is(e, errCause) {
		t.Error("errors.Is does not reach the cause")
	}
	if got := Wait("R", time.Second, "Waiting for an address.").Error(); got != "Waiting for an address." {
		t.Errorf("a wait's Error() = %q, want its message", got)
	}
	if got := (&Error{Reason: "OnlyReason"}).Error(); got != "OnlyReason" {
		t.Errorf("Error() without a cause = %q", got)
	}
	if got := Stop("R", errCause).On("Ready").Condition; got != "Ready" {
		t.Errorf("On: Condition = %q", got)
	}
	for n, want := range map[Next]string{Backoff: "Backoff", RequeueAfter: "RequeueAfter", WaitForChange: "WaitForChange", HandOff: "HandOff", Next(9): "Unknown"} {
		if n.String() != want {
			t.Errorf("%d.String() = %q", n, n.String())
		}
	}
}
