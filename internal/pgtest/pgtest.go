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
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
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
		t.Skipf("\n*** SKIPPING: no PostgreSQL for this test: %v\n*** Set SGAM_TEST_POSTGRES=postgres://... or install PostgreSQL (initdb, postgres).", startErr)
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

// throwaway is a server in a temporary folder, a child of the test process
// that dies with it: a test binary killed by -timeout leaves no server.
type throwaway struct {
	dir  string
	cred *syscall.Credential // the postgres user's, when running as root
	cmd  *exec.Cmd
	url  string
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
	s := &throwaway{dir: dir}
	// initdb and postgres refuse to run as root: run them as postgres.
	if os.Geteuid() == 0 {
		pg, err := user.Lookup("postgres")
		if err != nil {
			os.RemoveAll(dir)
			return nil, fmt.Errorf("running as root and there is no postgres user to run the server as")
		}
		uid, _ := strconv.Atoi(pg.Uid)
		gid, _ := strconv.Atoi(pg.Gid)
		s.cred = &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid), Groups: []uint32{}}
		if err := os.Chown(dir, uid, gid); err != nil {
			os.RemoveAll(dir)
			return nil, err
		}
	}
	data := filepath.Join(dir, "data")
	initdb := s.command(filepath.Join(bin, "initdb"), "-D", data, "-U", "postgres", "--auth=trust", "-E", "UTF8", "--no-sync")
	if out, err := initdb.CombinedOutput(); err != nil {
		os.RemoveAll(dir)
		return nil, fmt.Errorf("initdb: %v: %s", err, out)
	}
	port, err := freePort()
	if err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	log, err := os.Create(filepath.Join(dir, "log"))
	if err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	s.cmd = s.command(filepath.Join(bin, "postgres"), "-D", data, "-p", strconv.Itoa(port), "-k", dir,
		"-c", "listen_addresses=127.0.0.1", "-c", "max_connections=200", "-c", "shared_buffers=64MB")
	s.cmd.Stdout, s.cmd.Stderr = log, log
	s.cmd.SysProcAttr.Pdeathsig = syscall.SIGKILL
	if err := s.cmd.Start(); err != nil {
		log.Close()
		os.RemoveAll(dir)
		return nil, fmt.Errorf("start postgres: %v", err)
	}
	log.Close()
	s.url = fmt.Sprintf("postgres://postgres@127.0.0.1:%d/postgres?sslmode=disable", port)
	deadline := time.Now().Add(60 * time.Second)
	for {
		conn, err := pgx.Connect(context.Background(), s.url)
		if err == nil {
			conn.Close(context.Background())
			return s, nil
		}
		if time.Now().After(deadline) || s.cmd.ProcessState != nil {
			out, _ := os.ReadFile(filepath.Join(dir, "log"))
			s.stop()
			return nil, fmt.Errorf("postgres did not start: %v\n%s", err, out)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// command runs name as the postgres user when the test runs as root.
func (s *throwaway) command(name string, args ...string) *exec.Cmd {
	cmd := exec.Command(name, args...)
	cmd.Dir = s.dir
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: s.cred}
	return cmd
}

func (s *throwaway) stop() {
	if s.cmd != nil && s.cmd.Process != nil {
		s.cmd.Process.Signal(syscall.SIGQUIT) // immediate shutdown: the data is thrown away
		done := make(chan struct{})
		go func() { s.cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			s.cmd.Process.Kill()
		}
	}
	os.RemoveAll(s.dir)
}

// findBin returns the folder of initdb and postgres: on PATH, or the
// newest under /usr/lib/postgresql (Debian), or /usr/local/pgsql/bin.
func findBin() (string, error) {
	if p, err := exec.LookPath("initdb"); err == nil {
		if _, err := os.Stat(filepath.Join(filepath.Dir(p), "postgres")); err == nil {
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
	return "", fmt.Errorf("no initdb and postgres on PATH or under /usr/lib/postgresql")
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

// Dump returns what pg_dump writes of the schema of url (a URL from URL):
// its tables and every live row, as a backup of the database would hold
// them.
func Dump(t testing.TB, u string) string {
	t.Helper()
	parsed, err := url.Parse(u)
	if err != nil {
		t.Fatalf("dump: %v", err)
	}
	schema, _, _ := strings.Cut(parsed.Query().Get("search_path"), ",")
	// The server's own version, beside its initdb (which may be a link).
	pgDump := "pg_dump"
	if bin, err := findBin(); err == nil {
		if initdb, err := filepath.EvalSymlinks(filepath.Join(bin, "initdb")); err == nil {
			if p := filepath.Join(filepath.Dir(initdb), "pg_dump"); fileExists(p) {
				pgDump = p
			}
		}
	}
	out, err := exec.Command(pgDump, "--schema="+schema, "--no-owner", "-d", Admin(t)).Output()
	if err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			t.Fatalf("pg_dump: %v: %s", err, ee.Stderr)
		}
		t.Fatalf("pg_dump: %v", err)
	}
	return string(out)
}

func fileExists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}
