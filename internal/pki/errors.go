package pki

import "errors"

// Sentinel errors of ParseKeyPair, ParseCA and GenerateLeaf. They are wrapped
// with details; classify them with errors.Is, e.g. to choose a condition reason.
var (
	// ErrInvalidPEM: no PEM block of the expected kind, or its content does
	// not parse as a certificate or private key.
	ErrInvalidPEM = errors.New("invalid PEM")
	// ErrUnsupportedKey: the key (or the certificate's public key) is not
	// RSA, or is encrypted. The router image reads PKCS#1 RSA keys only.
	ErrUnsupportedKey = errors.New("unsupported private key")
	// ErrKeyMismatch: the private key does not belong to the certificate.
	ErrKeyMismatch = errors.New("private key does not match certificate")
	// ErrNotCA: the certificate may not sign other certificates (it is not
	// a CA or lacks the certSign key usage).
	ErrNotCA = errors.New("certificate is not a CA")
)
