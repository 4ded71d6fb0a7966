package sgam

import (
	"bytes"
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
	if f.ID <= 0 {
		return Errorf(Invalid, "fact_id", "must be a positive integer")
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
	if f.Supersedes != nil && *f.Supersedes <= 0 {
		return Errorf(Invalid, "supersedes", "must be a positive fact id")
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
		a.Source != b.Source {
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
