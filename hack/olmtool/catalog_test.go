package main

import (
	"testing"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/util/version"
)

func TestAddToChannels(t *testing.T) {
	g := NewWithT(t)
	const pkg = "op"
	v := func(s string) *version.Version { return version.MustParseSemantic(s) }

	chs, err := addToChannels(nil, pkg, "op.v0.1.0", v("0.1.0"), []string{"stable", "candidate"})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(chs).To(Equal([]channel{
		{Schema: "olm.channel", Package: pkg, Name: "candidate", Entries: []channelEntry{{Name: "op.v0.1.0", SkipRange: "<0.1.0"}}},
		{Schema: "olm.channel", Package: pkg, Name: "stable", Entries: []channelEntry{{Name: "op.v0.1.0", SkipRange: "<0.1.0"}}},
	}))

	// The next version replaces the previous one and skips every older one.
	chs, err = addToChannels(chs, pkg, "op.v0.2.0", v("0.2.0"), []string{"candidate"})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(chs[0].Entries).To(Equal([]channelEntry{
		{Name: "op.v0.1.0", SkipRange: "<0.1.0"},
		{Name: "op.v0.2.0", Replaces: "op.v0.1.0", SkipRange: "<0.2.0"},
	}))
	g.Expect(chs[1].Entries).To(HaveLen(1))
	g.Expect(channelHeads(chs[0])).To(Equal([]string{"op.v0.2.0"}))

	// Adding the same version again changes nothing; moving it to other channels moves its entries.
	again, err := addToChannels(chs, pkg, "op.v0.2.0", v("0.2.0"), []string{"candidate"})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(again).To(Equal(chs))
	moved, err := addToChannels(chs, pkg, "op.v0.2.0", v("0.2.0"), []string{"stable"})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(moved[0].Entries).To(HaveLen(1))
	g.Expect(moved[1].Entries).To(HaveLen(2))

	_, err = addToChannels(chs, "other", "other.v1.0.0", v("1.0.0"), []string{"stable"})
	g.Expect(err).To(MatchError(ContainSubstring("belongs to package op")))
}
