package chaos

import (
	"context"
	"errors"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"time"
)

// Mode is what a FaultProxy does with a connection.
type Mode int32

const (
	// Up forwards the connection to the target.
	Up Mode = iota
	// Down accepts and closes at once with a reset: the dependency is gone (crashed, restarting).
	Down
	// Hang accepts and holds the connection without a byte: the dependency accepts and never
	// answers.
	Hang
)

// FaultProxy is a TCP proxy on a loopback port in front of one dependency (a Git server, an API
// server, the Controller API), switched by the test between Up, Down and Hang. It counts the
// connections it accepts and the connections it could not forward because the target refused
// them (the target itself is down). While a dependency is Down or hanging, every request of a
// client needs a new connection (the open ones are closed at the switch), so the counts are the
// client's attempts: the measure of a hot loop. Connections of TLS clients pass through
// unchanged (the target's certificate for 127.0.0.1 holds for the proxy's address too).
type FaultProxy struct {
	l      net.Listener
	target string
	mode   atomic.Int32

	accepted    atomic.Int64
	unreachable atomic.Int64

	mu    sync.Mutex
	conns map[net.Conn]struct{}
	wg    sync.WaitGroup
}

// StartFaultProxy listens on a free loopback port and forwards to target (host:port).
func StartFaultProxy(target string) (*FaultProxy, error) {
	l, err := (&net.ListenConfig{}).Listen(context.Background(), "tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	p := &FaultProxy{l: l, target: target, conns: map[net.Conn]struct{}{}}
	p.wg.Go(p.serve)
	return p, nil
}

// Addr is the proxy's host:port.
func (p *FaultProxy) Addr() string { return p.l.Addr().String() }

// Accepted is the number of connections accepted so far.
func (p *FaultProxy) Accepted() int64 { return p.accepted.Load() }

// Unreachable is the number of connections that found the target refusing.
func (p *FaultProxy) Unreachable() int64 { return p.unreachable.Load() }

// Set switches the mode; every open connection is closed, so the next request of a client
// meets the new mode.
func (p *FaultProxy) Set(m Mode) {
	p.mode.Store(int32(m))
	p.mu.Lock()
	defer p.mu.Unlock()
	for c := range p.conns {
		_ = c.Close()
	}
}

// Close stops listening and closes every connection.
func (p *FaultProxy) Close() {
	_ = p.l.Close()
	p.Set(Down)
	p.wg.Wait()
}

func (p *FaultProxy) track(c net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.conns == nil {
		return false
	}
	p.conns[c] = struct{}{}
	return true
}

func (p *FaultProxy) untrack(c net.Conn) {
	p.mu.Lock()
	delete(p.conns, c)
	p.mu.Unlock()
	_ = c.Close()
}

func (p *FaultProxy) serve() {
	for {
		c, err := p.l.Accept()
		if errors.Is(err, net.ErrClosed) {
			return
		}
		if err != nil {
			continue
		}
		p.accepted.Add(1)
		switch Mode(p.mode.Load()) {
		case Down:
			if tc, ok := c.(*net.TCPConn); ok {
				_ = tc.SetLinger(0) // a reset, as from a port nobody listens on any more
			}
			_ = c.Close()
		case Hang:
			if p.track(c) {
				p.wg.Go(func() { _, _ = io.Copy(io.Discard, c); p.untrack(c) })
			}
		default:
			if p.track(c) {
				p.wg.Go(func() { p.forward(c) })
			}
		}
	}
}

func (p *FaultProxy) forward(c net.Conn) {
	defer p.untrack(c)
	d := net.Dialer{Timeout: 5 * time.Second}
	t, err := d.DialContext(context.Background(), "tcp", p.target)
	if err != nil {
		p.unreachable.Add(1)
		return
	}
	if !p.track(t) {
		_ = t.Close()
		return
	}
	defer p.untrack(t)
	done := make(chan struct{}, 2)
	go func() { _, _ = io.Copy(t, c); done <- struct{}{} }()
	go func() { _, _ = io.Copy(c, t); done <- struct{}{} }()
	<-done // one direction ended: close both (the deferred untracks)
}
