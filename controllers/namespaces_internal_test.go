package controllers

import (
	"flag"
	"testing"
	"time"

	. "github.com/onsi/gomega"
)

func TestParseWatchNamespaces(t *testing.T) {
	tests := []struct {
		name    string
		value   string
		want    []string
		wantErr string
	}{
		{name: "empty means all namespaces", value: "", want: nil},
		{name: "blank means all namespaces", value: "   ", want: nil},
		{name: "one namespace", value: "ns1", want: []string{"ns1"}},
		{name: "two namespaces as OLM writes them", value: "ns1,ns2", want: []string{"ns1", "ns2"}},
		{name: "spaces around names", value: " ns2 , ns1 ", want: []string{"ns1", "ns2"}},
		{name: "duplicates folded", value: "ns1,ns1,ns2", want: []string{"ns1", "ns2"}},
		{name: "empty element", value: "ns1,,ns2", wantErr: "element 2 is empty"},
		{name: "trailing comma", value: "ns1,", wantErr: "element 2 is empty"},
		{name: "lone comma", value: ",", wantErr: "element 1 is empty"},
		{name: "upper case", value: "NS1", wantErr: `"NS1" is not a valid namespace name`},
		{name: "slash", value: "ns1/x", wantErr: `"ns1/x" is not a valid namespace name`},
		{name: "too long", value: "a234567890123456789012345678901234567890123456789012345678901234", wantErr: "is not a valid namespace name"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			got, err := ParseWatchNamespaces(tt.value)
			if tt.wantErr != "" {
				g.Expect(err).To(MatchError(ContainSubstring(tt.wantErr)))
				g.Expect(got).To(BeNil())
				return
			}
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(got).To(Equal(tt.want))
		})
	}
}

func TestBindFlags(t *testing.T) {
	g := NewWithT(t)
	opts := DefaultOptions()
	fs := flag.NewFlagSet("test", flag.ContinueOnError)
	BindFlags(fs, &opts)
	g.Expect(fs.Parse([]string{
		"--leader-elect", "--metrics-bind-address=0", "--enable-app-controller=false",
		"--controller-endpoint-template=127.0.0.1:51121", "--app-max-concurrent-reconciles=4",
		"--app-sync-poll-interval=5s",
	})).To(Succeed())
	g.Expect(opts.LeaderElect).To(BeTrue())
	g.Expect(opts.LeaderElectionID).To(Equal("iofog.operator"))
	g.Expect(opts.MetricsBindAddress).To(Equal("0"))
	g.Expect(opts.HealthProbeBindAddress).To(Equal(":8081"))
	g.Expect(opts.EnableApps).To(BeFalse())
	g.Expect(opts.EnableControlPlane).To(BeTrue())
	g.Expect(opts.ControlPlane.ControllerEndpointTemplate).To(Equal("127.0.0.1:51121"))
	g.Expect(opts.Apps.MaxConcurrentReconciles).To(Equal(4))
	g.Expect(opts.Apps.SyncPollInterval).To(Equal(5 * time.Second))
}
