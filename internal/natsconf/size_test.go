package natsconf_test

import (
	"testing"

	. "github.com/onsi/gomega"

	"github.com/kubeopera/kubeopera-operator/internal/natsconf"
)

func TestConvertSize(t *testing.T) {
	tests := map[string]string{
		"":        "",
		"10Gi":    "10G",
		"10gi":    "10G",
		"10GI":    "10G",
		"512Mi":   "512M",
		"2Ti":     "2T",
		"64Ki":    "64K",
		" 1Gi ":   "1G",
		"10G":     "10G",
		"500M":    "500M",
		"1024":    "1024",
		"1.5Gi":   "1.5G",
		"1Pi":     "1P",
		"100m":    "100m",
		"garbage": "garbage",
		"Gi":      "G",
	}
	for in, want := range tests {
		t.Run(in, func(t *testing.T) {
			NewWithT(t).Expect(natsconf.ConvertSize(in)).To(Equal(want))
		})
	}
}
