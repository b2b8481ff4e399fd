package natsconf_test

import (
	"testing"

	. "github.com/onsi/gomega"

	"github.com/kubeopera/kubeopera-operator/internal/natsconf"
)

func ordinals(n int) []string {
	out := make([]string, 0, n)
	for i := range n {
		out = append(out, natsconf.OrdinalRoute(i))
	}
	return out
}

func TestRoutes(t *testing.T) {
	tests := []struct {
		name     string
		replicas int
		existing string
		want     []string
	}{
		{name: "no existing file", replicas: 2, want: ordinals(2)},
		{
			name:     "Controller routes kept in order after the ordinals",
			replicas: 2,
			existing: controllerRoutesConf,
			want:     append(ordinals(2), "nats://agent-a.example.com:6222", "nats://10.0.0.7:6222"),
		},
		{
			name:     "scale-up adds ordinals",
			replicas: 4,
			existing: `cluster { routes = [nats://nats-0.nats-headless:6222, nats://edge.example.com:6222] }`,
			want:     append(ordinals(4), "nats://edge.example.com:6222"),
		},
		{
			name:     "scale-down drops stale ordinals",
			replicas: 2,
			existing: `cluster { routes: ["nats://nats-0.nats-headless:6222", "nats://nats-1.nats-headless:6222", "nats://nats-2.nats-headless:6222", "nats://nats-10.nats-headless:6222", "nats://agent.example.com:6222"] }`,
			want:     append(ordinals(2), "nats://agent.example.com:6222"),
		},
		{
			name:     "look-alikes of ordinal routes are not ordinal",
			replicas: 2,
			existing: `cluster { routes: [
				"nats://nats-x.nats-headless:6222"
				"nats://nats-0.nats-headless:7222"
				"nats://nats-0.nats-headless.iofog.svc:6222"
				"nats://nats-.nats-headless:6222"
				"nats://nats-1.nats-headless:6222/"
			] }`,
			want: append(ordinals(2),
				"nats://nats-x.nats-headless:6222",
				"nats://nats-0.nats-headless:7222",
				"nats://nats-0.nats-headless.iofog.svc:6222",
				"nats://nats-.nats-headless:6222",
				"nats://nats-1.nats-headless:6222/"),
		},
		{
			name:     "blank entries and surrounding spaces",
			replicas: 2,
			existing: `cluster { routes: ["", "  ", " nats://agent.example.com:6222 ", "nats://agent.example.com:6222"] }`,
			want:     append(ordinals(2), "nats://agent.example.com:6222"),
		},
		{
			name:     "single route as a string",
			replicas: 2,
			existing: `cluster { routes: "nats://agent.example.com:6222" }`,
			want:     append(ordinals(2), "nats://agent.example.com:6222"),
		},
		{
			name:     "$SELFNAME and other variables do not break parsing",
			replicas: 2,
			existing: "server_name: $SELFNAME\nlisten: $POD_IP\ncluster { name: $CLUSTER\n routes: [\"nats://agent.example.com:6222\"] }",
			want:     append(ordinals(2), "nats://agent.example.com:6222"),
		},
		{name: "unparsable existing falls back to ordinals", replicas: 3, existing: `cluster { routes: ["nats://agent.example.com:6222"`, want: ordinals(3)},
		{name: "garbage", replicas: 2, existing: "}}}{{{ \x00", want: ordinals(2)},
		{name: "no cluster block", replicas: 2, existing: "port: 4222", want: ordinals(2)},
		{name: "routes of another type", replicas: 2, existing: "cluster { routes: 42 }", want: ordinals(2)},
		{
			name:     "include directives are not followed",
			replicas: 2,
			existing: "include ./routes.conf\ncluster { routes: [\"nats://agent.example.com:6222\"] }",
			want:     ordinals(2),
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			g.Expect(natsconf.Routes(tt.replicas, tt.existing)).To(Equal(tt.want))
		})
	}
}

// A 3 → 2 scale-down through two real renders keeps what the Controller added
// and drops nats-2.
func TestRenderRouteMergeOnScaleDown(t *testing.T) {
	g := NewWithT(t)
	three := mustRender(t, params(withReplicas(3)), controllerRoutesConf)
	g.Expect(block(t, parse(t, three), "cluster")["routes"]).To(Equal([]any{
		"nats://nats-0.nats-headless:6222", "nats://nats-1.nats-headless:6222", "nats://nats-2.nats-headless:6222",
		"nats://agent-a.example.com:6222", "nats://10.0.0.7:6222",
	}))

	two := mustRender(t, params(withReplicas(2)), three)
	g.Expect(block(t, parse(t, two), "cluster")["routes"]).To(Equal([]any{
		"nats://nats-0.nats-headless:6222", "nats://nats-1.nats-headless:6222",
		"nats://agent-a.example.com:6222", "nats://10.0.0.7:6222",
	}))
}
