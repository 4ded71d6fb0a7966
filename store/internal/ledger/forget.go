package ledger

// Forgetting and expiry (DESIGN 5): the decisions every store makes the
// same way, as pure functions. A driver loads the rows, applies what these
// return with its own SQL inside one write transaction, and records the
// receipt.

import (
	"cmp"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"slices"
	"time"

	"github.com/sgam-dev/sgam"
	"github.com/sgam-dev/sgam/temporal"
)

// ExpireBatch bounds the episodes (and, separately, the expired fact
// rows) one expiry transaction deletes, so that a large expiry never holds
// the writer for long.
const ExpireBatch = 1000

// NewReceipt starts the receipt of a forget or expiry at transaction
// instant at. The target names what was forgotten without its content: a
// subject's digest (SubjectTarget), an episode's id, nothing for a tenant.
func NewReceipt(tenant, actor, kind, target string, at int64) sgam.Receipt {
	return sgam.Receipt{ID: "fg_" + NewEpisodeID()[3:], Tenant: tenant, Actor: actor, At: sgam.FromMicros(at),
		Kind: kind, Target: target, FactIDs: []int64{}, EpisodeIDs: []string{}}
}

// SubjectTarget is the receipt target of a forgotten subject: the hex
// HMAC-SHA256, keyed by the store's secret, of its tenant and id. A
// receipt so proves which subject went to whoever holds the store (who can
// compute the digest of a subject it names) without keeping the name, and
// without letting a reader of receipts confirm a guessed id, as an
// unkeyed hash would.
func SubjectTarget(secret []byte, tenant, subject string) string {
	m := hmac.New(sha256.New, secret)
	m.Write([]byte(tenant))
	m.Write([]byte{0x1f})
	m.Write([]byte(subject))
	return hex.EncodeToString(m.Sum(nil))
}

// Finish sorts a receipt's ids, for a stable record.
func Finish(r *sgam.Receipt) {
	slices.Sort(r.FactIDs)
	r.FactIDs = slices.Compact(r.FactIDs)
	slices.Sort(r.EpisodeIDs)
	r.EpisodeIDs = slices.Compact(r.EpisodeIDs)
}

// CheckRetention validates an episode's retention class: an identifier
// and, under a schema, a class the schema declares.
func (g Gov) CheckRetention(class string) error {
	if class == "" {
		return nil
	}
	if err := sgam.CheckRetentionClass("retention", class); err != nil {
		return err
	}
	if g.Schema == nil {
		return nil
	}
	if _, _, ok := g.Schema.RetentionTTL(class); !ok {
		return sgam.Errorf(sgam.Invalid, "retention", "%q is not a retention class of schema version %d", class, g.Version)
	}
	return nil
}

// Support is a fact row's provenance as forgetting sees it: the episode
// that asserted it, its corroborating links oldest first, and the system
// actor that keeps it without one.
type Support struct {
	ID       int64
	Source   string
	Evidence []string
	Actor    string
}

// Fate is what forgetting a set of episodes does to one fact row.
type Fate int

const (
	// Untouched: none of the row's episodes goes.
	Untouched Fate = iota
	// Unlinked: the row keeps its source (or its actor, or other links) and
	// only loses links to the episodes that go.
	Unlinked
	// Promoted: the row's source goes; its oldest remaining link becomes
	// its source.
	Promoted
	// Retained: every episode of the row goes, but its attribute's
	// retention keeps it: no source, actor ActorRetention.
	Retained
	// Deleted: the row has no support left and goes.
	Deleted
)

// Outcome is a row's fate and its provenance afterwards.
type Outcome struct {
	Fate   Fate
	Source string // the row's source afterwards ("" for none)
	Actor  string // the row's actor afterwards
}

// Unsupport decides the fate of row r when the episodes for which gone is
// true are forgotten. keep says whether the row's attribute retention
// keeps it once no episode supports it (expiry; false for Forget).
func Unsupport(r Support, gone func(string) bool, keep bool) Outcome {
	var left []string
	for _, e := range r.Evidence {
		if !gone(e) {
			left = append(left, e)
		}
	}
	sourceGone := r.Source != "" && gone(r.Source)
	out := Outcome{Fate: Untouched, Source: r.Source, Actor: r.Actor}
	switch {
	case !sourceGone && len(left) == len(r.Evidence):
		return out
	case !sourceGone && (r.Source != "" || len(left) > 0 || r.Actor != ""):
		out.Fate = Unlinked
	case sourceGone && len(left) > 0:
		out.Fate, out.Source = Promoted, left[0]
	case sourceGone && r.Actor != "":
		out.Fate, out.Source = Unlinked, ""
	case keep:
		out.Fate, out.Source, out.Actor = Retained, "", sgam.ActorRetention
	default:
		out.Fate = Deleted
	}
	return out
}

