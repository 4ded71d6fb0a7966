package engine

import (
	"context"

	"github.com/sgam-dev/sgam"
	"github.com/sgam-dev/sgam/words"
)

// SearchEpisodes implements sgam.Search: the terms and the snippets are
// cut here, once, so that both stores search for the same words.
func (s *Store) SearchEpisodes(ctx context.Context, q sgam.SearchQuery) (hits []sgam.EpisodeHit, err error) {
	defer s.track("SearchEpisodes", s.start(), &err)
	if q, err = q.Check(); err != nil {
		return nil, err
	}
	terms := words.Terms(q.Text, words.MaxTerms)
	if len(terms) == 0 {
		return []sgam.EpisodeHit{}, nil
	}
	knownAt := sgam.Micros(q.KnownAt)
	if q.KnownAt.IsZero() {
		knownAt = sgam.Micros(s.now())
	}
	if hits, err = s.d.Search(ctx, q.Tenant, terms, knownAt, q.Limit); err != nil {
		return nil, err
	}
	if !q.NoSnippet {
		for i := range hits {
			hits[i].Snippet = words.Snippet(hits[i].Episode.Content, terms, q.Snippet)
		}
	}
	return hits, nil
}

// Reindex implements sgam.Admin.
func (s *Store) Reindex(ctx context.Context, tenant string, progress func(done, total int)) (n int, err error) {
	defer s.track("Reindex", s.start(), &err)
	if tenant != "" {
		if err := sgam.CheckTenant(tenant); err != nil {
			return 0, err
		}
	}
	if progress == nil {
		progress = func(int, int) {}
	}
	return s.d.Reindex(ctx, tenant, progress)
}
