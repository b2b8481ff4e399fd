package gitops

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"strconv"
	"time"

	"github.com/go-git/go-git/v5/plumbing/transport"
	"golang.org/x/net/proxy"
)

// go-git reads and writes an SSH session through the operation's context, but it makes the
// connection without it: after the TCP connect (sshDialTimeout) the SSH handshake has no
// bound, so a server that accepts and never sends its banner would hold the batch, its branch and
// a Git slot with it, past the Writer's timeout. The one hook go-git offers into that connection
// is its proxy dialer: an SSH operation is given a "proxy" of sshDeadlineScheme whose dialer
// connects as go-git would without one (directly, or through the proxy the environment names)
// and sets the operation's deadline on the connection, handshake included.

// sshDeadlineScheme is the proxy URL scheme of the deadline dialer.
const sshDeadlineScheme = "kubeopera-ssh-deadline"

func init() {
	proxy.RegisterDialerType(sshDeadlineScheme, func(u *url.URL, _ proxy.Dialer) (proxy.Dialer, error) {
		nanos, err := strconv.ParseInt(u.Query().Get("deadline"), 10, 64)
		if err != nil {
			return nil, fmt.Errorf("ssh deadline dialer: %w", err)
		}
		return deadlineDialer{deadline: time.Unix(0, nanos)}, nil
	})
}

// deadlineDialer connects as go-git does without a proxy and bounds the connection by deadline.
type deadlineDialer struct{ deadline time.Time }

func (d deadlineDialer) Dial(network, addr string) (net.Conn, error) {
	return d.DialContext(context.Background(), network, addr)
}

func (d deadlineDialer) DialContext(ctx context.Context, network, addr string) (net.Conn, error) {
	ctx, cancel := context.WithDeadline(ctx, d.deadline)
	defer cancel()
	conn, err := proxy.Dial(ctx, network, addr)
	if err != nil {
		return nil, err
	}
	if err := conn.SetDeadline(d.deadline); err != nil {
		return nil, errors.Join(err, conn.Close())
	}
	return conn, nil
}

// proxyOptions are the proxy options of an operation of a under ctx: for an SSH repository whose
// operation has a deadline, the deadline dialer; otherwise none (HTTP(S) requests carry their
// context themselves).
func (a Auth) proxyOptions(ctx context.Context) transport.ProxyOptions {
	deadline, ok := ctx.Deadline()
	if !a.ssh || !ok {
		return transport.ProxyOptions{}
	}
	q := url.Values{"deadline": {strconv.FormatInt(deadline.UnixNano(), 10)}}
	return transport.ProxyOptions{URL: (&url.URL{Scheme: sshDeadlineScheme, Host: "deadline", RawQuery: q.Encode()}).String()}
}
