package storetest

import (
	"flag"
	"fmt"
	"math"
	"math/rand/v2"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sgam-dev/sgam"
)

// VectorStore is a store with the optional vector capability.
type VectorStore interface {
	sgam.Store
	sgam.VectorSearch
	sgam.Embeddings
}

// vectors is the store's vector capability, for the vector section.
func (b *bundle) vectors() VectorStore {
	b.t.Helper()
	v, ok := b.store.(VectorStore)
	require.True(b.t, ok, "the vector section runs on stores with vectors (sgam.VectorSearch, sgam.Embeddings)")
	return v
}

// RunVectors runs the conformance section of the optional vector
// capability (sgam.VectorSearch, sgam.Embeddings) against stores from
// newStore, which must have it.
func RunVectors(t *testing.T, newStore Factory) {
	const m1, m2 = "embed-1", "embed-2"
	put := func(b *bundle, model string, vs ...sgam.EpisodeVector) int {
		b.t.Helper()
		n, err := b.vectors().PutEmbeddings(b.ctx, model, vs)
		require.NoError(b.t, err)
		return n
	}
	vec := func(tenant, id string, v ...float32) sgam.EpisodeVector {
		return sgam.EpisodeVector{Tenant: tenant, EpisodeID: id, Vector: v}
	}
	// nearest returns the ids of the hits, checking that each is the
	// tenant's and has no snippet.
	nearest := func(b *bundle, q sgam.VectorQuery) []string {
		b.t.Helper()
		hits, err := b.vectors().NearestEpisodes(b.ctx, q)
		require.NoError(b.t, err)
		ids := []string{}
		for i, h := range hits {
			require.Equal(b.t, q.Tenant, h.Episode.Tenant)
			require.Empty(b.t, h.Snippet)
			require.NotEmpty(b.t, h.Episode.Content)
			if i > 0 {
				require.LessOrEqual(b.t, h.Score, hits[i-1].Score, "best first")
			}
			ids = append(ids, h.Episode.ID)
		}
		return ids
	}
	toEmbed := func(b *bundle, model string, limit int) [][2]string {
		b.t.Helper()
		eps, err := b.vectors().EpisodesToEmbed(b.ctx, model, limit)
		require.NoError(b.t, err)
		out := [][2]string{}
		for _, e := range eps {
			require.NotEmpty(b.t, e.Content)
			out = append(out, [2]string{e.Tenant, e.ID})
		}
		return out
	}

	t.Run("PutAndRank", func(t *testing.T) {
		t.Parallel()
		b := setup(t, newStore)
		for _, id := range []string{"e1", "e2", "e3", "e4"} {
			b.episode(tenantA, id, "text of "+id, "2026-01-01T00:00:00Z")
		}
		require.Equal(t, 4, put(b, m1,
			vec(tenantA, "e1", 1, 0, 0),
			vec(tenantA, "e2", 0.8, 0.6, 0),
			vec(tenantA, "e3", 0, 1, 0),
			vec(tenantA, "e4", -1, 0, 0)))
		q := sgam.VectorQuery{Tenant: tenantA, Model: m1, Vector: []float32{3, 0, 0}}
		hits, err := b.vectors().NearestEpisodes(b.ctx, q)
		require.NoError(t, err)
		require.Len(t, hits, 4)
		want := []struct {
			id    string
			score float64
		}{{"e1", 1}, {"e2", 0.8}, {"e3", 0}, {"e4", -1}}
		for i, w := range want {
			require.Equal(t, w.id, hits[i].Episode.ID)
			require.InDelta(t, w.score, hits[i].Score, 1e-6, "the cosine, whatever the lengths")
		}
		require.Equal(t, "text of e1", hits[0].Episode.Content)
		q.Limit = 2
		require.Equal(t, []string{"e1", "e2"}, nearest(b, q))

		// A vector put again replaces the old one; ties order by id.
		require.Equal(t, 1, put(b, m1, vec(tenantA, "e3", 2, 0, 0)))
		require.Equal(t, []string{"e1", "e3"}, nearest(b, q))
		q.Limit = 0
		require.Equal(t, []string{"e1", "e3", "e2", "e4"}, nearest(b, q), "default limit 10")

		// An episode that does not exist (forgotten meanwhile, or never
		// captured) is skipped, as is a placeholder with no content.
		b.assert(key(tenantA, "door", "color"), `"red"`, "2026-01-01T00:00:00Z", "e9")
		require.Equal(t, 1, put(b, m1, vec(tenantA, "gone", 1, 0, 0), vec(tenantA, "e9", 1, 0, 0), vec(tenantA, "e2", 0, 0, 1)))
		require.Equal(t, []string{"e1", "e3", "e2", "e4"}, nearest(b, q))
		n, err := b.vectors().PutEmbeddings(b.ctx, m1, nil)
		require.NoError(t, err)
		require.Zero(t, n)
		b.requireClean()
	})

	t.Run("TenantWall", func(t *testing.T) {
		t.Parallel()
		b := setup(t, newStore)
		b.episode(tenantA, "e1", "acme one", "2026-01-01T00:00:00Z")
		b.episode(tenantA, "e2", "acme two", "2026-01-01T00:00:00Z")
		b.episode(tenantB, "e1", "globex one", "2026-01-01T00:00:00Z")
		b.episode(tenantB, "b9", "globex nine", "2026-01-01T00:00:00Z")
		// One batch of two tenants; B's vectors are the query itself.
		require.Equal(t, 4, put(b, m1,
			vec(tenantA, "e1", 0, 1), vec(tenantA, "e2", 1, 1),
			vec(tenantB, "e1", 1, 0), vec(tenantB, "b9", 1, 0)))
		require.Equal(t, []string{"e2", "e1"}, nearest(b, sgam.VectorQuery{Tenant: tenantA, Model: m1, Vector: []float32{1, 0}}))
		require.Equal(t, []string{"b9", "e1"}, nearest(b, sgam.VectorQuery{Tenant: tenantB, Model: m1, Vector: []float32{1, 0}}))
		hits, err := b.vectors().NearestEpisodes(b.ctx, sgam.VectorQuery{Tenant: tenantA, Model: m1, Vector: []float32{1, 0}, Limit: 1})
		require.NoError(t, err)
		require.Equal(t, "acme two", hits[0].Episode.Content)
		require.Empty(t, nearest(b, sgam.VectorQuery{Tenant: "initech", Model: m1, Vector: []float32{1, 0}}))
		// A vector for an id that only another tenant has is stored nowhere.
		require.Zero(t, put(b, m1, vec(tenantA, "b9", 1, 0)))
		require.Equal(t, []string{"e2", "e1"}, nearest(b, sgam.VectorQuery{Tenant: tenantA, Model: m1, Vector: []float32{1, 0}}))
	})

	t.Run("Models", func(t *testing.T) {
		t.Parallel()
		b := setup(t, newStore)
		b.episode(tenantA, "e1", "one", "2026-01-01T00:00:00Z")
		b.episode(tenantA, "e2", "two", "2026-01-01T00:00:00Z")
		put(b, m1, vec(tenantA, "e1", 1, 0, 0), vec(tenantA, "e2", 0, 1, 0))
		require.Equal(t, [][2]string{{tenantA, "e1"}, {tenantA, "e2"}}, toEmbed(b, m2, 10), "no vector of m2 yet")
		put(b, m2, vec(tenantA, "e1", 0, 1), vec(tenantA, "e2", 1, 0))
		require.Equal(t, []string{"e1", "e2"}, nearest(b, sgam.VectorQuery{Tenant: tenantA, Model: m1, Vector: []float32{1, 0, 0}}))
		require.Equal(t, []string{"e2", "e1"}, nearest(b, sgam.VectorQuery{Tenant: tenantA, Model: m2, Vector: []float32{1, 0}}))
		require.Empty(t, nearest(b, sgam.VectorQuery{Tenant: tenantA, Model: "embed-3", Vector: []float32{1, 0}}))

		n, err := b.vectors().DropEmbeddings(b.ctx, m2)
		require.NoError(t, err)
		require.Equal(t, 2, n, "m1's vectors")
		require.Empty(t, nearest(b, sgam.VectorQuery{Tenant: tenantA, Model: m1, Vector: []float32{1, 0, 0}}))
		require.Equal(t, []string{"e2", "e1"}, nearest(b, sgam.VectorQuery{Tenant: tenantA, Model: m2, Vector: []float32{1, 0}}))
		// With m1's vectors gone, m1 may come back with another dimension.
		put(b, m1, vec(tenantA, "e1", 1, 0, 0, 0))
		n, err = b.vectors().DropEmbeddings(b.ctx, "")
		require.NoError(t, err)
		require.Equal(t, 3, n, "every model's")
		require.Empty(t, nearest(b, sgam.VectorQuery{Tenant: tenantA, Model: m2, Vector: []float32{1, 0}}))
		n, err = b.vectors().DropEmbeddings(b.ctx, "")
		require.NoError(t, err)
		require.Zero(t, n)
		_, err = b.vectors().DropEmbeddings(b.ctx, " x")
		requireCode(t, err, sgam.Invalid, "keep")
	})

	t.Run("KnownAt", func(t *testing.T) {
		t.Parallel()
		b := setup(t, newStore)
		b.tick("2026-06-01T09:00:00Z")
		b.episode(tenantA, "e1", "early", "2026-06-01T09:00:00Z")
		b.tick("2026-06-02T09:00:00Z")
		b.episode(tenantA, "e2", "late", "2026-06-02T09:00:00Z")
		b.tick("2026-06-03T09:00:00Z")
		put(b, m1, vec(tenantA, "e1", 0, 1), vec(tenantA, "e2", 1, 0))
		q := sgam.VectorQuery{Tenant: tenantA, Model: m1, Vector: []float32{1, 0}}
		require.Equal(t, []string{"e2", "e1"}, nearest(b, q))
		q.KnownAt = b.at("2026-06-01T12:00:00Z")
		require.Equal(t, []string{"e1"}, nearest(b, q), "only what was recorded by known_at, though embedded later")
		q.KnownAt = b.at("2026-05-01T00:00:00Z")
		require.Empty(t, nearest(b, q))
	})

	t.Run("BadInput", func(t *testing.T) {
		t.Parallel()
		b := setup(t, newStore)
		b.episode(tenantA, "e1", "one", "2026-01-01T00:00:00Z")
		b.episode(tenantA, "e2", "two", "2026-01-01T00:00:00Z")
		b.episode(tenantB, "e1", "one", "2026-01-01T00:00:00Z")
		put(b, m1, vec(tenantA, "e1", 1, 0, 0))

		// A dimension other than the stored one is refused, naming the
		// vector, and nothing of the batch is stored.
		_, err := b.vectors().PutEmbeddings(b.ctx, m1, []sgam.EpisodeVector{vec(tenantA, "e2", 1, 0, 0, 0)})
		requireCode(t, err, sgam.Invalid, "vectors[0].vector")
		_, err = b.vectors().PutEmbeddings(b.ctx, m1, []sgam.EpisodeVector{vec(tenantB, "e1", 1, 0), vec(tenantA, "e2", 1, 0)})
		requireCode(t, err, sgam.Invalid, "vectors[1].vector")
		_, err = b.vectors().PutEmbeddings(b.ctx, m1, []sgam.EpisodeVector{vec(tenantB, "e1", 1, 0), vec(tenantB, "e1", 0, 1)})
		requireCode(t, err, sgam.Invalid, "vectors[1]")
		_, err = b.vectors().PutEmbeddings(b.ctx, m1, []sgam.EpisodeVector{vec(tenantB, "e1", 1, 0), vec(tenantB, "e2", 0, 1, 0)})
		requireCode(t, err, sgam.Invalid, "vectors[1].vector")
		require.Empty(t, nearest(b, sgam.VectorQuery{Tenant: tenantB, Model: m1, Vector: []float32{1, 0}}), "nothing of a refused batch")
		_, err = b.vectors().NearestEpisodes(b.ctx, sgam.VectorQuery{Tenant: tenantA, Model: m1, Vector: []float32{1, 0}})
		requireCode(t, err, sgam.Invalid, "vector")
		// Another tenant's dimension is its own.
		require.Equal(t, 1, put(b, m1, vec(tenantB, "e1", 1, 0)))

		nan := float32(math.NaN())
		inf := float32(math.Inf(1))
		for _, c := range []struct {
			v     sgam.EpisodeVector
			field string
		}{
			{vec(tenantA, "e2"), "vectors[0].vector"},
			{vec(tenantA, "e2", 0, 0, 0), "vectors[0].vector"},
			{vec(tenantA, "e2", 1, nan, 0), "vectors[0].vector"},
			{vec(tenantA, "e2", 1, inf, 0), "vectors[0].vector"},
			{sgam.EpisodeVector{Tenant: tenantA, EpisodeID: "e2", Vector: make([]float32, sgam.MaxVectorDims+1)}, "vectors[0].vector"},
			{vec("", "e2", 1, 0, 0), "vectors[0].tenant"},
			{vec(tenantA, "", 1, 0, 0), "vectors[0].episode_id"},
		} {
			_, err := b.vectors().PutEmbeddings(b.ctx, m1, []sgam.EpisodeVector{c.v})
			requireCode(t, err, sgam.Invalid, c.field)
		}
		_, err = b.vectors().PutEmbeddings(b.ctx, "", []sgam.EpisodeVector{vec(tenantA, "e2", 1, 0, 0)})
		requireCode(t, err, sgam.Invalid, "model")
		_, err = b.vectors().PutEmbeddings(b.ctx, m1, make([]sgam.EpisodeVector, sgam.MaxEmbeddingBatch+1))
		requireCode(t, err, sgam.Invalid, "vectors")

		q := sgam.VectorQuery{Tenant: tenantA, Model: m1, Vector: []float32{1, 0, 0}}
		for _, c := range []struct {
			tweak func(*sgam.VectorQuery)
			field string
		}{
			{func(q *sgam.VectorQuery) { q.Tenant = "" }, "tenant"},
			{func(q *sgam.VectorQuery) { q.Model = "" }, "model"},
			{func(q *sgam.VectorQuery) { q.Vector = nil }, "vector"},
			{func(q *sgam.VectorQuery) { q.Vector = []float32{nan, 0, 0} }, "vector"},
			{func(q *sgam.VectorQuery) { q.Vector = []float32{0, 0, 0} }, "vector"},
			{func(q *sgam.VectorQuery) { q.Limit = sgam.MaxSearchLimit + 1 }, "limit"},
			{func(q *sgam.VectorQuery) { q.Limit = -1 }, "limit"},
		} {
			bad := q
			c.tweak(&bad)
			_, err := b.vectors().NearestEpisodes(b.ctx, bad)
			requireCode(t, err, sgam.Invalid, c.field)
		}
		_, err = b.vectors().EpisodesToEmbed(b.ctx, m1, 0)
		requireCode(t, err, sgam.Invalid, "limit")
		_, err = b.vectors().EpisodesToEmbed(b.ctx, m1, sgam.MaxEmbeddingBatch+1)
		requireCode(t, err, sgam.Invalid, "limit")
		_, err = b.vectors().EpisodesToEmbed(b.ctx, "", 1)
		requireCode(t, err, sgam.Invalid, "model")
	})

	t.Run("EpisodesToEmbed", func(t *testing.T) {
		t.Parallel()
		b := setup(t, newStore)
		b.tick("2026-06-01T09:00:00Z")
		b.episode(tenantB, "b1", "globex first", "2026-06-01T09:00:00Z")
		b.tick("2026-06-02T09:00:00Z")
		e2 := b.episode(tenantA, "a2", "acme second", "2026-06-02T09:00:00Z")
		// A write naming an episode not captured yet makes a placeholder:
		// nothing to embed until its content comes.
		b.assert(key(tenantA, "door", "color"), `"red"`, "2026-06-02T09:00:00Z", "a9")
		b.tick("2026-06-03T09:00:00Z")
		b.episode(tenantA, "a3", "acme third", "2026-06-03T09:00:00Z")

		require.Equal(t, [][2]string{{tenantB, "b1"}, {tenantA, "a2"}, {tenantA, "a3"}}, toEmbed(b, m1, 10), "every tenant's, oldest recorded first")
		require.Equal(t, [][2]string{{tenantB, "b1"}}, toEmbed(b, m1, 1))

		// The recorded_at of the episode embedded must still be the
		// episode's: otherwise the vector is of another episode.
		stale := vec(tenantA, "a2", 1, 0)
		stale.RecordedAt = e2.RecordedAt.Add(-1e3)
		require.Zero(t, put(b, m1, stale))
		fresh := vec(tenantA, "a2", 1, 0)
		fresh.RecordedAt = e2.RecordedAt
		require.Equal(t, 2, put(b, m1, fresh, vec(tenantB, "b1", 0, 1)))
		require.Equal(t, [][2]string{{tenantA, "a3"}}, toEmbed(b, m1, 10))
		require.Len(t, toEmbed(b, m2, 10), 3, "another model has all to do")

		b.tick("2026-06-04T09:00:00Z")
		_, err := b.store.AddEpisode(b.ctx, sgam.Episode{Tenant: tenantA, ID: "a9", Kind: "message", Content: "we painted the door red", OccurredAt: b.at("2026-06-02T09:00:00Z")})
		require.NoError(t, err)
		require.Equal(t, [][2]string{{tenantA, "a9"}, {tenantA, "a3"}}, toEmbed(b, m1, 10), "a filled-in placeholder keeps its recorded_at")
		put(b, m1, vec(tenantA, "a3", 1, 1), vec(tenantA, "a9", 1, 2))
		require.Empty(t, toEmbed(b, m1, 10))

		// Vectors are not exported: an imported copy has all to embed.
		dump := Export(t, b.store, "")
		c := setup(t, newStore)
		_, err = c.store.Import(c.ctx, sgam.ImportBatch{Episodes: dump.Episodes, Facts: dump.Facts})
		require.NoError(t, err)
		require.Len(t, toEmbed(c, m1, 10), 4)
	})

	t.Run("Observer", func(t *testing.T) {
		runObserver(t, newStore, reflect.TypeFor[sgam.VectorSearch](), reflect.TypeFor[sgam.Embeddings]())
	})

	t.Run("Expire", func(t *testing.T) {
		t.Parallel()
		b := setup(t, newStore)
		_, err := b.store.ApplyDefaultSchema(b.ctx, []byte(expireSchema), false)
		require.NoError(t, err)
		for _, tenant := range []string{tenantA, tenantB} {
			for _, e := range []struct{ id, retention string }{{"sess1", "session"}, {"keep", ""}} {
				_, err := b.store.AddEpisode(b.ctx, sgam.Episode{Tenant: tenant, ID: e.id, Content: "said in " + e.id, Retention: e.retention})
				require.NoError(t, err)
			}
			put(b, m1, vec(tenant, "sess1", 1, 0), vec(tenant, "keep", 0, 1))
		}
		b.tick("2026-02-01T00:00:00Z")
		_, err = b.store.Expire(b.ctx)
		require.NoError(t, err)
		for _, tenant := range []string{tenantA, tenantB} {
			require.Equal(t, []string{"keep"}, nearest(b, sgam.VectorQuery{Tenant: tenant, Model: m1, Vector: []float32{1, 0}, Limit: 10}),
				"%s: the expired episode's vector went with it", tenant)
		}
	})

	t.Run("Forget", func(t *testing.T) {
		t.Parallel()
		b := setup(t, newStore)
		b.episode(tenantA, "e1", "alpha", "2026-06-01T09:00:00Z")
		b.episode(tenantA, "e2", "beta", "2026-06-01T10:00:00Z")
		b.episode(tenantA, "e3", "gamma", "2026-06-01T11:00:00Z")
		b.assert(key(tenantA, "s3", "note"), `"x"`, "2026-06-01T11:00:00Z", "e3")
		b.episode(tenantB, "e1", "alpha", "2026-06-01T09:00:00Z")
		b.episode(tenantB, "e2", "beta", "2026-06-01T09:00:00Z")
		for _, m := range []string{m1, m2} {
			put(b, m, vec(tenantA, "e1", 1, 0), vec(tenantA, "e2", 1, 1), vec(tenantA, "e3", 0, 1), vec(tenantB, "e1", 1, 0), vec(tenantB, "e2", 1, 1))
		}
		qa := sgam.VectorQuery{Tenant: tenantA, Model: m1, Vector: []float32{1, 0}}
		qb := sgam.VectorQuery{Tenant: tenantB, Model: m1, Vector: []float32{1, 0}}

		_, err := b.store.Forget(b.ctx, sgam.ForgetRequest{Tenant: tenantA, Episode: "e1"})
		require.NoError(t, err)
		require.Equal(t, []string{"e2", "e3"}, nearest(b, qa), "the episode's vectors went with it")
		require.Equal(t, []string{"e1", "e2"}, nearest(b, qb), "the other tenant's copy stays")

		_, err = b.store.Forget(b.ctx, sgam.ForgetRequest{Tenant: tenantA, Subject: "s3"})
		require.NoError(t, err)
		require.Equal(t, []string{"e2"}, nearest(b, qa), "the subject's only episode went, and its vectors")
		b.requireClean()

		_, err = b.store.Forget(b.ctx, sgam.ForgetRequest{Tenant: tenantA, All: true})
		require.NoError(t, err)
		require.Empty(t, nearest(b, qa))
		qa.Model = m2
		require.Empty(t, nearest(b, qa), "every model's")
		require.Equal(t, []string{"e1", "e2"}, nearest(b, qb))
		n, err := b.vectors().DropEmbeddings(b.ctx, "")
		require.NoError(t, err)
		require.Equal(t, 4, n, "only B's are left")

		// An episode captured again under a forgotten id has no vector.
		b.episode(tenantA, "e1", "alpha again", "2026-06-01T09:00:00Z")
		require.Equal(t, [][2]string{{tenantA, "e1"}, {tenantB, "e1"}, {tenantB, "e2"}}, toEmbed(b, m1, 10))
		b.requireClean()
	})
}

