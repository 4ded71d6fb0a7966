package postgres

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/sgam-dev/sgam"
	"github.com/sgam-dev/sgam/apikey"
)

var _ apikey.Store = (*Store)(nil)

// InsertKey implements apikey.Store.
func (s *Store) InsertKey(ctx context.Context, k apikey.Stored) error {
	_, err := s.d.pool.Exec(ctx, `INSERT INTO api_keys (key_id, tenant_id, role, name, secret_hash, created_at) VALUES ($1, $2, $3, $4, $5, $6)`,
		k.ID, k.Tenant, string(k.Role), k.Name, k.Hash, k.CreatedAt)
	return mapErr(wrap("create key", err))
}

const keyColumns = `key_id, tenant_id, role, name, created_at, revoked_at`

func scanKey(row pgx.Row, extra ...any) (apikey.Key, error) {
	var k apikey.Key
	if err := row.Scan(append([]any{&k.ID, &k.Tenant, &k.Role, &k.Name, &k.CreatedAt, &k.RevokedAt}, extra...)...); err != nil {
		return k, err
	}
	k.CreatedAt, k.RevokedAt = k.CreatedAt.UTC(), utc(k.RevokedAt)
	return k, nil
}

// wrap adds what was being done to a driver error (nil stays nil).
func wrap(what string, err error) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("%s: %w", what, err)
}

// KeyByID implements apikey.Store.
func (s *Store) KeyByID(ctx context.Context, id string) (apikey.Stored, error) {
	var st apikey.Stored
	k, err := scanKey(s.d.pool.QueryRow(ctx, `SELECT `+keyColumns+`, secret_hash FROM api_keys WHERE key_id = $1`, id), &st.Hash)
	if errors.Is(err, pgx.ErrNoRows) {
		return st, sgam.Errorf(sgam.NotFound, "key_id", "there is no key %s", id)
	}
	st.Key = k
	return st, mapErr(wrap("read key", err))
}

// ListKeys implements apikey.Store.
func (s *Store) ListKeys(ctx context.Context, tenant string) ([]apikey.Key, error) {
	if err := sgam.CheckTenant(tenant); err != nil {
		return nil, err
	}
	rows, err := s.d.pool.Query(ctx, `SELECT `+keyColumns+` FROM api_keys WHERE tenant_id = $1 ORDER BY created_at, key_id`, tenant)
	if err != nil {
		return nil, mapErr(wrap("list keys", err))
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (apikey.Key, error) { return scanKey(r) })
	if out == nil {
		out = []apikey.Key{}
	}
	return out, mapErr(wrap("list keys", err))
}

// RevokeKey implements apikey.Store.
func (s *Store) RevokeKey(ctx context.Context, tenant, id string, at time.Time) error {
	tag, err := s.d.pool.Exec(ctx, `UPDATE api_keys SET revoked_at = coalesce(revoked_at, $1) WHERE tenant_id = $2 AND key_id = $3`, at, tenant, id)
	if err != nil {
		return mapErr(wrap("revoke key", err))
	}
	if tag.RowsAffected() != 1 {
		return sgam.Errorf(sgam.NotFound, "key_id", "tenant %s has no key %s", tenant, id)
	}
	return nil
}

// OpenConns reports the connections the store holds open (for metrics).
func (s *Store) OpenConns() int { return int(s.d.pool.Stat().TotalConns()) }
