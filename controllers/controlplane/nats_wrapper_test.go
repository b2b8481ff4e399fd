package controlplane_test

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
)

// The Datasance NATS image runs nats-server inside a wrapper that uses no Kubernetes API; what it
// does with the mounted JWT bundle decides whether JetStream data survives
// (docs/controlplane.md#nats-jwt-bundle). These helpers reproduce its two data-relevant
// behaviours, written from that description (the wrapper's own code is not used):
//
//   - JWT mirror: at start and on every change of the mount, every *.jwt of the mount directory
//     (NATS_JWT_MOUNT_DIR) is copied into the resolver directory (NATS_JWT_DIR) and every *.jwt
//     there that the mount lacks is removed. A mount without any *.jwt changes nothing.
//   - JetStream purge: after start and after every bundle change, every account that holds
//     JetStream data (a directory under <store_dir>/jetstream) but is not in the resolver
//     directory is purged with $JS.API.ACCOUNT.PURGE.<account>, as the system user
//     (NATS_SYS_USER_CRED_PATH). After a bundle change the wrapper also pushes every JWT of the
//     resolver directory to $SYS.REQ.CLAIMS.UPDATE.

// jwtNames lists the *.jwt files of dir (a *.jwt.delete is not one), sorted.
func jwtNames(dir string) ([]string, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var names []string
	for _, e := range entries {
		if !e.IsDir() && strings.HasSuffix(e.Name(), ".jwt") {
			names = append(names, e.Name())
		}
	}
	slices.Sort(names)
	return names, nil
}

// mirrorJWTBundle is the wrapper's JWT mirror from mount into resolver. It returns what it
// removed.
func mirrorJWTBundle(mount, resolver string) (removed []string, err error) {
	mounted, err := jwtNames(mount)
	if err != nil || len(mounted) == 0 {
		return nil, err
	}
	if err := os.MkdirAll(resolver, 0o750); err != nil {
		return nil, err
	}
	for _, name := range mounted {
		if err := copyFile(filepath.Join(mount, name), filepath.Join(resolver, name)); err != nil {
			return nil, err
		}
	}
	present, err := jwtNames(resolver)
	if err != nil {
		return nil, err
	}
	for _, name := range present {
		if slices.Contains(mounted, name) {
			continue
		}
		if err := os.Remove(filepath.Join(resolver, name)); err != nil {
			return removed, err
		}
		removed = append(removed, name)
	}
	return removed, nil
}

func copyFile(src, dst string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.Create(dst)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		_ = out.Close()
		return err
	}
	return out.Close()
}

// purgeAccountsNotInResolver is the wrapper's JetStream purge, over sys (a connection of the
// system user). It returns the accounts it purged.
func purgeAccountsNotInResolver(sys *nats.Conn, storeDir, resolver string) ([]string, error) {
	entries, err := os.ReadDir(filepath.Join(storeDir, "jetstream"))
	if os.IsNotExist(err) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	known, err := jwtNames(resolver)
	if err != nil {
		return nil, err
	}
	var purged []string
	for _, e := range entries {
		if !e.IsDir() || slices.Contains(known, e.Name()+".jwt") {
			continue
		}
		msg, err := sys.Request("$JS.API.ACCOUNT.PURGE."+e.Name(), []byte("{}"), 10*time.Second)
		if err != nil {
			return purged, fmt.Errorf("purge %s: %w", e.Name(), err)
		}
		var resp struct {
			Error *struct {
				Description string `json:"description"`
			} `json:"error"`
		}
		if err := json.Unmarshal(msg.Data, &resp); err != nil {
			return purged, fmt.Errorf("purge %s: %w", e.Name(), err)
		}
		if resp.Error != nil {
			return purged, fmt.Errorf("purge %s: %s", e.Name(), resp.Error.Description)
		}
		purged = append(purged, e.Name())
	}
	return purged, nil
}

// pushClaims is the wrapper's claims push after a bundle change: every JWT of the resolver
// directory to $SYS.REQ.CLAIMS.UPDATE.
func pushClaims(sys *nats.Conn, resolver string) error {
	names, err := jwtNames(resolver)
	if err != nil {
		return err
	}
	for _, name := range names {
		raw, err := os.ReadFile(filepath.Join(resolver, name))
		if err != nil {
			return err
		}
		if _, err := sys.Request("$SYS.REQ.CLAIMS.UPDATE", raw, 10*time.Second); err != nil {
			return fmt.Errorf("claims update %s: %w", name, err)
		}
	}
	return nil
}
