package fake

import (
	"crypto/ed25519"
	"crypto/rand"
	"crypto/sha512"
	"encoding/base32"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"time"

	"github.com/kubeopera/kubeopera-operator/internal/iofog"
)

// This file makes the default GET /nats/bootstrap answer real NATS material
// with the standard library only: nkeys (ed25519 keys in NATS' base32 +
// CRC16 text form) and NATS v2 JWTs signed with them, so the defaults parse
// with nats-io/jwt and nkeys. Tests that need specific material set it with
// WithBootstrap or SetBootstrap.

// nkey prefix bytes, from nats-io/nkeys.
const (
	prefixSeed     byte = 18 << 3
	prefixOperator byte = 14 << 3
	prefixAccount  byte = 0
	prefixUser     byte = 20 << 3
)

var nkeyEncoding = base32.StdEncoding.WithPadding(base32.NoPadding)

// nkey is an ed25519 key pair with its NATS type prefix.
type nkey struct {
	prefix byte
	priv   ed25519.PrivateKey
}

func newNkey(prefix byte) nkey {
	seed := make([]byte, ed25519.SeedSize)
	_, _ = rand.Read(seed) // never fails since Go 1.24
	return nkey{prefix: prefix, priv: ed25519.NewKeyFromSeed(seed)}
}

// public returns the public key text (O..., A..., U...).
func (k nkey) public() string {
	pub, _ := k.priv.Public().(ed25519.PublicKey)
	return encodeNkey(append([]byte{k.prefix}, pub...))
}

// seed returns the nkey seed text (SO..., SA..., SU...).
func (k nkey) seed() string {
	raw := []byte{prefixSeed | k.prefix>>5, (k.prefix & 31) << 3}
	return encodeNkey(append(raw, k.priv.Seed()...))
}

func encodeNkey(raw []byte) string {
	raw = binary.LittleEndian.AppendUint16(raw, crc16(raw))
	return nkeyEncoding.EncodeToString(raw)
}

// crc16 is CRC-16/XMODEM, the nkeys checksum.
func crc16(data []byte) uint16 {
	var crc uint16
	for _, b := range data {
		crc ^= uint16(b) << 8
		for range 8 {
			if crc&0x8000 != 0 {
				crc = crc<<1 ^ 0x1021
			} else {
				crc <<= 1
			}
		}
	}
	return crc
}

// natsClaims is the common part of NATS v2 JWT claims.
type natsClaims struct {
	ID       string `json:"jti"`
	IssuedAt int64  `json:"iat"`
	Issuer   string `json:"iss"`
	Name     string `json:"name"`
	Subject  string `json:"sub"`
	Nats     any    `json:"nats"`
}

// signJWT encodes claims as a NATS v2 JWT signed by issuer.
func signJWT(issuer nkey, claims natsClaims) (string, error) {
	claims.Issuer = issuer.public()
	claims.IssuedAt = time.Now().Unix()
	claims.ID = ""
	unsigned, err := json.Marshal(claims)
	if err != nil {
		return "", fmt.Errorf("encode claims: %w", err)
	}
	sum := sha512.Sum512_256(unsigned)
	claims.ID = nkeyEncoding.EncodeToString(sum[:])
	return encodeSigned(issuer, claims)
}

// encodeSigned encodes claims (their ID already set) as a JWT signed by issuer.
func encodeSigned(issuer nkey, claims any) (string, error) {
	payload, err := json.Marshal(claims)
	if err != nil {
		return "", fmt.Errorf("encode claims: %w", err)
	}
	header := base64.RawURLEncoding.EncodeToString([]byte(`{"typ":"JWT","alg":"ed25519-nkey"}`))
	toSign := header + "." + base64.RawURLEncoding.EncodeToString(payload)
	sig := ed25519.Sign(issuer.priv, []byte(toSign))
	return toSign + "." + base64.RawURLEncoding.EncodeToString(sig), nil
}

// unlimited is the NATS v2 limits block with every limit off.
var unlimited = map[string]any{
	"subs": -1, "data": -1, "payload": -1, "imports": -1, "exports": -1,
	"wildcards": true, "conn": -1, "leaf": -1,
}

// generateBootstrap returns operator, system account and system user
// material shaped like the Controller's bootstrap answer.
func generateBootstrap() (iofog.NatsBootstrap, error) {
	operator, account, user := newNkey(prefixOperator), newNkey(prefixAccount), newNkey(prefixUser)

	operatorJWT, err := signJWT(operator, natsClaims{
		Name: operatorName, Subject: operator.public(),
		Nats: map[string]any{"system_account": account.public(), "type": "operator", "version": 2},
	})
	if err != nil {
		return iofog.NatsBootstrap{}, err
	}
	accountJWT, err := signJWT(operator, natsClaims{
		Name: "SYS", Subject: account.public(),
		Nats: map[string]any{"limits": unlimited, "type": "account", "version": 2},
	})
	if err != nil {
		return iofog.NatsBootstrap{}, err
	}
	userJWT, err := signJWT(account, natsClaims{
		Name: "sys-admin-hub", Subject: user.public(),
		Nats: map[string]any{
			"pub": map[string]any{}, "sub": map[string]any{},
			"subs": -1, "data": -1, "payload": -1, "type": "user", "version": 2,
		},
	})
	if err != nil {
		return iofog.NatsBootstrap{}, err
	}

	return iofog.NatsBootstrap{
		OperatorJwt:            operatorJWT,
		OperatorPublicKey:      operator.public(),
		OperatorSeed:           operator.seed(),
		SystemAccountJwt:       accountJWT,
		SystemAccountPublicKey: account.public(),
		SysUserCredsBase64:     base64.StdEncoding.EncodeToString(FormatCreds(userJWT, user.seed())),
	}, nil
}

// FormatCreds returns a NATS user .creds file for jwt and seed, in the
// layout of nats-io/jwt FormatUserConfig.
func FormatCreds(jwt, seed string) []byte {
	return fmt.Appendf(nil, `-----BEGIN NATS USER JWT-----
%s
------END NATS USER JWT------

************************* IMPORTANT *************************
NKEY Seed printed below can be used to sign and prove identity.
NKEYs are sensitive and should be treated as secrets.

-----BEGIN USER NKEY SEED-----
%s
------END USER NKEY SEED------

*************************************************************
`, jwt, seed)
}
