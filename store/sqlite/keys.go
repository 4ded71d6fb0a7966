package sqlite

import (
	"context"
	"database/sql"
	"time"

	"github.com/sgam-dev/sgam"
	"github.com/sgam-dev/sgam/apikey"
)

var _ apikey.Store = (*Store)(nil)

// InsertKey implements apikey.Store.
func (s *Store) InsertKey(ctx context.Context, k apikey.Stored) error {
	tx, err := s.begin(ctx)
	if err != nil {
		return err
	}
	defer tx.rollback()
	if _, err := s.w.ExecContext(ctx, `INSERT INTO api_keys (key_id, tenant, role, name, secret_hash, created_at) VALUES (?, ?, ?, ?, ?, ?)`,
		k.ID, k.Tenant, string(k.Role), k.Name, k.Hash, sgam.Micros(k.CreatedAt)); err != nil {
		return mapErr("create key", err)
	}
	return tx.commit(nil)
}

const keyColumns = `key_id, tenant, role, name, created_at, revoked_at`

func scanKey(sc scanner, extra ...any) (apikey.Key, error) {
	var k apikey.Key
	var created int64
	var revoked sql.NullInt64
	if err := sc.Scan(append([]any{&k.ID, &k.Tenant, &k.Role, &k.Name, &created, &revoked}, extra...)...); err != nil {
		return k, err
	}
	k.CreatedAt, k.RevokedAt = sgam.FromMicros(created), timeOrNil(revoked)
	return k, nil
}

// KeyByID implements apikey.Store.
func (s *Store) KeyByID(ctx context.Context, id string) (apikey.Stored, error) {
	var st apikey.Stored
	k, err := scanKey(s.rdb.QueryRowContext(ctx, `SELECT `+keyColumns+`, secret_hash FROM api_keys WHERE key_id = ?`, id), &st.Hash)
	if err == sql.ErrNoRows {
		return st, sgam.Errorf(sgam.NotFound, "key_id", "there is no key %s", id)
	}
	st.Key = k
	return st, mapErr("read key", err)
}

// ListKeys implements apikey.Store.
func (s *Store) ListKeys(ctx context.Context, tenant string) ([]apikey.Key, error) {
	if err := sgam.CheckTenant(tenant); err != nil {
		return nil, err
	}
	rows, err := s.rdb.QueryContext(ctx, `SELECT `+keyColumns+` FROM api_keys WHERE tenant = ? ORDER BY created_at, key_id`, tenant)
	if err != nil {
		return nil, mapErr("list keys", err)
	}
	defer rows.Close()
	out := []apikey.Key{}
	for rows.Next() {
		k, err := scanKey(rows)
		if err != nil {
			return nil, mapErr("list keys", err)
		}
		out = append(out, k)
	}
	return out, mapErr("list keys", rows.Err())
}

// RevokeKey implements apikey.Store.
func (s *Store) RevokeKey(ctx context.Context, tenant, id string, at time.Time) error {
	tx, err := s.begin(ctx)
	if err != nil {
		return err
	}
	defer tx.rollback()
	res, err := s.w.ExecContext(ctx, `UPDATE api_keys SET revoked_at = coalesce(revoked_at, ?) WHERE tenant = ? AND key_id = ?`,
		sgam.Micros(at), tenant, id)
	if err != nil {
		return mapErr("revoke key", err)
	}
	if n, _ := res.RowsAffected(); n != 1 {
		return sgam.Errorf(sgam.NotFound, "key_id", "tenant %s has no key %s", tenant, id)
	}
	return tx.commit(nil)
}

// OpenConns reports the connections the store holds open (for metrics).
func (s *Store) OpenConns() int { return s.rdb.Stats().OpenConnections + s.wdb.Stats().OpenConnections }
