package v3

import (
	"testing"

	. "github.com/onsi/gomega"
	"k8s.io/utils/ptr"
)

// NATS runs three servers when replicas.nats is omitted and never fewer than two: a value below
// the floor is raised to it, any other value is kept.
func TestNatsReplicas(t *testing.T) {
	cases := map[string]struct {
		nats *int32
		want int32
	}{
		"omitted":         {nil, 3},
		"zero":            {ptr.To[int32](0), 2},
		"below the floor": {ptr.To[int32](1), 2},
		"two":             {ptr.To[int32](2), 2},
		"three":           {ptr.To[int32](3), 3},
		"five":            {ptr.To[int32](5), 5},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			s := ControlPlaneSpec{Replicas: Replicas{Nats: tc.nats}}
			NewWithT(t).Expect(s.NatsReplicas()).To(Equal(tc.want))
		})
	}
}
