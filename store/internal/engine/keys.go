package engine

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"strings"

	"github.com/sgam-dev/sgam"
)

// StoredKey is an API key with the SHA-256 of its secret.
type StoredKey struct {
	sgam.APIKey
	Hash []byte
}

// The form of a token: "sgam_<id>_<secret>".
const (
	keyPrefix    = "sgam_"
	keyIDLen     = 12
	keySecretLen = 32
	keyAlphabet  = "0123456789abcdefghjkmnpqrstvwxyz" // 5 bits a character
)

func randomKeyPart(n int) string {
	b := make([]byte, n)
	rand.Read(b)
	for i := range b {
		b[i] = keyAlphabet[b[i]&31]
	}
	return string(b)
}

func keyHash(secret string) []byte {
	h := sha256.Sum256([]byte(secret))
	return h[:]
}

// CreateKey implements sgam.Keys.
func (s *Store) CreateKey(ctx context.Context, tenant string, role sgam.Role, name string) (token string, k sgam.APIKey, err error) {
	defer s.track("CreateKey", s.start(), &err)
	if err := sgam.CheckTenant(tenant); err != nil {
		return "", k, err
	}
	if _, err := sgam.ParseRole(string(role)); err != nil {
		return "", k, err
	}
	if len(name) > sgam.MaxKeyName || strings.ContainsFunc(name, func(r rune) bool { return r < 0x20 || r == 0x7f }) {
		return "", k, sgam.Errorf(sgam.Invalid, "name", "must be at most %d bytes of printable text", sgam.MaxKeyName)
	}
	id, secret := randomKeyPart(keyIDLen), randomKeyPart(keySecretLen)
	err = s.d.Write(ctx, tenant, func(tx Tx) error {
		now, err := tx.Instant(0)
		if err != nil {
			return err
		}
		k = sgam.APIKey{ID: id, Tenant: tenant, Role: role, Name: name, CreatedAt: sgam.FromMicros(now)}
		return tx.InsertKey(StoredKey{APIKey: k, Hash: keyHash(secret)})
	})
	if err != nil {
		return "", sgam.APIKey{}, err
	}
	return keyPrefix + id + "_" + secret, k, nil
}

// errUnauthenticated says nothing about why: an unknown, malformed or
// revoked key all look the same to the caller.
var errUnauthenticated = sgam.Errorf(sgam.Unauthenticated, "authorization", "the API key is missing, unknown or revoked")

// Authenticate implements sgam.Keys.
func (s *Store) Authenticate(ctx context.Context, token string) (k sgam.APIKey, err error) {
	defer s.track("Authenticate", s.start(), &err)
	rest, ok := strings.CutPrefix(token, keyPrefix)
	if !ok || len(rest) != keyIDLen+1+keySecretLen || rest[keyIDLen] != '_' {
		return k, errUnauthenticated
	}
	id, secret := rest[:keyIDLen], rest[keyIDLen+1:]
	if strings.Trim(id, keyAlphabet) != "" {
		return k, errUnauthenticated
	}
	st, found, err := s.d.APIKey(ctx, id)
	if err != nil {
		return k, err
	}
	if !found || subtle.ConstantTimeCompare(st.Hash, keyHash(secret)) != 1 || st.RevokedAt != nil {
		return k, errUnauthenticated
	}
	return st.APIKey, nil
}

// ListKeys implements sgam.Keys.
func (s *Store) ListKeys(ctx context.Context, tenant string) (ks []sgam.APIKey, err error) {
	defer s.track("ListKeys", s.start(), &err)
	if err := sgam.CheckTenant(tenant); err != nil {
		return nil, err
	}
	return s.d.APIKeys(ctx, tenant)
}

// RevokeKey implements sgam.Keys.
func (s *Store) RevokeKey(ctx context.Context, tenant, id string) (err error) {
	defer s.track("RevokeKey", s.start(), &err)
	if err := sgam.CheckTenant(tenant); err != nil {
		return err
	}
	if len(id) != keyIDLen || strings.Trim(id, keyAlphabet) != "" {
		return sgam.Errorf(sgam.Invalid, "key_id", "%q is not a key id (%d characters, as the list of keys shows)", id, keyIDLen)
	}
	return s.d.Write(ctx, tenant, func(tx Tx) error {
		now, err := tx.Instant(0)
		if err != nil {
			return err
		}
		found, err := tx.RevokeKey(tenant, id, now)
		if err == nil && !found {
			err = notFound("key_id", "tenant %s has no key %s", tenant, id)
		}
		return err
	})
}
