package testfixture

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	. "github.com/onsi/gomega"
)

// Mods apply in order over the base; each call builds a new object.
func TestControlPlaneAppliesModsInOrder(t *testing.T) {
	g := NewWithT(t)
	cp := ControlPlane(Named("a"), InNamespace("ns"), WithoutNATS(), WithNATS(), WithNATSReplicas(3))
	g.Expect(cp.Name).To(Equal("a"))
	g.Expect(cp.Namespace).To(Equal("ns"))
	g.Expect(cp.Spec.Nats).To(BeNil(), "WithNATS after WithoutNATS wins")
	g.Expect(cp.Spec.Replicas.Nats).To(HaveValue(Equal(int32(3))))
	g.Expect(cp.Spec.NatsEnabled()).To(BeTrue())

	base := ControlPlane()
	g.Expect(base.Name).To(Equal(Name))
	g.Expect(base.Namespace).To(Equal(Namespace))
	g.Expect(base.UID).To(BeEmpty())
	g.Expect(base.Spec.Replicas.Nats).To(BeNil(), "a mod of an earlier call does not leak")
}

// The sample parses strictly and takes mods.
func TestSample(t *testing.T) {
	g := NewWithT(t)
	cp, err := Sample(InNamespace("demo"))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(cp.Name).To(Equal("pot"))
	g.Expect(cp.Namespace).To(Equal("demo"))
	g.Expect(cp.Spec.NatsEnabled()).To(BeTrue())
	g.Expect(cp.Spec.Auth.Bootstrap.PasswordSecretRef).NotTo(BeNil())
}

// Hold counts only what happens between Down and Up, lasts d, and brings the dependency back.
func TestOutageHold(t *testing.T) {
	g := NewWithT(t)
	var down atomic.Bool
	var attempts atomic.Int64
	attempts.Add(5) // before the outage: not counted
	o := Outage{
		Down:     func() error { down.Store(true); return nil },
		Up:       func() error { down.Store(false); return nil },
		Counters: []func() int64{attempts.Load},
	}
	const d = 50 * time.Millisecond
	w, err := o.Hold(context.Background(), d, func() {
		g.Expect(down.Load()).To(BeTrue(), "during runs while the dependency is away")
		attempts.Add(2)
	})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(down.Load()).To(BeFalse(), "back up after Hold")
	g.Expect(w.Counts).To(Equal([]int64{2}))
	g.Expect(w.Took).To(BeNumerically(">=", d))

	// A failed Down returns at once, without waiting or bringing anything up.
	up := false
	_, err = Outage{Down: func() error { return errors.New("no") }, Up: func() error { up = true; return nil }}.Hold(context.Background(), time.Hour, nil)
	g.Expect(err).To(MatchError(ContainSubstring("take the dependency down: no")))
	g.Expect(up).To(BeFalse())

	// The context ends the wait early.
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	w, err = Outage{Up: func() error { return errors.New("still down") }}.Hold(ctx, time.Hour, nil)
	g.Expect(err).To(MatchError(ContainSubstring("bring the dependency back: still down")))
	g.Expect(w.Took).To(BeNumerically("<", time.Minute))
}
