package sandbox

import (
	"context"
	"fmt"

	"github.com/go-logr/logr"
	"k8s.io/client-go/rest"
)

// LocalCloud is the local cloud of cloud.go (load balancer, ingress, deployment and statefulset
// controllers' status writes) running against one API server, for other test harnesses
// (test/chaos) that run the operator themselves.
type LocalCloud struct {
	cancel context.CancelFunc
	done   chan error
}

// StartLocalCloud runs the local cloud against cfg until Stop. Load balancer addresses come
// from 127.0.100.1 on, as in the sandbox.
func StartLocalCloud(name string, cfg *rest.Config, log logr.Logger) (*LocalCloud, error) {
	mgr, err := newCloudManager(name, cfg, newAddressPool(), log, func(string) {}, nil)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	lc := &LocalCloud{cancel: cancel, done: make(chan error, 1)}
	go func() { lc.done <- mgr.Start(ctx) }()
	return lc, nil
}

// Stop stops the local cloud and waits for it.
func (lc *LocalCloud) Stop() error {
	lc.cancel()
	if err := <-lc.done; err != nil {
		return fmt.Errorf("local cloud: %w", err)
	}
	return nil
}
