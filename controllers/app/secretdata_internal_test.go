package app

import (
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

func TestGitSecretDataKeepsOneVersionPerSecretWithinItsBound(t *testing.T) {
	g := NewWithT(t)
	c := newGitSecretData(2)
	secret := func(name, uid, rv string) *corev1.Secret {
		return &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, UID: types.UID(uid), ResourceVersion: rv},
			Type: corev1.SecretTypeBasicAuth, Data: map[string][]byte{"password": []byte(name + rv)}}
	}
	key := func(name string) types.NamespacedName { return types.NamespacedName{Namespace: "ns", Name: name} }

	c.put(secret("a", "u1", "1"))
	e, ok := c.get(key("a"), "u1", "1")
	g.Expect(ok).To(BeTrue())
	g.Expect(e.secretType).To(Equal(corev1.SecretTypeBasicAuth))
	g.Expect(e.data).To(HaveKeyWithValue("password", []byte("a1")))
	// Another version or a replaced Secret (new UID) is a miss.
	_, ok = c.get(key("a"), "u1", "2")
	g.Expect(ok).To(BeFalse())
	_, ok = c.get(key("a"), "u2", "1")
	g.Expect(ok).To(BeFalse())
	// A new version replaces the old one.
	c.put(secret("a", "u1", "2"))
	_, ok = c.get(key("a"), "u1", "1")
	g.Expect(ok).To(BeFalse())
	g.Expect(c.len()).To(Equal(1))

	// The bound holds: a third Secret evicts one of the two.
	c.put(secret("b", "u3", "1"))
	c.put(secret("c", "u4", "1"))
	g.Expect(c.len()).To(Equal(2))
	_, ok = c.get(key("c"), "u4", "1")
	g.Expect(ok).To(BeTrue())

	c.forget(key("c"))
	_, ok = c.get(key("c"), "u4", "1")
	g.Expect(ok).To(BeFalse())

	// A Reconciler without the cache (unit tests) always misses.
	var none *gitSecretData
	none.put(secret("a", "u1", "1"))
	_, ok = none.get(key("a"), "u1", "1")
	g.Expect(ok).To(BeFalse())
}
