package engine

import (
	"container/heap"
	"context"
	"encoding/binary"
	"fmt"
	"math"
	"slices"

	"github.com/sgam-dev/sgam"
)

// The engine has the optional vector capability of every store.
var (
	_ sgam.VectorSearch = (*Store)(nil)
	_ sgam.Embeddings   = (*Store)(nil)
)

// EpisodesToEmbed implements sgam.Embeddings.
func (s *Store) EpisodesToEmbed(ctx context.Context, model string, limit int) (out []sgam.Episode, err error) {
	defer s.track("EpisodesToEmbed", s.start(), &err)
	if err := sgam.CheckModel("model", model); err != nil {
		return nil, err
	}
	if limit <= 0 || limit > sgam.MaxEmbeddingBatch {
		return nil, sgam.Errorf(sgam.Invalid, "limit", "must be between 1 and %d, not %d", sgam.MaxEmbeddingBatch, limit)
	}
	return s.d.EpisodesToEmbed(ctx, model, limit)
}

// PutEmbeddings implements sgam.Embeddings. Every vector is checked here,
// and the dimension of each tenant's vectors against the stored ones
// inside the transaction, under the lock of the tenant's vectors of the
// model, so that two writers cannot store two dimensions.
func (s *Store) PutEmbeddings(ctx context.Context, model string, vs []sgam.EpisodeVector) (n int, err error) {
	defer s.track("PutEmbeddings", s.start(), &err)
	if err := sgam.CheckModel("model", model); err != nil {
		return 0, err
	}
	if len(vs) > sgam.MaxEmbeddingBatch {
		return 0, sgam.Errorf(sgam.Invalid, "vectors", "has %d vectors; at most %d at once", len(vs), sgam.MaxEmbeddingBatch)
	}
	type first struct{ i, dims int } // a tenant's first vector in the batch
	firsts := map[string]first{}
	seen := map[[2]string]bool{}
	out := make([]Vector, len(vs))
	for i, v := range vs {
		field := fmt.Sprintf("vectors[%d]", i)
		if err := sgam.CheckTenant(v.Tenant); err != nil {
			return 0, sgam.PrefixField(field, err)
		}
		if err := sgam.CheckEpisodeID("episode_id", v.EpisodeID); err != nil {
			return 0, sgam.PrefixField(field, err)
		}
		norm, err := sgam.CheckVector("vector", v.Vector)
		if err != nil {
			return 0, sgam.PrefixField(field, err)
		}
		var recorded int64
		if !v.RecordedAt.IsZero() {
			t, err := sgam.CheckTime("recorded_at", v.RecordedAt)
			if err != nil {
				return 0, sgam.PrefixField(field, err)
			}
			recorded = sgam.Micros(t)
		}
		k := [2]string{v.Tenant, v.EpisodeID}
		if seen[k] {
			return 0, sgam.Errorf(sgam.Invalid, field, "repeats the vector of tenant %s's episode %s in one batch", v.Tenant, v.EpisodeID)
		}
		seen[k] = true
		if f, ok := firsts[v.Tenant]; !ok {
			firsts[v.Tenant] = first{i, len(v.Vector)}
		} else if f.dims != len(v.Vector) {
			return 0, sgam.DimensionMismatch(field+".vector", v.Tenant, model, len(v.Vector), f.dims)
		}
		out[i] = Vector{Tenant: v.Tenant, EpisodeID: v.EpisodeID, Values: v.Vector, Norm: norm, RecordedAt: recorded}
	}
	if len(out) == 0 {
		return 0, nil
	}
	tenants := make([]string, 0, len(firsts))
	for t := range firsts {
		tenants = append(tenants, t)
	}
	slices.Sort(tenants) // one lock order for every writer
	err = s.d.Write(ctx, scope(tenants), func(tx Tx) error {
		for _, t := range tenants {
			dims, found, err := tx.LockEmbeddings(t, model)
			if err != nil {
				return err
			}
			if f := firsts[t]; found && dims != f.dims {
				return sgam.DimensionMismatch(fmt.Sprintf("vectors[%d].vector", f.i), t, model, f.dims, dims)
			}
		}
		n, err = tx.PutEmbeddings(model, out)
		return err
	})
	if err != nil {
		return 0, err
	}
	return n, nil
}

// NearestEpisodes implements sgam.VectorSearch.
func (s *Store) NearestEpisodes(ctx context.Context, q sgam.VectorQuery) (hits []sgam.EpisodeHit, err error) {
	defer s.track("NearestEpisodes", s.start(), &err)
	q, norm, err := q.Check()
	if err != nil {
		return nil, err
	}
	dims, found, err := s.d.EmbeddingDims(ctx, q.Tenant, q.Model)
	switch {
	case err != nil:
		return nil, err
	case !found:
		return []sgam.EpisodeHit{}, nil
	case dims != len(q.Vector):
		return nil, sgam.DimensionMismatch("vector", q.Tenant, q.Model, len(q.Vector), dims)
	}
	knownAt := sgam.Micros(q.KnownAt)
	if q.KnownAt.IsZero() {
		knownAt = sgam.Micros(s.now())
	}
	return s.d.Nearest(ctx, q.Tenant, q.Model, q.Vector, norm, knownAt, q.Limit)
}

