package apptest

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
)

// ConnProxy is a TCP proxy on loopback in front of one address. It counts the connections
// clients hold open through it, so a test sees what the operator keeps open to a server from
// the server's side, without looking into the operator's transport. Bytes are copied as they
// are: TLS passes through, and a server certificate for 127.0.0.1 still verifies.
type ConnProxy struct {
	ln     net.Listener
	target string

	mu     sync.Mutex
	open   map[net.Conn]bool
	opened int
	wg     sync.WaitGroup
}

// StartConnProxy listens on a free loopback port and forwards every connection to target
// (host:port).
func StartConnProxy(target string) (*ConnProxy, error) {
	ln, err := (&net.ListenConfig{}).Listen(context.Background(), "tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("listen: %w", err)
	}
	p := &ConnProxy{ln: ln, target: target, open: map[net.Conn]bool{}}
	p.wg.Add(1)
	go p.accept()
	return p, nil
}

// Addr is the proxy's host:port.
func (p *ConnProxy) Addr() string { return p.ln.Addr().String() }

// Open is the number of client connections open now.
func (p *ConnProxy) Open() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.open)
}

// Opened is the number of client connections accepted so far.
func (p *ConnProxy) Opened() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.opened
}

// Stop closes the listener and every connection.
func (p *ConnProxy) Stop() {
	_ = p.ln.Close()
	p.mu.Lock()
	for c := range p.open {
		_ = c.Close()
	}
	p.mu.Unlock()
	p.wg.Wait()
}

func (p *ConnProxy) accept() {
	defer p.wg.Done()
	for {
		c, err := p.ln.Accept()
		if errors.Is(err, net.ErrClosed) {
			return
		}
		if err != nil {
			continue
		}
		p.mu.Lock()
		p.open[c] = true
		p.opened++
		p.mu.Unlock()
		p.wg.Add(1)
		go p.serve(c)
	}
}

// serve copies both ways until either side closes, then closes both.
func (p *ConnProxy) serve(c net.Conn) {
	defer p.wg.Done()
	defer func() {
		_ = c.Close()
		p.mu.Lock()
		delete(p.open, c)
		p.mu.Unlock()
	}()
	up, err := (&net.Dialer{}).DialContext(context.Background(), "tcp", p.target)
	if err != nil {
		return
	}
	defer func() { _ = up.Close() }()
	done := make(chan struct{}, 2)
	pipe := func(dst, src net.Conn) {
		_, _ = io.Copy(dst, src)
		done <- struct{}{}
	}
	go pipe(up, c)
	go pipe(c, up)
	<-done // one side closed: close both, which ends the other copy
	_ = c.Close()
	_ = up.Close()
	<-done
}
