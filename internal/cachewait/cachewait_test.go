package cachewait

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

func object(rv string) *corev1.ConfigMap {
	return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "cm", ResourceVersion: rv}}
}

func TestWroteKeepsNewVersionsOnly(t *testing.T) {
	v := New(object("1"))
	if v.Written() {
		t.Fatal("written before any write")
	}
	for _, rv := range []string{"1", "2", "2", "", "3"} {
		v.Wrote(object(rv))
	}
	if got := v.seen; len(got) != 3 || got[0] != "1" || got[1] != "2" || got[2] != "3" {
		t.Fatalf("versions %v, want [1 2 3]", got)
	}
	if !v.Written() || v.Last() != "3" {
		t.Fatalf("written %v, last %q", v.Written(), v.Last())
	}
}

// cache answers reads with the versions in order, one per read, then the last one forever.
type cache struct {
	client.Reader
	versions []string // "" is NotFound
	reads    int
}

func (c *cache) Get(_ context.Context, key client.ObjectKey, obj client.Object, _ ...client.GetOption) error {
	rv := c.versions[min(c.reads, len(c.versions)-1)]
	c.reads++
	if rv == "" {
		return apierrors.NewNotFound(schema.GroupResource{Resource: "configmaps"}, key.Name)
	}
	obj.SetResourceVersion(rv)
	return nil
}

func TestAwaitEndsOnceNoSupersededVersionIsCached(t *testing.T) {
	key := client.ObjectKey{Namespace: "ns", Name: "cm"}
	for _, tc := range []struct {
		name   string
		cached []string
		reads  int
	}{
		// The cache shows the read version, then an intermediate write, then the last one.
		{name: "last write", cached: []string{"1", "2", "3"}, reads: 3},
		// Someone wrote after the pass: the cache may skip the pass's last version.
		{name: "later write", cached: []string{"2", "7"}, reads: 2},
		{name: "deleted", cached: []string{"1", ""}, reads: 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v := New(object("1"))
			v.Wrote(object("2"))
			v.Wrote(object("3"))
			c := &cache{versions: tc.cached}
			if err := v.Await(context.Background(), c, key, &corev1.ConfigMap{}); err != nil {
				t.Fatal(err)
			}
			if c.reads != tc.reads {
				t.Fatalf("%d reads of the cache, want %d", c.reads, tc.reads)
			}
		})
	}
}

func TestAwaitWithoutWritesReadsNothing(t *testing.T) {
	c := &cache{versions: []string{"1"}}
	if err := New(object("1")).Await(context.Background(), c, client.ObjectKey{}, &corev1.ConfigMap{}); err != nil || c.reads != 0 {
		t.Fatalf("err %v, %d reads", err, c.reads)
	}
}

func TestAwaitGivesUpWhenTheContextEnds(t *testing.T) {
	v := New(object("1"))
	v.Wrote(object("2"))
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := v.Await(ctx, &cache{versions: []string{"1"}}, client.ObjectKey{}, &corev1.ConfigMap{}); err == nil {
		t.Fatal("a cache that never catches up ended the wait without an error")
	}
}
