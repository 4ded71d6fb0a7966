package sgam

import (
	"context"
	"strings"
	"time"
)

// Role is what an API key may do. Each role includes the ones before it.
type Role string

// Roles of API keys.
const (
	RoleRead  Role = "read"  // every read
	RoleWrite Role = "write" // reads, and writes of episodes and facts
	RoleAdmin Role = "admin" // everything, including forget and schema changes
)

func (r Role) rank() int {
	switch r {
	case RoleRead:
		return 1
	case RoleWrite:
		return 2
	case RoleAdmin:
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

// Require returns Forbidden unless a key of role r may do what needs role
// need; the refusal names both.
func (r Role) Require(need Role) error {
	if !r.Allows(need) {
		return Errorf(Forbidden, "authorization", "%s key may not do this; it needs %s key", r.withArticle(), need.withArticle())
	}
	return nil
}

// ParseRole checks a role name (field "role").
func ParseRole(s string) (Role, error) {
	r := Role(s)
	if r.rank() == 0 {
		return "", Errorf(Invalid, "role", "%q is not a role: read, write or admin", s)
	}
	return r, nil
}

// APIKey is an API key of the network surfaces (the HTTP API and the MCP
// server) as stored, without its secret: bound to one tenant and one role
// when it is created, so that the tenant of every request comes from its
// key.
type APIKey struct {
	ID        string     `json:"key_id"`
	Tenant    string     `json:"tenant"`
	Role      Role       `json:"role"`
	Name      string     `json:"name,omitempty"`
	CreatedAt time.Time  `json:"created_at"`
	RevokedAt *time.Time `json:"revoked_at"`
}

// MaxKeyName bounds an API key's name.
const MaxKeyName = 128

// Keys issues and checks API keys. A key reads "sgam_<id>_<secret>": the
// id is public (it names the key in lists, logs and revocations), the
// secret is 160 random bits, of which only the SHA-256 is stored, and
// which exists outside the caller only when the key is created.
type Keys interface {
	// CreateKey issues a key for tenant with role and returns it with its
	// token. name is a label for people (at most MaxKeyName bytes of
	// printable text).
	CreateKey(ctx context.Context, tenant string, role Role, name string) (token string, k APIKey, err error)
	// Authenticate returns the key a token belongs to, or Unauthenticated
	// (which does not say whether the key is unknown, malformed or
	// revoked). It looks the key up among every tenant's, before the
	// tenant is known; only the token's secret, never its id alone,
	// yields a key.
	Authenticate(ctx context.Context, token string) (APIKey, error)
	// ListKeys lists a tenant's keys, oldest first, revoked ones too.
	ListKeys(ctx context.Context, tenant string) ([]APIKey, error)
	// RevokeKey marks a key of tenant revoked at the store clock's now
	// (revoking it again changes nothing), or returns NotFound (field
	// key_id).
	RevokeKey(ctx context.Context, tenant, id string) error
}
