package controlplane_test

import (
	"bytes"
	"cmp"
	"errors"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// The kubelet's updates of a running NATS pod's Secret and ConfigMap volumes, and what the NATS
// image's wrapper makes of them. Whether a change reaches a running nats-server depends on both:
// the wrapper reloads the server only on the file system events its watches keep, and the kubelet
// makes particular events. Both are reproduced here from their sources, deterministically: the
// events are those of the writer's own operations, as inotify reports them to a watch of the
// directory they happen in.

// fsOp is the kind of an inotify event, as fsnotify names it.
type fsOp int

const (
	fsCreate fsOp = iota // IN_CREATE, IN_MOVED_TO
	fsWrite              // IN_MODIFY
	fsRemove             // IN_DELETE
	fsRename             // IN_MOVED_FROM
)

// fsEvent is one event: its kind and the path it names.
type fsEvent struct {
	op   fsOp
	path string
}

// writeVolume writes files (name → content) into the volume directory dir as the kubelet's
// atomic writer does (k8s.io/kubernetes, pkg/volume/util/atomic_writer.go, AtomicWriter.Write):
// nothing when the payload is what ..data holds; otherwise the payload into a new directory
// ..<timestamp>, a symlink ..data_tmp to it renamed over ..data, a symlink <name> → ..data/<name>
// for every name not linked yet, the links of names gone removed, and the previous timestamped
// directory removed. It returns the events these operations make in dir, in order (the files
// written inside the new directory are events of that directory, which no watch holds when it is
// created). Names are plain file names: the operator's volumes have no nested paths.
func writeVolume(dir string, files map[string][]byte) ([]fsEvent, error) {
	if err := os.MkdirAll(dir, 0o750); err != nil {
		return nil, err
	}
	dataLink := filepath.Join(dir, "..data")
	old, err := os.Readlink(dataLink)
	switch {
	case err == nil:
		same, err := samePayload(filepath.Join(dir, old), files)
		if err != nil || same {
			return nil, err
		}
	case !errors.Is(err, fs.ErrNotExist):
		return nil, err
	}
	ts, err := os.MkdirTemp(dir, "..ts.")
	if err != nil {
		return nil, err
	}
	events := []fsEvent{{fsCreate, ts}}
	for name, data := range files {
		if strings.ContainsRune(name, '/') {
			return nil, errors.New("nested volume path " + name)
		}
		if err := os.WriteFile(filepath.Join(ts, name), data, 0o600); err != nil {
			return nil, err
		}
	}
	tmp := filepath.Join(dir, "..data_tmp")
	if err := os.Symlink(filepath.Base(ts), tmp); err != nil {
		return nil, err
	}
	if err := os.Rename(tmp, dataLink); err != nil {
		return nil, err
	}
	events = append(events, fsEvent{fsCreate, tmp}, fsEvent{fsRename, tmp}, fsEvent{fsCreate, dataLink})
	for _, name := range slices.Sorted(maps.Keys(files)) {
		link := filepath.Join(dir, name)
		if _, err := os.Lstat(link); err == nil {
			continue
		}
		if err := os.Symlink(filepath.Join("..data", name), link); err != nil {
			return nil, err
		}
		events = append(events, fsEvent{fsCreate, link})
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	for _, e := range entries {
		if _, keep := files[e.Name()]; keep || strings.HasPrefix(e.Name(), "..") {
			continue
		}
		if err := os.Remove(filepath.Join(dir, e.Name())); err != nil {
			return nil, err
		}
		events = append(events, fsEvent{fsRemove, filepath.Join(dir, e.Name())})
	}
	if old != "" {
		if err := os.RemoveAll(filepath.Join(dir, old)); err != nil {
			return nil, err
		}
		events = append(events, fsEvent{fsRemove, filepath.Join(dir, old)})
	}
	return events, nil
}

// samePayload reports whether the directory dir holds exactly files.
func samePayload(dir string, files map[string][]byte) (bool, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return false, err
	}
	if len(entries) != len(files) {
		return false, nil
	}
	for _, e := range entries {
		want, ok := files[e.Name()]
		if !ok {
			return false, nil
		}
		got, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil || !bytes.Equal(got, want) {
			return false, err
		}
	}
	return true, nil
}

// wrapperCauses are the watches of the NATS image's wrapper that fire on events in pod p, sorted
// (Datasance/nats-server, cmd/pot-nats/main.go and internal/watch):
//   - "config": WatchConfigFile(NATS_CONF) watches the file's directory and keeps only events
//     named exactly NATS_CONF, of kind create or write;
//   - "ssl", "jwt", "creds": WatchDir on NATS_SSL_DIR, NATS_JWT_MOUNT_DIR and NATS_CREDS_DIR
//     (their defaults when unset) watches the directory and its immediate subdirectories and keeps
//     every create, write and remove.
//
// In server mode the wrapper reloads nats-server (SIGHUP) whatever the cause; after a "jwt" it
// also mirrors the bundle, pushes the accounts' claims and purges (natsPods.kubeletSync).
func (p *natsPod) wrapperCauses(events []fsEvent) []string {
	conf := filepath.Clean(p.path(p.env["NATS_CONF"]))
	dirs := []struct{ cause, dir string }{
		{"ssl", cmp.Or(p.env["NATS_SSL_DIR"], "/etc/nats/certs")},
		{"jwt", cmp.Or(p.env["NATS_JWT_MOUNT_DIR"], "/tmp/nats/jwt")},
		{"creds", cmp.Or(p.env["NATS_CREDS_DIR"], "/etc/nats/creds/")},
	}
	causes := map[string]bool{}
	for _, e := range events {
		if filepath.Clean(e.path) == conf && (e.op == fsCreate || e.op == fsWrite) {
			causes["config"] = true
		}
		if e.op == fsRename {
			continue
		}
		parent := filepath.Dir(filepath.Clean(e.path))
		for _, d := range dirs {
			base := filepath.Clean(p.path(d.dir))
			if parent == base || filepath.Dir(parent) == base {
				causes[d.cause] = true
			}
		}
	}
	return slices.Sorted(maps.Keys(causes))
}