var (
	benchVectors = flag.String("sgam.vectors", "10000", "comma-separated vector counts of BenchmarkNearest (one tenant and model)")
	benchDims    = flag.String("sgam.dims", "64", "comma-separated vector dimensions of BenchmarkNearest")
)

// BenchmarkNearest measures the exact search (NearestEpisodes, limit 10)
// over one tenant's vectors of one model, for each count of -sgam.vectors
// and dimension of -sgam.dims, with another tenant's vectors of the same
// size beside them (which the search must not read), and the embedding
// dispatcher's look for work (EpisodesToEmbed) when there is none.
// Vectors are random, so every search compares all of them.
func BenchmarkNearest(b *testing.B, newStore Factory) {
	counts, err := ints(*benchVectors)
	if err != nil {
		b.Fatalf("-sgam.vectors: %v", err)
	}
	dims, err := ints(*benchDims)
	if err != nil {
		b.Fatalf("-sgam.dims: %v", err)
	}
	for _, n := range counts {
		for _, d := range dims {
			b.Run(fmt.Sprintf("vectors=%d/dims=%d", n, d), func(b *testing.B) {
				ctx := b.Context()
				store := newStore(b, Options{}).(VectorStore)
				rng := rand.New(rand.NewPCG(uint64(n), uint64(d)))
				random := func() []float32 {
					v := make([]float32, d)
					for i := range v {
						v[i] = float32(rng.NormFloat64())
					}
					return v
				}
				recorded := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
				load := time.Now()
				for _, tenant := range []string{tenantA, tenantB} {
					for i := 0; i < n; i += 1000 {
						m := min(1000, n-i)
						eps := make([]sgam.Episode, m)
						vs := make([]sgam.EpisodeVector, m)
						for j := range eps {
							id := fmt.Sprintf("e%07d", i+j)
							eps[j] = sgam.Episode{Tenant: tenant, ID: id, Kind: sgam.KindMessage, Content: "episode " + id,
								OccurredAt: recorded, RecordedAt: recorded}
							vs[j] = sgam.EpisodeVector{Tenant: tenant, EpisodeID: id, Vector: random()}
						}
						if _, err := store.Import(ctx, sgam.ImportBatch{Episodes: eps}); err != nil {
							b.Fatal(err)
						}
						if _, err := store.PutEmbeddings(ctx, "bench", vs); err != nil {
							b.Fatal(err)
						}
					}
				}
				b.Logf("loaded %d vectors of %d dimensions for each of 2 tenants in %s", n, d, time.Since(load).Round(time.Millisecond))
				q := sgam.VectorQuery{Tenant: tenantA, Model: "bench", Vector: random()}
				b.Run("Nearest", func(b *testing.B) {
					for b.Loop() {
						hits, err := store.NearestEpisodes(ctx, q)
						if err != nil || len(hits) != 10 {
							b.Fatalf("%d hits, %v", len(hits), err)
						}
					}
					b.ReportMetric(float64(b.N*n)/b.Elapsed().Seconds(), "vectors/s")
				})
				// The embedding dispatcher's look when every episode (of
				// both tenants) has a vector: a walk of all of them.
				b.Run("NothingToEmbed", func(b *testing.B) {
					for b.Loop() {
						left, err := store.EpisodesToEmbed(ctx, "bench", 1)
						if err != nil || len(left) != 0 {
							b.Fatalf("%d left, %v", len(left), err)
						}
					}
				})
			})
		}
	}
}

func ints(list string) ([]int, error) {
	var out []int
	for _, s := range strings.Split(list, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil || n < 10 {
			return nil, fmt.Errorf("%q: want numbers of at least 10", s)
		}
		out = append(out, n)
	}
	return out, nil
}
