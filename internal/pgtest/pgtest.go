// Package pgtest gives tests a PostgreSQL database of their own.
//
// SGAM_TEST_POSTGRES, when set, is the URL of a server to use (its user
// must be able to create roles and schemas). Otherwise the first test that
// asks starts a throwaway server from the machine's PostgreSQL packages
// (initdb into a temporary folder, a free port on 127.0.0.1, pg_ctl) for
// the rest of the test process; Main stops it. Each test gets its own
// schema, owned by a role without superuser rights, so that row-level
// security applies to it.
//
// When no server can be found or started, tests are skipped with a loud
// message, except when CI=true: then they fail.
package pgtest

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"net/url"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"sort"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// AppRole is the role stores connect as: not a superuser, so row-level
// security is enforced on it.
const AppRole = "sgam_app"

var (
	once     sync.Once
	admin    string // URL of a superuser connection to the test database
	startErr error
	server   *throwaway
	schemas  atomic.Int64
)

// Main runs the tests of a package and stops the throwaway server, if one
// was started. Call it from TestMain: os.Exit(pgtest.Main(m)).
func Main(m *testing.M) int {
	code := m.Run()
	if server != nil {
		server.stop()
	}
	return code
}

// URL returns the URL of a fresh, empty schema for this test, as AppRole.
func URL(t testing.TB) string {
	t.Helper()
	once.Do(func() { admin, startErr = start() })
	if startErr != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("PostgreSQL is required in CI: %v", startErr)
		}
		t.Skipf("\n*** SKIPPING: no PostgreSQL for this test: %v\n*** Set SGAM_TEST_POSTGRES=postgres://... or install PostgreSQL (initdb, pg_ctl).", startErr)
	}
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, admin)
	if err != nil {
		t.Fatalf("connect to the test server: %v", err)
	}
	defer conn.Close(ctx)
	schema := fmt.Sprintf("t%d_%d", os.Getpid(), schemas.Add(1))
	if _, err := conn.Exec(ctx, fmt.Sprintf("CREATE SCHEMA %s AUTHORIZATION %s", schema, AppRole)); err != nil {
		t.Fatalf("create schema: %v", err)
	}
	t.Cleanup(func() {
		conn, err := pgx.Connect(context.Background(), admin)
		if err != nil {
			return
		}
		defer conn.Close(context.Background())
		conn.Exec(context.Background(), fmt.Sprintf("DROP SCHEMA %s CASCADE", schema))
	})
	u, _ := url.Parse(admin)
	u.User = url.UserPassword(AppRole, AppRole)
	q := u.Query()
	q.Set("search_path", schema+",public")
	u.RawQuery = q.Encode()
	return u.String()
}

// Admin returns the URL of a superuser connection to the test database,
// for tests that must act behind the store's back (killing a backend).
func Admin(t testing.TB) string {
	URL(t) // starts the server, or skips
	return admin
}

// start finds or starts the server and prepares the database: the
// btree_gist extension and the application role.
func start() (string, error) {
	base := os.Getenv("SGAM_TEST_POSTGRES")
	if base == "" {
		var err error
		if server, err = startThrowaway(); err != nil {
			return "", err
		}
		base = server.url
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, base)
	if err != nil {
		return "", fmt.Errorf("connect to %s: %w", redact(base), err)
	}
	defer conn.Close(ctx)
	for _, q := range []string{
		`CREATE EXTENSION IF NOT EXISTS btree_gist`,
		`DO $$ BEGIN
		   IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = '` + AppRole + `') THEN
		     CREATE ROLE ` + AppRole + ` LOGIN PASSWORD '` + AppRole + `' NOSUPERUSER NOBYPASSRLS;
		   END IF;
		 END $$`,
	} {
		if _, err := conn.Exec(ctx, q); err != nil {
			return "", fmt.Errorf("prepare the test database: %w", err)
		}
	}
	return base, nil
}

func redact(u string) string {
	p, err := url.Parse(u)
	if err != nil {
		return "(unparsable URL)"
	}
	return p.Redacted()
}

// throwaway is a server in a temporary folder.
type throwaway struct {
	dir, pgCtl string
	asUser     []string // prefix to run commands as the postgres user, when root
	url        string
}

func startThrowaway() (*throwaway, error) {
	bin, err := findBin()
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "sgam-pg-")
	if err != nil {
		return nil, err
	}
	s := &throwaway{dir: dir, pgCtl: filepath.Join(bin, "pg_ctl")}
	// initdb refuses to run as root: run the server as the postgres user.
	if os.Geteuid() == 0 {
		pg, err := user.Lookup("postgres")
		if err != nil {
			return nil, fmt.Errorf("running as root and there is no postgres user to run the server as")
		}
		if out, err := exec.Command("chown", pg.Uid+":"+pg.Gid, dir).CombinedOutput(); err != nil {
			return nil, fmt.Errorf("chown %s: %v: %s", dir, err, out)
		}
		s.asUser = []string{"runuser", "-u", "postgres", "--"}
	}
	data := filepath.Join(dir, "data")
	if out, err := s.run(filepath.Join(bin, "initdb"), "-D", data, "-U", "postgres", "--auth=trust", "-E", "UTF8", "--no-sync"); err != nil {
		os.RemoveAll(dir)
		return nil, fmt.Errorf("initdb: %v: %s", err, out)
	}
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	opts := fmt.Sprintf("-p %d -k %s -c listen_addresses=127.0.0.1 -c max_connections=200 -c shared_buffers=256MB", port, dir)
	if out, err := s.run(s.pgCtl, "-D", data, "-o", opts, "-l", filepath.Join(dir, "log"), "-w", "-t", "60", "start"); err != nil {
		log, _ := os.ReadFile(filepath.Join(dir, "log"))
		os.RemoveAll(dir)
		return nil, fmt.Errorf("pg_ctl start: %v: %s\n%s", err, out, log)
	}
	s.url = fmt.Sprintf("postgres://postgres@127.0.0.1:%d/postgres?sslmode=disable", port)
	return s, nil
}

func (s *throwaway) run(name string, args ...string) ([]byte, error) {
	cmd := exec.Command(name, args...)
	if len(s.asUser) > 0 {
		cmd = exec.Command(s.asUser[0], append(append(s.asUser[1:], name), args...)...)
	}
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	cmd.Dir = s.dir
	err := cmd.Run()
	return out.Bytes(), err
}

func (s *throwaway) stop() {
	s.run(s.pgCtl, "-D", filepath.Join(s.dir, "data"), "-m", "immediate", "-w", "stop")
	os.RemoveAll(s.dir)
}

// findBin returns the folder of initdb and pg_ctl: on PATH, or the newest
// under /usr/lib/postgresql (Debian), or /usr/local/pgsql/bin.
func findBin() (string, error) {
	if p, err := exec.LookPath("pg_ctl"); err == nil {
		if _, err := exec.LookPath("initdb"); err == nil {
			return filepath.Dir(p), nil
		}
	}
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	sort.Slice(dirs, func(i, j int) bool { return version(dirs[i]) > version(dirs[j]) })
	dirs = append(dirs, "/usr/local/pgsql/bin")
	for _, d := range dirs {
		if _, err := os.Stat(filepath.Join(d, "initdb")); err == nil {
			return d, nil
		}
	}
	return "", fmt.Errorf("no initdb and pg_ctl on PATH or under /usr/lib/postgresql")
}

// version is the major version in /usr/lib/postgresql/<version>/bin.
func version(dir string) int {
	var v int
	fmt.Sscan(filepath.Base(filepath.Dir(dir)), &v)
	return v
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}
