package fake

import (
	"bytes"
	"crypto/ed25519"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"regexp"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
)

func TestCRC16IsXModem(t *testing.T) {
	NewWithT(t).Expect(crc16([]byte("123456789"))).To(Equal(uint16(0x31C3)))
}

// decodeNkey checks the checksum and returns prefix byte(s) and payload.
func decodeNkey(g Gomega, text string) []byte {
	raw, err := nkeyEncoding.DecodeString(text)
	g.ExpectWithOffset(1, err).NotTo(HaveOccurred())
	body, sum := raw[:len(raw)-2], binary.LittleEndian.Uint16(raw[len(raw)-2:])
	g.ExpectWithOffset(1, crc16(body)).To(Equal(sum), "checksum of %s", text)
	return body
}

// verifyJWT checks the signature against the issuer and returns the claims.
func verifyJWT(g Gomega, token string) map[string]any {
	parts := strings.Split(token, ".")
	g.ExpectWithOffset(1, parts).To(HaveLen(3))
	payload, err := base64.RawURLEncoding.DecodeString(parts[1])
	g.ExpectWithOffset(1, err).NotTo(HaveOccurred())
	var claims map[string]any
	g.ExpectWithOffset(1, json.Unmarshal(payload, &claims)).To(Succeed())
	sig, err := base64.RawURLEncoding.DecodeString(parts[2])
	g.ExpectWithOffset(1, err).NotTo(HaveOccurred())
	issuer := decodeNkey(g, claims["iss"].(string))
	g.ExpectWithOffset(1, ed25519.Verify(issuer[1:], []byte(parts[0]+"."+parts[1]), sig)).To(BeTrue())
	return claims
}

func TestGeneratedBootstrapIsConsistentNATSMaterial(t *testing.T) {
	g := NewWithT(t)
	b, err := generateBootstrap()
	g.Expect(err).NotTo(HaveOccurred())

	opPub := decodeNkey(g, b.OperatorPublicKey)
	g.Expect(opPub[0]).To(Equal(prefixOperator))
	seed := decodeNkey(g, b.OperatorSeed)
	g.Expect(b.OperatorSeed).To(HavePrefix("SO"))
	derived := ed25519.NewKeyFromSeed(seed[2:]).Public().(ed25519.PublicKey)
	g.Expect([]byte(derived)).To(Equal(opPub[1:]), "seed and public key belong together")
	g.Expect(decodeNkey(g, b.SystemAccountPublicKey)[0]).To(Equal(prefixAccount))

	op := verifyJWT(g, b.OperatorJwt)
	g.Expect(op).To(HaveKeyWithValue("iss", b.OperatorPublicKey))
	g.Expect(op).To(HaveKeyWithValue("sub", b.OperatorPublicKey))
	g.Expect(op["nats"]).To(HaveKeyWithValue("system_account", b.SystemAccountPublicKey))

	acc := verifyJWT(g, b.SystemAccountJwt)
	g.Expect(acc).To(HaveKeyWithValue("iss", b.OperatorPublicKey))
	g.Expect(acc).To(HaveKeyWithValue("sub", b.SystemAccountPublicKey))

	creds, err := base64.StdEncoding.DecodeString(b.SysUserCredsBase64)
	g.Expect(err).NotTo(HaveOccurred())
	m := regexp.MustCompile(`(?s)^-----BEGIN NATS USER JWT-----\n(\S+)\n------END NATS USER JWT------\n.*` +
		`-----BEGIN USER NKEY SEED-----\n(SU\S+)\n------END USER NKEY SEED------\n`).FindSubmatch(creds)
	g.Expect(m).NotTo(BeNil(), "creds layout")
	user := verifyJWT(g, string(m[1]))
	g.Expect(user).To(HaveKeyWithValue("iss", b.SystemAccountPublicKey))
	userSeed := decodeNkey(g, string(m[2]))
	userPub := ed25519.NewKeyFromSeed(userSeed[2:]).Public().(ed25519.PublicKey)
	subject := decodeNkey(g, user["sub"].(string))
	g.Expect(subject[0]).To(Equal(prefixUser))
	g.Expect(bytes.Equal(subject[1:], userPub)).To(BeTrue())
}
