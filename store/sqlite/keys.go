package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"time"

	"github.com/sgam-dev/sgam"
	"github.com/sgam-dev/sgam/apikey"
)

var _ apikey.Store = (*Store)(nil)

// InsertKey implements apikey.Store.
func (s *Store) InsertKey(ctx context.Context, k apikey.Stored) error {
	return s.d.writeOnly(ctx, func(t *tx) error {
		_, err := t.exec("create key", `INSERT INTO api_keys (key_id, tenant, role, name, secret_hash, created_at) VALUES (?, ?, ?, ?, ?, ?)`,
			k.ID, k.Tenant, string(k.Role), k.Name, k.Hash, sgam.Micros(k.CreatedAt))
		return err
	})
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
	k, err := scanKey(s.d.rdb.QueryRowContext(ctx, `SELECT `+keyColumns+`, secret_hash FROM api_keys WHERE key_id = ?`, id), &st.Hash)
	st.Key = k
	_, ok, err := found(k, err, "read key")
	if err == nil && !ok {
		err = sgam.Errorf(sgam.NotFound, "key_id", "there is no key %s", id)
	}
	return st, mapErr(err)
}

// ListKeys implements apikey.Store.
func (s *Store) ListKeys(ctx context.Context, tenant string) ([]apikey.Key, error) {
	if err := sgam.CheckTenant(tenant); err != nil {
		return nil, err
	}
	rows, err := s.d.rdb.QueryContext(ctx, `SELECT `+keyColumns+` FROM api_keys WHERE tenant = ? ORDER BY created_at, key_id`, tenant)
	if err != nil {
		return nil, mapErr(fmt.Errorf("list keys: %w", err))
	}
	defer rows.Close()
	out := []apikey.Key{}
	for rows.Next() {
		k, err := scanKey(rows)
		if err != nil {
			return nil, mapErr(fmt.Errorf("list keys: %w", err))
		}
		out = append(out, k)
	}
	return out, mapErr(rows.Err())
}

// RevokeKey implements apikey.Store.
func (s *Store) RevokeKey(ctx context.Context, tenant, id string, at time.Time) error {
	return s.d.writeOnly(ctx, func(t *tx) error {
		n, err := t.exec("revoke key", `UPDATE api_keys SET revoked_at = coalesce(revoked_at, ?) WHERE tenant = ? AND key_id = ?`,
			sgam.Micros(at), tenant, id)
		if err == nil && n != 1 {
			err = sgam.Errorf(sgam.NotFound, "key_id", "tenant %s has no key %s", tenant, id)
		}
		return err
	})
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
