package sgam

import (
	"bytes"
	"fmt"
	"slices"
	"time"
)

// CheckImportedEpisode validates an exported episode for import and
// normalizes it in place. Unlike AddEpisode, nothing is defaulted: an
// export carries every field.
func (l Limits) CheckImportedEpisode(e *Episode) error {
	if e.ID == "" {
		return Errorf(Invalid, "episode_id", "is required")
	}
	if e.Kind == "" {
		return Errorf(Invalid, "kind", "is required")
	}
	if e.OccurredAt.IsZero() {
		return Errorf(Invalid, "occurred_at", "is required")
	}
	recorded, err := CheckTime("recorded_at", e.RecordedAt)
	if err != nil {
		return err
	}
	n, err := l.CheckEpisode(*e, time.Time{})
	if err != nil {
		return err
	}
	n.RecordedAt = recorded
	*e = n
	return nil
}

// CheckImportedFact validates an exported fact row for import and
// normalizes it in place.
func (l Limits) CheckImportedFact(f *StoredFact) error {
	l = l.WithDefaults()
	if f.ID <= 0 || f.ID > MaxFactID {
		return Errorf(Invalid, "fact_id", "must be between 1 and %d", MaxFactID)
	}
	if err := f.Key().Check(); err != nil {
		return err
	}
	if f.Tombstone {
		if len(f.Value) != 0 && string(f.Value) != "null" {
			return Errorf(Invalid, "value", "a tombstone has no value")
		}
		f.Value = nil
	} else {
		v, err := CanonicalValue("value", f.Value, l.MaxValueBytes)
		if err != nil {
			return err
		}
		f.Value = v
		if len(f.Member) > 0 && string(f.Member) != string(v) {
			return Errorf(Invalid, "member", "a set member's row holds the member as its value")
		}
	}
	var err error
	if f.ValidFrom, err = CheckTime("valid_from", f.ValidFrom); err != nil {
		return err
	}
	if f.RecordedAt, err = CheckTime("recorded_at", f.RecordedAt); err != nil {
		return err
	}
	if f.ValidTo != nil {
		t, err := CheckTime("valid_to", *f.ValidTo)
		if err != nil {
			return err
		}
		if !t.After(f.ValidFrom) {
			return Errorf(Invalid, "valid_to", "must be after valid_from")
		}
		f.ValidTo = &t
	}
	if f.RetractedAt != nil {
		t, err := CheckTime("retracted_at", *f.RetractedAt)
		if err != nil {
			return err
		}
		if t.Before(f.RecordedAt) {
			return Errorf(Invalid, "retracted_at", "must not be before recorded_at")
		}
		f.RetractedAt = &t
	}
	if f.Supersedes != nil && (*f.Supersedes <= 0 || *f.Supersedes > MaxFactID) {
		return Errorf(Invalid, "supersedes", "must be a fact id between 1 and %d", MaxFactID)
	}
	if f.SchemaVersion < 0 {
		return Errorf(Invalid, "schema_version", "must not be negative")
	}
	seen := map[string]bool{}
	if f.Source != "" {
		if err := CheckEpisodeID("source", f.Source); err != nil {
			return err
		}
		seen[f.Source] = true
	}
	for i := range f.Evidence {
		e := &f.Evidence[i]
		if err := CheckEpisodeID("evidence.episode_id", e.EpisodeID); err != nil {
			return err
		}
		if seen[e.EpisodeID] {
			return Errorf(Invalid, "evidence", "lists episode %s twice", e.EpisodeID)
		}
		seen[e.EpisodeID] = true
		if e.RecordedAt, err = CheckTime("evidence.recorded_at", e.RecordedAt); err != nil {
			return err
		}
	}
	if f.Actor != "" {
		if err := checkIdentifier("actor", f.Actor, maxKindBytes); err != nil {
			return err
		}
	}
	if f.Source == "" && len(f.Evidence) == 0 && f.Actor == "" {
		return Errorf(Invalid, "source", "is required: every fact cites the episode it came from, or names the system actor that keeps it")
	}
	f.Sources = []string{}
	if f.Source != "" {
		f.Sources = append(f.Sources, f.Source)
	}
	for _, e := range sortedEvidence(f.Evidence) {
		f.Sources = append(f.Sources, e.EpisodeID)
	}
	return nil
}

