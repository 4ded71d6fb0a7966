// Package apikey issues and checks the API keys of sgam's network surfaces
// (the HTTP API and the MCP server). A key is bound to one tenant and one
// role when it is created; the tenant of every request comes from its key.
// Only the SHA-256 of a key's secret is stored, and the secret is shown
// once, when the key is created.
//
// A key reads "sgam_<id>_<secret>": the id is public (it names the key in
// lists, logs and revocations), the secret is 160 random bits.
package apikey

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"strings"
	"time"

	"github.com/sgam-dev/sgam"
)

// Role is what a key may do. Each role includes the ones before it.
type Role string

// Roles.
const (
	Read  Role = "read"  // every read
	Write Role = "write" // reads, and writes of episodes and facts
	Admin Role = "admin" // everything, including forget and schema changes
)

func (r Role) rank() int {
	switch r {
	case Read:
		return 1
	case Write:
		return 2
	case Admin:
		return 3
	}
	return 0
}

// withArticle is the role with its indefinite article: "a read", "an admin".
func (r Role) withArticle() string {
	if r != "" && strings.IndexByte("aeiou", r[0]) >= 0 {
		return "an " + string(r)
	}
	return "a " + string(r)
}

// Allows reports whether a key of role r may do what needs role need.
func (r Role) Allows(need Role) bool { return r.rank() >= need.rank() && need.rank() > 0 }

// ParseRole checks a role name.
func ParseRole(field, s string) (Role, error) {
	r := Role(s)
	if r.rank() == 0 {
		return "", sgam.Errorf(sgam.Invalid, field, "%q is not a role: read, write or admin", s)
	}
	return r, nil
}

// Key is a key as stored, without its secret.
type Key struct {
	ID        string     `json:"key_id"`
	Tenant    string     `json:"tenant"`
	Role      Role       `json:"role"`
	Name      string     `json:"name,omitempty"`
	CreatedAt time.Time  `json:"created_at"`
	RevokedAt *time.Time `json:"revoked_at"`
}

// Stored is a key with the hash of its secret.
type Stored struct {
	Key
	Hash []byte
}

// Store is where a database keeps keys.
type Store interface {
	// InsertKey stores a new key.
	InsertKey(ctx context.Context, k Stored) error
	// KeyByID returns a key of any tenant, or NotFound.
	KeyByID(ctx context.Context, id string) (Stored, error)
	// ListKeys lists a tenant's keys, oldest first, revoked ones too.
	ListKeys(ctx context.Context, tenant string) ([]Key, error)
	// RevokeKey marks a key of tenant revoked at at (revoking it again
	// changes nothing), or returns NotFound.
	RevokeKey(ctx context.Context, tenant, id string, at time.Time) error
}

const (
	prefix    = "sgam_"
	idLen     = 12
	secretLen = 32
	alphabet  = "0123456789abcdefghjkmnpqrstvwxyz" // 5 bits a character
	maxName   = 128
)

func random(n int) string {
	b := make([]byte, n)
	rand.Read(b)
	for i := range b {
		b[i] = alphabet[b[i]&31]
	}
	return string(b)
}

func hash(secret string) []byte {
	h := sha256.Sum256([]byte(secret))
	return h[:]
}

// Create issues a key for tenant with role and returns it with its token,
// the only time the secret exists outside the caller.
func Create(ctx context.Context, st Store, tenant string, role Role, name string, now time.Time) (token string, k Key, err error) {
	if err := sgam.CheckTenant(tenant); err != nil {
		return "", k, err
	}
	if _, err := ParseRole("role", string(role)); err != nil {
		return "", k, err
	}
	if len(name) > maxName || strings.ContainsFunc(name, func(r rune) bool { return r < 0x20 || r == 0x7f }) {
		return "", k, sgam.Errorf(sgam.Invalid, "name", "must be at most %d bytes of printable text", maxName)
	}
	id, secret := random(idLen), random(secretLen)
	k = Key{ID: id, Tenant: tenant, Role: role, Name: name, CreatedAt: now.UTC().Truncate(time.Microsecond)}
	if err := st.InsertKey(ctx, Stored{Key: k, Hash: hash(secret)}); err != nil {
		return "", Key{}, err
	}
	return prefix + id + "_" + secret, k, nil
}

// errUnauthenticated says nothing about why: an unknown, malformed or
// revoked key all look the same to the caller.
var errUnauthenticated = sgam.Errorf(sgam.Unauthenticated, "authorization", "the API key is missing, unknown or revoked")

// Authenticate returns the key a token belongs to, or Unauthenticated.
func Authenticate(ctx context.Context, st Store, token string) (Key, error) {
	rest, ok := strings.CutPrefix(token, prefix)
	if !ok || len(rest) != idLen+1+secretLen || rest[idLen] != '_' {
		return Key{}, errUnauthenticated
	}
	id, secret := rest[:idLen], rest[idLen+1:]
	if strings.Trim(id, alphabet) != "" {
		return Key{}, errUnauthenticated
	}
	k, err := st.KeyByID(ctx, id)
	switch {
	case sgam.ErrorCode(err) == sgam.NotFound:
		return Key{}, errUnauthenticated
	case err != nil:
		return Key{}, err
	}
	if subtle.ConstantTimeCompare(k.Hash, hash(secret)) != 1 || k.RevokedAt != nil {
		return Key{}, errUnauthenticated
	}
	return k.Key, nil
}

// Require returns Forbidden unless k's role allows need.
func Require(k Key, need Role) error {
	if !k.Role.Allows(need) {
		return sgam.Errorf(sgam.Forbidden, "authorization", "%s key may not do this; it needs %s key", k.Role.withArticle(), need.withArticle())
	}
	return nil
}

// CheckID validates a key id named by a caller (revoke).
func CheckID(field, id string) error {
	if len(id) != idLen || strings.Trim(id, alphabet) != "" {
		return sgam.Errorf(sgam.Invalid, field, "%q is not a key id (%d characters, as 'sgam keys list' shows)", id, idLen)
	}
	return nil
}
