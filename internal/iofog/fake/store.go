package fake

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"time"

	"github.com/kubeopera/kubeopera-operator/internal/iofog"
)

// ImageSQLiteDir is where the 3.8+ Controller image keeps its SQLite database when
// SQLITE_STORAGE_DIR is not set: the sqlite_files directory of the npm package "controller",
// on the container's own filesystem. (The 3.7 image used .../@datasance/iofogcontroller/...
// and had no SQLITE_STORAGE_DIR.)
const ImageSQLiteDir = "/home/runner/.npm-global/lib/node_modules/controller/src/data/sqlite_files"

// SQLiteStorageDir is the directory in which the 3.8+ image's SQLite provider stores its
// database, given the container's environment: SQLITE_STORAGE_DIR, made absolute the way the
// image's path.resolve does from its working directory /home/runner, or ImageSQLiteDir when
// that variable is unset or empty.
func SQLiteStorageDir(env map[string]string) string {
	dir := env["SQLITE_STORAGE_DIR"]
	if dir == "" {
		return ImageSQLiteDir
	}
	if !path.IsAbs(dir) {
		dir = path.Join("/home/runner", dir)
	}
	return path.Clean(dir)
}

// stateFile is the file in the data directory that holds the fake's database.
const stateFile = "controller-fake-db.json"

// storedState is the part of the fake that lives in the Controller's database.
type storedState struct {
	Router          *iofog.Router  `json:"router,omitempty"`
	RouterCreatedAt string         `json:"routerCreatedAt,omitempty"`
	Hub             *iofog.NatsHub `json:"hub,omitempty"`
	CAs             []storedCA     `json:"cas,omitempty"`
	// NatsOperator is the operator material: operator and system account keys and JWTs, the hub
	// system user's creds (the GET /nats/bootstrap answer).
	NatsOperator *iofog.NatsBootstrap `json:"natsOperator,omitempty"`
	// Accounts are the NATS accounts added with AddNatsAccount (the system account is part of
	// NatsOperator).
	Accounts []iofog.NatsAccount `json:"accounts,omitempty"`
}

type storedCA struct {
	Name      string    `json:"name"`
	Subject   string    `json:"subject"`
	ValidFrom time.Time `json:"validFrom"`
	ValidTo   time.Time `json:"validTo"`
	Serial    string    `json:"serial"`
	CertPEM   string    `json:"certPEM"`
	KeyPEM    string    `json:"keyPEM"`
	Signed    []string  `json:"signed,omitempty"`
}

// saveLocked writes the database to the data directory, if there is one; s.mu must be held.
func (s *Server) saveLocked() error {
	if s.dataDir == "" {
		return nil
	}
	st := storedState{Router: s.router, RouterCreatedAt: s.routerCreatedAt, Hub: s.hub, NatsOperator: s.bootstrap, Accounts: s.accounts}
	for _, rec := range s.cas {
		st.CAs = append(st.CAs, storedCA{
			Name: rec.name, Subject: rec.subject, ValidFrom: rec.validFrom, ValidTo: rec.validTo,
			Serial: rec.serial, CertPEM: rec.certPEM, KeyPEM: rec.keyPEM, Signed: rec.signed,
		})
	}
	data, err := json.Marshal(st)
	if err != nil {
		return fmt.Errorf("encode database: %w", err)
	}
	if err := os.MkdirAll(s.dataDir, 0o700); err != nil {
		return fmt.Errorf("create data directory: %w", err)
	}
	tmp := filepath.Join(s.dataDir, stateFile+".tmp")
	if err := os.WriteFile(tmp, data, 0o600); err != nil {
		return fmt.Errorf("write database: %w", err)
	}
	if err := os.Rename(tmp, filepath.Join(s.dataDir, stateFile)); err != nil {
		return fmt.Errorf("write database: %w", err)
	}
	return nil
}

// loadLocked replaces the database with what the data directory holds (nothing when there is
// no directory or no file yet); s.mu must be held.
func (s *Server) loadLocked() error {
	s.router, s.routerCreatedAt, s.hub, s.cas, s.bootstrap, s.accounts = nil, "", nil, nil, nil, nil
	if s.dataDir == "" {
		return nil
	}
	data, err := os.ReadFile(filepath.Join(s.dataDir, stateFile))
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("read database: %w", err)
	}
	var st storedState
	if err := json.Unmarshal(data, &st); err != nil {
		return fmt.Errorf("decode database: %w", err)
	}
	s.router, s.routerCreatedAt, s.hub, s.bootstrap, s.accounts = st.Router, st.RouterCreatedAt, st.Hub, st.NatsOperator, st.Accounts
	for _, c := range st.CAs {
		s.cas = append(s.cas, caRecord{
			name: c.Name, subject: c.Subject, validFrom: c.ValidFrom, validTo: c.ValidTo,
			serial: c.Serial, certPEM: c.CertPEM, keyPEM: c.KeyPEM, signed: c.Signed,
		})
	}
	return nil
}
