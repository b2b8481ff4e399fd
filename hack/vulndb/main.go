// Command vulndb turns the OSV entries that the golang.org/x/vulndb module ships (data/osv) into
// the file layout govulncheck reads with -db file://DIR: index/db.json, index/modules.json and
// ID/<id>.json. The machines this project builds on reach the Go module proxy but not the
// vulnerability database's web endpoint, so the database comes in as a module, pinned by
// version in hack/tool.sh like every other tool.
//
// The modules index carries no "fixed" versions: govulncheck then reads every entry of a module
// it finds in the index, which is always correct (the field only saves reads).
//
//	go run ./hack/vulndb -src <vulndb module dir>/data/osv -out DIR -modified 2026-11-05T23:49:57Z
package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"
)

// entry is the part of an OSV record the index needs.
type entry struct {
	ID       string    `json:"id"`
	Modified time.Time `json:"modified"`
	Affected []struct {
		Package struct {
			Name string `json:"name"`
		} `json:"package"`
	} `json:"affected"`
}

type moduleVuln struct {
	ID       string    `json:"id"`
	Modified time.Time `json:"modified"`
}

type moduleMeta struct {
	Path  string       `json:"path"`
	Vulns []moduleVuln `json:"vulns"`
}

func main() {
	src := flag.String("src", "", "directory of OSV JSON files (the vulndb module's data/osv)")
	out := flag.String("out", "", "database directory to write")
	modified := flag.String("modified", "", "RFC 3339 time the database was last modified (the module version's time)")
	flag.Parse()
	if err := run(*src, *out, *modified); err != nil {
		fmt.Fprintln(os.Stderr, "vulndb:", err)
		os.Exit(1)
	}
}

func run(src, out, modified string) error {
	if src == "" || out == "" {
		return errors.New("-src and -out are required")
	}
	dbTime, err := time.Parse(time.RFC3339, modified)
	if err != nil {
		return fmt.Errorf("-modified: %w", err)
	}
	files, err := filepath.Glob(filepath.Join(src, "GO-*.json"))
	if err != nil {
		return err
	}
	if len(files) == 0 {
		return fmt.Errorf("no OSV entries in %s", src)
	}
	if err := os.MkdirAll(filepath.Join(out, "ID"), 0o750); err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Join(out, "index"), 0o750); err != nil {
		return err
	}
	modules := map[string]*moduleMeta{}
	for _, f := range files {
		data, err := os.ReadFile(f) //nolint:gosec // G304: the OSV files of the pinned vulndb module
		if err != nil {
			return err
		}
		var e entry
		if err := json.Unmarshal(data, &e); err != nil {
			return fmt.Errorf("%s: %w", f, err)
		}
		if e.ID == "" || e.ID+".json" != filepath.Base(f) {
			return fmt.Errorf("%s: id %q does not match the file name", f, e.ID)
		}
		// The id was checked against the file name above: it names no other directory.
		if err := os.WriteFile(filepath.Join(out, "ID", e.ID+".json"), data, 0o600); err != nil { //nolint:gosec // G703: see above
			return err
		}
		seen := map[string]bool{}
		for _, a := range e.Affected {
			p := strings.TrimSpace(a.Package.Name)
			if p == "" || seen[p] {
				continue
			}
			seen[p] = true
			m := modules[p]
			if m == nil {
				m = &moduleMeta{Path: p}
				modules[p] = m
			}
			m.Vulns = append(m.Vulns, moduleVuln{ID: e.ID, Modified: e.Modified})
		}
	}
	list := make([]*moduleMeta, 0, len(modules))
	for _, m := range modules {
		sort.Slice(m.Vulns, func(i, j int) bool { return m.Vulns[i].ID < m.Vulns[j].ID })
		list = append(list, m)
	}
	sort.Slice(list, func(i, j int) bool { return list[i].Path < list[j].Path })
	if err := writeJSON(filepath.Join(out, "index", "modules.json"), list); err != nil {
		return err
	}
	if err := writeJSON(filepath.Join(out, "index", "db.json"), map[string]time.Time{"modified": dbTime.UTC()}); err != nil {
		return err
	}
	fmt.Printf("vulndb: %d entries, %d modules\n", len(files), len(list))
	return nil
}

func writeJSON(path string, v any) error {
	data, err := json.Marshal(v)
	if err != nil {
		return err
	}
	return os.WriteFile(path, data, 0o600)
}
