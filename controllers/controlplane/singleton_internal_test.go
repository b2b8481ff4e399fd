package controlplane

import (
	"testing"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	datasancev3 "github.com/kubeopera/kubeopera-operator/api/datasance/v3"
)

// The holder is the Service's owner while it exists, else the oldest live ControlPlane (creation
// time, then name), else the asking one.
func TestHolderOf(t *testing.T) {
	t0 := metav1.NewTime(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	t1 := metav1.NewTime(t0.Add(time.Second))
	cp := func(name string, created metav1.Time, deleting bool) datasancev3.ControlPlane {
		c := datasancev3.ControlPlane{ObjectMeta: metav1.ObjectMeta{Name: name, CreationTimestamp: created}}
		if deleting {
			c.DeletionTimestamp = &t1
		}
		return c
	}
	for name, tc := range map[string]struct {
		items       []datasancev3.ControlPlane
		owner, want string
	}{
		"owner wins over an older one":    {[]datasancev3.ControlPlane{cp("a", t0, false), cp("b", t1, false)}, "b", "b"},
		"owner gone: oldest":              {[]datasancev3.ControlPlane{cp("b", t1, false), cp("c", t0, false)}, "a", "c"},
		"owner being deleted: oldest":     {[]datasancev3.ControlPlane{cp("a", t0, true), cp("c", t1, false)}, "a", "c"},
		"no owner: oldest":                {[]datasancev3.ControlPlane{cp("z", t0, false), cp("a", t1, false)}, "", "z"},
		"same second: name":               {[]datasancev3.ControlPlane{cp("z", t0, false), cp("m", t0, false)}, "", "m"},
		"nobody listed yet: self":         {nil, "", "self"},
		"only deleting ones listed: self": {[]datasancev3.ControlPlane{cp("a", t0, true)}, "", "self"},
	} {
		t.Run(name, func(t *testing.T) {
			NewWithT(t).Expect(holderOf(tc.items, tc.owner, "self")).To(Equal(tc.want))
		})
	}
}