// Mend re-inserts a believed row over a longer window: the row Of is
// retracted and a copy of it (same value, source, actor, schema version
// and evidence links, supersedes Of) is inserted over [ValidFrom, ValidTo).
type Mend struct {
	Of        int64
	ValidFrom int64
	ValidTo   int64 // temporal.Open for an open copy
}

// PlanMend returns how the believed rows of one key (any order) must be
// mended when the rows in deleted are deleted, so that the believed rows
// left are exactly those that writing only the remaining assertions would
// have produced. Believed rows tile valid time (each ends where the next
// starts), so a deleted row's window goes to its believed predecessor,
// which is extended to the deleted row's valid_to; a run of deleted rows
// goes to the survivor before it. A deleted row with no predecessor, or
// after a gap (rows imported that way), leaves its window empty.
func PlanMend(believed []temporal.Row, deleted func(int64) bool) []Mend {
	rows := slices.Clone(believed)
	slices.SortFunc(rows, func(a, b temporal.Row) int {
		if a.ValidFrom != b.ValidFrom {
			return cmp.Compare(a.ValidFrom, b.ValidFrom)
		}
		return cmp.Compare(a.ID, b.ID)
	})
	var out []Mend
	var cur *temporal.Row
	var end int64
	flush := func() {
		if cur != nil && end != cur.ValidTo {
			out = append(out, Mend{Of: cur.ID, ValidFrom: cur.ValidFrom, ValidTo: end})
		}
	}
	for i := range rows {
		r := &rows[i]
		if deleted(r.ID) {
			if cur != nil && end == r.ValidFrom {
				end = r.ValidTo
			}
			continue
		}
		flush()
		cur, end = r, r.ValidTo
	}
	flush()
	return out
}

// Cutoff is a finite retention class and the instant at or before which
// what it governs was recorded for it to have expired.
type Cutoff struct {
	Class  string
	Before int64 // expired when recorded_at <= Before
	// Default: the class is the schema's episode_retention, which governs
	// episodes that name none.
	Default bool
}

// EpisodeCutoffs lists the finite retention classes of the schema with
// their cutoffs at now. Nothing expires without a schema.
func (g Gov) EpisodeCutoffs(now time.Time) []Cutoff {
	if g.Schema == nil {
		return nil
	}
	var out []Cutoff
	for name, r := range g.Schema.Retention {
		if r.Forever {
			continue
		}
		out = append(out, Cutoff{Class: name, Before: sgam.Micros(now.Add(-r.TTL)), Default: name == g.Schema.EpisodeRetention})
	}
	slices.SortFunc(out, func(a, b Cutoff) int { return cmp.Compare(a.Class, b.Class) })
	return out
}

// AttributeCutoffs lists the attributes whose retention class is finite,
// each with its cutoff at now, sorted by attribute.
func (g Gov) AttributeCutoffs(now time.Time) []Cutoff {
	if g.Schema == nil {
		return nil
	}
	var out []Cutoff
	for _, a := range g.Schema.Attributes {
		if a.Retention == "" {
			continue
		}
		ttl, forever, ok := g.Schema.RetentionTTL(a.Retention)
		if !ok || forever {
			continue
		}
		out = append(out, Cutoff{Class: a.Name, Before: sgam.Micros(now.Add(-ttl))})
	}
	slices.SortFunc(out, func(a, b Cutoff) int { return cmp.Compare(a.Class, b.Class) })
	return out
}

// RetentionKeeps reports whether attribute's retention keeps a fact row
// recorded at recordedAt once its episodes are gone, at now: the attribute
// has a retention class, and it is forever or has not run out.
func (g Gov) RetentionKeeps(attribute string, recordedAt int64, now time.Time) bool {
	if g.Schema == nil {
		return false
	}
	a, ok := g.Schema.Attribute(attribute)
	if !ok || a.Retention == "" {
		return false
	}
	ttl, forever, ok := g.Schema.RetentionTTL(a.Retention)
	if !ok {
		return false
	}
	return forever || recordedAt > sgam.Micros(now.Add(-ttl))
}
