package controllers

import (
	"flag"
	"testing"

	. "github.com/onsi/gomega"
)

func TestMetricsServerOptions(t *testing.T) {
	for _, tt := range []struct {
		args       []string
		addr       string
		secure     bool
		certDir    string
		wantFilter bool
	}{
		{args: nil, addr: ":8443", secure: true, wantFilter: true},
		{args: []string{"--metrics-secure=false"}, addr: ":8080"},
		{args: []string{"--metrics-secure=false", "--metrics-bind-address=:9090"}, addr: ":9090"},
		{args: []string{"--metrics-bind-address=0"}, addr: "0", secure: true, wantFilter: true},
		{args: []string{"--metrics-cert-dir=/certs"}, addr: ":8443", secure: true, certDir: "/certs", wantFilter: true},
	} {
		g := NewWithT(t)
		opts := DefaultOptions()
		fs := flag.NewFlagSet("test", flag.ContinueOnError)
		BindFlags(fs, &opts)
		g.Expect(fs.Parse(tt.args)).To(Succeed())
		o := metricsServerOptions(opts)
		g.Expect(o.BindAddress).To(Equal(tt.addr), "%v", tt.args)
		g.Expect(o.SecureServing).To(Equal(tt.secure), "%v", tt.args)
		g.Expect(o.FilterProvider != nil).To(Equal(tt.wantFilter), "%v", tt.args)
		g.Expect(o.CertDir).To(Equal(tt.certDir), "%v", tt.args)
		if tt.certDir != "" {
			g.Expect([]string{o.CertName, o.KeyName}).To(Equal([]string{"tls.crt", "tls.key"}))
		}
	}
}