// DropEmbeddings implements sgam.Embeddings.
func (s *Store) DropEmbeddings(ctx context.Context, keep string) (n int, err error) {
	defer s.track("DropEmbeddings", s.start(), &err)
	if keep != "" {
		if err := sgam.CheckModel("keep", keep); err != nil {
			return 0, err
		}
	}
	err = s.d.Write(ctx, "", func(tx Tx) error {
		n, err = tx.DropEmbeddings(keep)
		return err
	})
	return n, err
}

// Ranker keeps the limit vectors most similar to a query by cosine, for
// a driver that ranks in Go: the driver feeds it every candidate as
// stored (little-endian float32s, EncodeLE). The score is DotLE(q, v) /
// (|q| |v|), and the order higher scores first, then episode ids in byte
// order, on every store (SQLite ranks in SQL with DotLE and that order).
type Ranker struct {
	q     []byte
	qNorm float64
	limit int
	kept  scoredHeap
}

// Scored is a vector a Ranker kept.
type Scored struct {
	EpisodeID string
	Score     float64
}

// NewRanker returns a ranker of the limit vectors nearest to q (its norm
// qNorm).
func NewRanker(q []float32, qNorm float64, limit int) *Ranker {
	limit = max(limit, 1)
	return &Ranker{q: EncodeLE(q), qNorm: qNorm, limit: limit, kept: make(scoredHeap, 0, limit+1)}
}

// Add scores vector v (little-endian float32s) of norm norm; one of
// another dimension, or of no length, is passed over. Neither id nor v is
// kept (id is copied when the vector is), so a driver may pass buffers it
// reuses for the next row.
func (r *Ranker) Add(id, v []byte, norm float64) {
	if len(v) != len(r.q) || norm <= 0 {
		return
	}
	score := DotLE(r.q, v) / (r.qNorm * norm)
	if math.IsNaN(score) {
		return
	}
	if len(r.kept) == r.limit {
		w := r.kept[0]
		if score < w.Score || score == w.Score && string(id) >= w.EpisodeID {
			return
		}
	}
	heap.Push(&r.kept, Scored{EpisodeID: string(id), Score: score})
	if len(r.kept) > r.limit {
		heap.Pop(&r.kept)
	}
}

// Top returns the kept vectors, best first.
func (r *Ranker) Top() []Scored {
	out := slices.Clone(r.kept)
	slices.SortFunc(out, func(a, b Scored) int {
		if worse(a, b) {
			return 1
		}
		if worse(b, a) {
			return -1
		}
		return 0
	})
	return out
}

// worse orders scored vectors: a lower cosine, or an equal one of a
// later episode id.
func worse(a, b Scored) bool {
	return a.Score < b.Score || a.Score == b.Score && a.EpisodeID > b.EpisodeID
}

// scoredHeap is a min-heap by worse: its root is the worst vector kept.
type scoredHeap []Scored

func (h scoredHeap) Len() int           { return len(h) }
func (h scoredHeap) Less(i, j int) bool { return worse(h[i], h[j]) }
func (h scoredHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *scoredHeap) Push(x any)        { *h = append(*h, x.(Scored)) }
func (h *scoredHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}

// DotLE is the dot product of two vectors of one length encoded as
// little-endian float32s (EncodeLE), read in place: four lanes at a time
// in float32 (plenty for ranking by cosine), the lanes summed in float64.
func DotLE(a, b []byte) float64 {
	f := func(p []byte, i int) float32 { return math.Float32frombits(binary.LittleEndian.Uint32(p[4*i:])) }
	n := len(a) / 4
	var s0, s1, s2, s3 float32
	i := 0
	for ; i+4 <= n; i += 4 {
		s0 += f(a, i) * f(b, i)
		s1 += f(a, i+1) * f(b, i+1)
		s2 += f(a, i+2) * f(b, i+2)
		s3 += f(a, i+3) * f(b, i+3)
	}
	for ; i < n; i++ {
		s0 += f(a, i) * f(b, i)
	}
	return float64(s0) + float64(s1) + float64(s2) + float64(s3)
}

// EncodeLE encodes a vector as little-endian float32s, as both stores
// keep it.
func EncodeLE(v []float32) []byte {
	b := make([]byte, 4*len(v))
	for i, x := range v {
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(x))
	}
	return b
}
