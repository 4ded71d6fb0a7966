package postgres

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/sgam-dev/sgam"
	"github.com/sgam-dev/sgam/store/internal/engine"
)

// InsertKey implements engine.Tx.
func (t *tx) InsertKey(k engine.StoredKey) error {
	_, err := t.exec("create key", `INSERT INTO api_keys (key_id, tenant_id, role, name, secret_hash, created_at) VALUES ($1, $2, $3, $4, $5, $6)`,
		k.ID, k.Tenant, string(k.Role), k.Name, k.Hash, k.CreatedAt)
	return err
}

// RevokeKey implements engine.Tx.
func (t *tx) RevokeKey(tenant, id string, at int64) (bool, error) {
	tag, err := t.exec("revoke key", `UPDATE api_keys SET revoked_at = coalesce(revoked_at, $1) WHERE tenant_id = $2 AND key_id = $3`,
		sgam.FromMicros(at), tenant, id)
	return tag.RowsAffected() == 1, err
}

const keyColumns = `key_id, tenant_id, role, name, created_at, revoked_at`

func scanKey(row pgx.Row, extra ...any) (sgam.APIKey, error) {
	var k sgam.APIKey
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

// APIKey implements engine.Reader. The table is store-wide (no row-level
// security): the key is looked up before the tenant is known.
func (s *db) APIKey(ctx context.Context, id string) (engine.StoredKey, bool, error) {
	var st engine.StoredKey
	k, err := scanKey(s.pool.QueryRow(ctx, `SELECT `+keyColumns+`, secret_hash FROM api_keys WHERE key_id = $1`, id), &st.Hash)
	if errors.Is(err, pgx.ErrNoRows) {
		return st, false, nil
	}
	st.APIKey = k
	return st, err == nil, mapErr(wrap("read key", err))
}

// APIKeys implements engine.Reader.
func (s *db) APIKeys(ctx context.Context, tenant string) ([]sgam.APIKey, error) {
	rows, err := s.pool.Query(ctx, `SELECT `+keyColumns+` FROM api_keys WHERE tenant_id = $1 ORDER BY created_at, key_id`, tenant)
	if err != nil {
		return nil, mapErr(wrap("list keys", err))
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (sgam.APIKey, error) { return scanKey(r) })
	if out == nil {
		out = []sgam.APIKey{}
	}
	return out, mapErr(wrap("list keys", err))
}

// OpenConns reports the connections the store holds open (for metrics).
func (s *Store) OpenConns() int { return int(s.d.pool.Stat().TotalConns()) }
