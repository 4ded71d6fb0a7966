package sqlite

import (
	"context"
	"database/sql"

	"github.com/sgam-dev/sgam"
	"github.com/sgam-dev/sgam/store/internal/engine"
)

// InsertKey implements engine.Tx.
func (t *tx) InsertKey(k engine.StoredKey) error {
	_, err := t.exec("create key", `INSERT INTO api_keys (key_id, tenant, role, name, secret_hash, created_at) VALUES (?, ?, ?, ?, ?, ?)`,
		k.ID, k.Tenant, string(k.Role), k.Name, k.Hash, sgam.Micros(k.CreatedAt))
	return err
}

// RevokeKey implements engine.Tx.
func (t *tx) RevokeKey(tenant, id string, at int64) (bool, error) {
	n, err := t.exec("revoke key", `UPDATE api_keys SET revoked_at = coalesce(revoked_at, ?) WHERE tenant = ? AND key_id = ?`, at, tenant, id)
	return n == 1, err
}

const keyColumns = `key_id, tenant, role, name, created_at, revoked_at`

func scanKey(sc scanner, extra ...any) (sgam.APIKey, error) {
	var k sgam.APIKey
	var created int64
	var revoked sql.NullInt64
	if err := sc.Scan(append([]any{&k.ID, &k.Tenant, &k.Role, &k.Name, &created, &revoked}, extra...)...); err != nil {
		return k, err
	}
	k.CreatedAt, k.RevokedAt = sgam.FromMicros(created), timeOrNil(revoked)
	return k, nil
}

// APIKey implements engine.Reader.
func (s *db) APIKey(ctx context.Context, id string) (engine.StoredKey, bool, error) {
	var st engine.StoredKey
	k, err := scanKey(s.queryRow(ctx, `SELECT `+keyColumns+`, secret_hash FROM api_keys WHERE key_id = ?`, id), &st.Hash)
	st.APIKey = k
	st, ok, err := found(st, err, "read key")
	return st, ok, mapErr(err)
}

// APIKeys implements engine.Reader.
func (s *db) APIKeys(ctx context.Context, tenant string) ([]sgam.APIKey, error) {
	out := []sgam.APIKey{}
	err := s.each(ctx, "list keys", `SELECT `+keyColumns+` FROM api_keys WHERE tenant = ? ORDER BY created_at, key_id`, []any{tenant}, func(sc scanner) error {
		k, err := scanKey(sc)
		out = append(out, k)
		return err
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// writeOnly runs fn in a write transaction of this driver's own.
func (s *db) writeOnly(ctx context.Context, fn func(*tx) error) error {
	t, err := s.begin(ctx)
	if err != nil {
		return mapErr(err)
	}
	defer t.rollback()
	if err := fn(t); err != nil {
		return mapErr(err)
	}
	if err := t.commit(); err != nil {
		return mapErr(err)
	}
	s.forgetJobs(ctx, t.jobs)
	return nil
}

// OpenConns reports the connections the store holds open (for metrics).
func (s *Store) OpenConns() int {
	return s.d.rdb.Stats().OpenConnections + s.d.wdb.Stats().OpenConnections
}
