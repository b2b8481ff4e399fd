package pki

import (
	"bytes"
	"crypto/x509"
	"net"
	"slices"
	"time"
)

// renewalNumerator/renewalDenominator is the share of a certificate's lifetime
// after which the operator renews a leaf it issued: two thirds, as cert-manager does by
// default, so that a renewal that fails keeps being retried for the last third
// (1.67 years of a 5-year certificate) before anything expires, and the
// 30-day expiry alert fires only when renewal has been failing for a long time.
const (
	renewalNumerator   = 2
	renewalDenominator = 3
)

// RenewalTime is when a certificate valid from notBefore to notAfter is due for
// renewal: two thirds into its lifetime. An empty or inverted lifetime is due at
// notBefore (that is, at once).
func RenewalTime(notBefore, notAfter time.Time) time.Time {
	lifetime := notAfter.Sub(notBefore)
	if lifetime <= 0 {
		return notBefore
	}
	return notBefore.Add(lifetime / renewalDenominator * renewalNumerator)
}

// RenewalReason says why a leaf certificate must be issued again; the empty
// reason means it is still good.
type RenewalReason string

// The renewal reasons of CheckLeaf, in the order they are checked.
const (
	// RenewalNotNeeded: the leaf is valid, signed by the CA, covers the
	// hosts and is not yet due.
	RenewalNotNeeded RenewalReason = ""
	// RenewalIssuerChanged: the leaf is not signed by the given CA (the CA
	// Secret was replaced, by the user or because it was deleted).
	RenewalIssuerChanged RenewalReason = "IssuerChanged"
	// RenewalHostsChanged: the leaf's subject alternative names differ from
	// the hosts the operands need now (an address or replica count changed).
	RenewalHostsChanged RenewalReason = "HostsChanged"
	// RenewalDue: now is at or past RenewalTime of the leaf.
	RenewalDue RenewalReason = "Due"
)

// Renewal is the decision of CheckLeaf.
type Renewal struct {
	// Reason is RenewalNotNeeded when the leaf is kept.
	Reason RenewalReason
	// At is the leaf's RenewalTime: when a kept leaf falls due. It is set
	// for every decision, so a caller can schedule the next check.
	At time.Time
}

// Needed reports whether the leaf must be issued again.
func (r Renewal) Needed() bool { return r.Reason != RenewalNotNeeded }

// CheckLeaf decides whether leaf, a certificate the operator issued, must be
// issued again at now: when ca did not sign it, when its subject alternative
// names are not exactly those GenerateLeaf would write for hosts, or when it
// is due (RenewalTime). It is pure: the clock is now, and nothing but the
// arguments is read. A nil leaf or ca is a programming error and is reported
// as RenewalIssuerChanged, so the caller issues a fresh leaf rather than
// trusting an unknown one.
func CheckLeaf(leaf, ca *x509.Certificate, hosts []string, now time.Time) Renewal {
	if leaf == nil || ca == nil {
		return Renewal{Reason: RenewalIssuerChanged, At: now}
	}
	at := RenewalTime(leaf.NotBefore, leaf.NotAfter)
	switch {
	case !SignedBy(leaf, ca):
		return Renewal{Reason: RenewalIssuerChanged, At: at}
	case !coversExactly(leaf, hosts):
		return Renewal{Reason: RenewalHostsChanged, At: at}
	case !now.Before(at):
		return Renewal{Reason: RenewalDue, At: at}
	}
	return Renewal{Reason: RenewalNotNeeded, At: at}
}

// SignedBy reports whether ca issued leaf: the leaf names ca's subject as its
// issuer and carries a valid signature of ca's key. Validity periods are not
// looked at.
func SignedBy(leaf, ca *x509.Certificate) bool {
	if leaf == nil || ca == nil {
		return false
	}
	return bytes.Equal(leaf.RawIssuer, ca.RawSubject) && leaf.CheckSignatureFrom(ca) == nil
}

// coversExactly reports whether the leaf's DNS and IP SANs are the set that
// GenerateLeaf writes for hosts (order does not matter).
func coversExactly(leaf *x509.Certificate, hosts []string) bool {
	dnsNames, ips := subjectAltNames(hosts)
	if !sameStrings(leaf.DNSNames, dnsNames) {
		return false
	}
	return sameStrings(ipStrings(leaf.IPAddresses), ipStrings(ips))
}

func ipStrings(ips []net.IP) []string {
	out := make([]string, len(ips))
	for i, ip := range ips {
		out[i] = ip.String()
	}
	return out
}

func sameStrings(a, b []string) bool {
	a, b = slices.Clone(a), slices.Clone(b)
	slices.Sort(a)
	slices.Sort(b)
	return slices.Equal(slices.Compact(a), slices.Compact(b))
}
