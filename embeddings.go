package sgam

import (
	"context"
	"math"
	"time"
)

// Episode vectors are recall's second kind of evidence beside full-text
// search, when an embeddings endpoint is configured (package llm's
// Embedder, kept up to date by package queue). A vector is derived data:
// it is stored under its episode's tenant, deleted with its episode
// (forget, expiry: the stores' foreign keys cascade), never exported
// (embedding the episodes again rebuilds it), and searched exactly,
// comparing every vector of the tenant and model. The model names the
// vector space: vectors of two models never meet, and every vector of one
// tenant and model has the same dimension.
//
// Vectors are an optional capability, outside Store: a consumer is given
// them in its configuration (recall.Recaller.WithEmbedder, queue.Config),
// and without them recall is lexical. Both stores of this module have it.

// VectorSearch ranks a tenant's episodes by their vectors: recall's side.
type VectorSearch interface {
	// NearestEpisodes ranks the tenant's episodes recorded by q.KnownAt
	// (zero: now) that have a vector for q.Model by cosine similarity to
	// q.Vector, best first (equal scores by episode id), at most
	// q.Limit; exact (every vector of the tenant and model is compared).
	// Hits carry the cosine as Score and no snippet. A tenant with no
	// vectors of the model has no hits; a query vector of another
	// dimension than the stored ones is Invalid (field "vector").
	NearestEpisodes(ctx context.Context, q VectorQuery) ([]EpisodeHit, error)
}

// Embeddings writes the vectors of every tenant's episodes: the
// store-wide side, for the embedding job of a worker process, never for
// a tenant's caller.
type Embeddings interface {
	// EpisodesToEmbed lists up to limit episodes (any tenant, oldest
	// recorded first; at most MaxEmbeddingBatch) with content and no
	// vector for model: what an embedding job has left to do. Placeholder
	// episodes (no content yet) are not listed.
	EpisodesToEmbed(ctx context.Context, model string, limit int) ([]Episode, error)
	// PutEmbeddings stores vectors of model (replacing any of the same
	// tenant, episode and model) in one transaction, at most
	// MaxEmbeddingBatch. An episode that no longer exists, has no content,
	// or (when EpisodeVector.RecordedAt is set) is not the one that was
	// embedded, is skipped (it was forgotten meanwhile), not an error;
	// it returns how many were stored. A vector whose dimension differs
	// from the stored ones of its tenant and model is Invalid and nothing
	// is stored.
	PutEmbeddings(ctx context.Context, model string, vs []EpisodeVector) (int, error)
	// DropEmbeddings deletes the vectors of every model but keep (of all
	// models when keep is ""), store-wide, and returns how many: after a
	// change of model, once the new one has embedded every episode.
	DropEmbeddings(ctx context.Context, keep string) (int, error)
}

// EpisodeVector is the vector of one episode's content.
type EpisodeVector struct {
	Tenant    string
	EpisodeID string
	Vector    []float32
	// RecordedAt, when set, is the recorded_at of the episode that was
	// embedded: the vector is stored only if the episode still has it, so
	// that the vector of a forgotten episode never lands on one captured
	// again under its id (which is recorded later, unless the store's
	// transaction clock stood still in between). Zero stores it on
	// whatever episode has the id.
	RecordedAt time.Time
}

// VectorQuery is an exact nearest-neighbour search over a tenant's
// episode vectors of one model.
type VectorQuery struct {
	Tenant  string
	Model   string
	Vector  []float32
	Limit   int       // default 10, at most MaxSearchLimit
	KnownAt time.Time // zero: now
}

// Bounds of embeddings.
const (
	// MaxVectorDims bounds a vector's dimension (text-embedding-3-large
	// has 3072).
	MaxVectorDims = 8192
	// MaxModelBytes bounds a model name.
	MaxModelBytes = 256
	// MaxEmbeddingBatch bounds the vectors of one PutEmbeddings and the
	// episodes of one EpisodesToEmbed.
	MaxEmbeddingBatch = 1000
)

// CheckModel validates the model name of vectors.
func CheckModel(field, model string) error { return checkText(field, model, MaxModelBytes, true) }

// CheckVector validates a vector (1 to MaxVectorDims finite numbers, not
// all zero: a cosine needs a length) and returns its Euclidean norm.
func CheckVector(field string, v []float32) (norm float64, err error) {
	if len(v) == 0 {
		return 0, Errorf(Invalid, field, "is empty")
	}
	if len(v) > MaxVectorDims {
		return 0, Errorf(Invalid, field, "has %d dimensions; at most %d", len(v), MaxVectorDims)
	}
	var sum float64
	for i, x := range v {
		f := float64(x)
		if math.IsNaN(f) || math.IsInf(f, 0) {
			return 0, Errorf(Invalid, field, "holds %v at index %d: numbers must be finite", x, i)
		}
		sum += f * f
	}
	if sum == 0 {
		return 0, Errorf(Invalid, field, "is all zeros: it has no direction to compare")
	}
	return math.Sqrt(sum), nil
}

// Check validates q and returns it with its defaults filled in, and the
// norm of its vector.
func (q VectorQuery) Check() (VectorQuery, float64, error) {
	if err := CheckTenant(q.Tenant); err != nil {
		return q, 0, err
	}
	if err := CheckModel("model", q.Model); err != nil {
		return q, 0, err
	}
	norm, err := CheckVector("vector", q.Vector)
	if err != nil {
		return q, 0, err
	}
	switch {
	case q.Limit == 0:
		q.Limit = 10
	case q.Limit < 0 || q.Limit > MaxSearchLimit:
		return q, 0, Errorf(Invalid, "limit", "must be between 1 and %d, not %d", MaxSearchLimit, q.Limit)
	}
	if !q.KnownAt.IsZero() {
		if q.KnownAt, err = CheckTime("known_at", q.KnownAt); err != nil {
			return q, 0, err
		}
	}
	return q, norm, nil
}

// DimensionMismatch is the error of a vector whose dimension is not the
// one stored for its tenant and model.
func DimensionMismatch(field, tenant, model string, got, stored int) error {
	return Errorf(Invalid, field, "has %d dimensions, and tenant %s's vectors of model %q have %d: a model's vectors all have one dimension (a changed model or dimensions setting needs a new model name, SGAM_EMBED_MODEL: the workers then embed every episode again and drop the old name's vectors)",
		got, tenant, model, stored)
}
