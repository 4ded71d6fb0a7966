package sgam

import (
	"context"
	"time"
	"unicode/utf8"
)

// Search finds a tenant's episodes by their words: the evidence of recall.
// Every store keeps a full-text index of episode content, written in the
// transaction that captures the episode and deleted with it.
type Search interface {
	// SearchEpisodes ranks the tenant's episodes by how well their content
	// matches the terms of q.Text (words.Terms: stop words dropped; the
	// index stems), best first. Only episodes recorded by q.KnownAt (zero:
	// now) are searched.
	SearchEpisodes(ctx context.Context, q SearchQuery) ([]EpisodeHit, error)
}

// SearchQuery is a full-text search over a tenant's episodes.
type SearchQuery struct {
	Tenant  string
	Text    string
	Limit   int       // default 10, at most MaxSearchLimit
	KnownAt time.Time // zero: now
	// Snippet bounds each hit's snippet, in bytes (default 240).
	Snippet int
	// NoSnippet leaves every hit's Snippet empty: for a caller that ranks
	// the hits again and cuts snippets for the few it keeps.
	NoSnippet bool
}

// MaxSearchLimit bounds the hits of one search.
const MaxSearchLimit = 200

// MaxQuestionBytes bounds a search text or a recall question.
const MaxQuestionBytes = 4096

// EpisodeHit is one episode found by a search.
type EpisodeHit struct {
	Episode Episode `json:"episode"`
	// Score orders the hits, higher is better. Of SearchEpisodes it is
	// the index's own relevance (BM25 on SQLite, ts_rank on PostgreSQL)
	// and only compares hits of one search; of NearestEpisodes it is the
	// cosine similarity (-1 to 1), the same on every store.
	Score   float64 `json:"score"`
	Snippet string  `json:"snippet"`
}

// Check validates q and returns it with its defaults filled in.
func (q SearchQuery) Check() (SearchQuery, error) {
	if err := CheckTenant(q.Tenant); err != nil {
		return q, err
	}
	if len(q.Text) > MaxQuestionBytes {
		return q, Errorf(Invalid, "text", "is %d bytes; at most %d", len(q.Text), MaxQuestionBytes)
	}
	if !utf8.ValidString(q.Text) {
		return q, Errorf(Invalid, "text", "is not valid UTF-8")
	}
	switch {
	case q.Limit == 0:
		q.Limit = 10
	case q.Limit < 0 || q.Limit > MaxSearchLimit:
		return q, Errorf(Invalid, "limit", "must be between 1 and %d, not %d", MaxSearchLimit, q.Limit)
	}
	switch {
	case q.Snippet == 0:
		q.Snippet = 240
	case q.Snippet < 16 || q.Snippet > 4096:
		return q, Errorf(Invalid, "snippet", "must be between 16 and 4096 bytes, not %d", q.Snippet)
	}
	if !q.KnownAt.IsZero() {
		var err error
		if q.KnownAt, err = CheckTime("known_at", q.KnownAt); err != nil {
			return q, err
		}
	}
	return q, nil
}
