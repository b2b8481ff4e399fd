package testfixture

import (
	"context"
	"fmt"
	"time"
)

// Outage is a dependency a test takes away and brings back while the operator works (a fault
// proxy set Down or Hang, an API server stopped, a Controller double resetting every
// connection), with the counters of the attempts the operator makes against it.
type Outage struct {
	// Down takes the dependency away. Nil when the test took it away earlier (to see the
	// operator reach its failing state first): the measured window then starts with Hold.
	Down func() error
	// Up brings the dependency back.
	Up func() error
	// Counters count what the operator does against the dependency (connections accepted,
	// requests served, objects written); each only ever grows.
	Counters []func() int64
}

// Window is what Hold measured while the dependency was away.
type Window struct {
	// Took is how long the dependency was away, from the end of Down to the start of Up.
	Took time.Duration
	// Counts are how much each of Outage.Counters grew meanwhile, in the same order.
	Counts []int64
}

// Hold takes the dependency down, runs during (if not nil) while it is away, waits until d has
// passed since it went down (the fault's length, chosen by the test, not a synchronisation) or
// ctx is done, reads the counters and brings the dependency back. It returns the window even
// when Up fails; when Down fails it returns at once.
func (o Outage) Hold(ctx context.Context, d time.Duration, during func()) (Window, error) {
	if o.Down != nil {
		if err := o.Down(); err != nil {
			return Window{}, fmt.Errorf("take the dependency down: %w", err)
		}
	}
	begin := time.Now()
	before := o.count()
	if during != nil {
		during()
	}
	select {
	case <-time.After(d - time.Since(begin)):
	case <-ctx.Done():
	}
	w := Window{Took: time.Since(begin), Counts: o.count()}
	for i := range w.Counts {
		w.Counts[i] -= before[i]
	}
	if err := o.Up(); err != nil {
		return w, fmt.Errorf("bring the dependency back: %w", err)
	}
	return w, nil
}

func (o Outage) count() []int64 {
	n := make([]int64, len(o.Counters))
	for i, c := range o.Counters {
		n[i] = c()
	}
	return n
}