// EpisodesEqual reports whether two episodes are the same row.
func EpisodesEqual(a, b Episode) bool {
	if a.Retention != b.Retention {
		return false
	}
	return a.Tenant == b.Tenant && a.ID == b.ID && a.Session == b.Session && a.Kind == b.Kind &&
		a.Content == b.Content && a.OccurredAt.Equal(b.OccurredAt) && a.RecordedAt.Equal(b.RecordedAt) &&
		bytes.Equal(a.Metadata, b.Metadata) && a.IdempotencyKey == b.IdempotencyKey
}

// StoredFactsEqual reports whether two fact rows, evidence included, are
// the same row.
func StoredFactsEqual(a, b StoredFact) bool {
	eqTime := func(x, y *time.Time) bool { return (x == nil) == (y == nil) && (x == nil || x.Equal(*y)) }
	eqID := func(x, y *int64) bool { return (x == nil) == (y == nil) && (x == nil || *x == *y) }
	if a.ID != b.ID || a.Key() != b.Key() || a.Tombstone != b.Tombstone || !bytes.Equal(a.Value, b.Value) ||
		!a.ValidFrom.Equal(b.ValidFrom) || !eqTime(a.ValidTo, b.ValidTo) || !a.RecordedAt.Equal(b.RecordedAt) ||
		!eqTime(a.RetractedAt, b.RetractedAt) || !eqID(a.Supersedes, b.Supersedes) || a.SchemaVersion != b.SchemaVersion ||
		a.Source != b.Source || a.Actor != b.Actor {
		return false
	}
	return slices.EqualFunc(sortedEvidence(a.Evidence), sortedEvidence(b.Evidence), func(x, y Evidence) bool {
		return x.EpisodeID == y.EpisodeID && x.RecordedAt.Equal(y.RecordedAt)
	})
}

func sortedEvidence(es []Evidence) []Evidence {
	out := slices.Clone(es)
	slices.SortFunc(out, func(x, y Evidence) int {
		if c := x.RecordedAt.Compare(y.RecordedAt); c != 0 {
			return c
		}
		switch {
		case x.EpisodeID < y.EpisodeID:
			return -1
		case x.EpisodeID > y.EpisodeID:
			return 1
		}
		return 0
	})
	return out
}

// CheckImportBatch validates and normalizes every record of a batch in
// place (CheckImportedEpisode, CheckImportedFact, the field prefixed with
// the record: "facts[3].valid_to"), and checks what can be checked of the
// batch on its own: no episode or fact twice.
func (l Limits) CheckImportBatch(b ImportBatch) error {
	for i := range b.Episodes {
		if err := l.CheckImportedEpisode(&b.Episodes[i]); err != nil {
			return PrefixField(fmt.Sprintf("episodes[%d]", i), err)
		}
	}
	for i := range b.Facts {
		if err := l.CheckImportedFact(&b.Facts[i]); err != nil {
			return PrefixField(fmt.Sprintf("facts[%d]", i), err)
		}
	}
	episodes := make(map[[2]string]int, len(b.Episodes))
	for i, e := range b.Episodes {
		k := [2]string{e.Tenant, e.ID}
		if j, dup := episodes[k]; dup {
			return Errorf(Invalid, fmt.Sprintf("episodes[%d].episode_id", i), "episode %s of tenant %s is also episodes[%d]", e.ID, e.Tenant, j)
		}
		episodes[k] = i
	}
	facts := make(map[int64]int, len(b.Facts))
	for i, f := range b.Facts {
		if j, dup := facts[f.ID]; dup {
			return Errorf(Invalid, fmt.Sprintf("facts[%d].fact_id", i), "fact %d is also facts[%d]", f.ID, j)
		}
		facts[f.ID] = i
	}
	return nil
}

// LatestInstant returns the latest transaction time in a batch: what the
// store's transaction clock must not fall behind after importing it.
func (b ImportBatch) LatestInstant() time.Time {
	var t time.Time
	later := func(u time.Time) {
		if u.After(t) {
			t = u
		}
	}
	for _, e := range b.Episodes {
		later(e.RecordedAt)
	}
	for _, f := range b.Facts {
		later(f.RecordedAt)
		if f.RetractedAt != nil {
			later(*f.RetractedAt)
		}
		for _, e := range f.Evidence {
			later(e.RecordedAt)
		}
	}
	return t
}
