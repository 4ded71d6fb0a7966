package llm

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/openai/openai-go/v3"
)

// Embedder turns texts into vectors: an EmbedClient, or a fake of one.
type Embedder interface {
	// Embed returns one vector per text, in order, all of one dimension,
	// and the tokens the server counted.
	Embed(ctx context.Context, texts []string) (vecs [][]float32, tokens int, err error)
	// Model names the space of the vectors, under which they are stored:
	// vectors of two names are never compared.
	Model() string
}

// EmbedConfig configures an EmbedClient.
type EmbedConfig struct {
	// BaseURL is the server's OpenAI-compatible API root, with its /v1
	// ("http://localhost:11434/v1"). Required.
	BaseURL string
	// Model is the embedding model the server knows. Required.
	Model string
	// APIKey is sent as a bearer token when set. It never appears in an
	// error, a log or a record.
	APIKey string
	// Timeout bounds one attempt; default 120s.
	Timeout time.Duration
	// MaxRetries bounds the attempts after the first of one request, on a
	// 429, a 5xx or a timeout; default 3, negative for none.
	MaxRetries int
	// Dimensions asks for vectors of this many dimensions (models that
	// can shorten theirs, as text-embedding-3-*); 0 takes the model's.
	Dimensions int
}

// Environment variables of the embeddings configuration (see
// EmbedConfigFromEnv). The key comes from the environment only.
const (
	EnvEmbedBaseURL = "SGAM_EMBED_BASE_URL"
	EnvEmbedModel   = "SGAM_EMBED_MODEL"
	EnvEmbedAPIKey  = "SGAM_EMBED_API_KEY"
	// EnvEmbedAPIKeyFile names a file that holds the key (its first
	// line), as EnvAPIKeyFile does for the model's.
	EnvEmbedAPIKeyFile = "SGAM_EMBED_API_KEY_FILE"
	// EnvEmbedDimensions sets EmbedConfig.Dimensions.
	EnvEmbedDimensions = "SGAM_EMBED_DIMENSIONS"
)

// Bounds of an EmbedClient's requests.
const (
	// MaxEmbedBatch is how many texts one request carries at most: Embed
	// sends more as several requests.
	MaxEmbedBatch = 64
	// MaxEmbedTextBytes bounds one text: a longer one is cut (on a rune
	// boundary, CutText) to its first MaxEmbedTextBytes bytes, about the
	// 8192 tokens of OpenAI's embedding models, and its vector is that of
	// its beginning. Nothing else is cut.
	MaxEmbedTextBytes = 32 << 10
	// maxEmbedRequestBytes bounds the texts of one request, so that one
	// stays well under the tokens a server takes in one request (300,000
	// for OpenAI).
	maxEmbedRequestBytes = 512 << 10
)

// EmbedConfigFromEnv reads the embeddings configuration from the
// environment: base URL, model, dimensions, and the API key from
// SGAM_EMBED_API_KEY or the file named by SGAM_EMBED_API_KEY_FILE. Neither
// base URL nor model set is no embeddings (ok false, no error); one of
// them without the other is an error.
func EmbedConfigFromEnv(getenv func(string) string) (cfg EmbedConfig, ok bool, err error) {
	cfg = EmbedConfig{BaseURL: getenv(EnvEmbedBaseURL), Model: getenv(EnvEmbedModel)}
	switch {
	case cfg.BaseURL == "" && cfg.Model == "":
		return cfg, false, nil
	case cfg.BaseURL == "":
		return cfg, false, fmt.Errorf("%s is set and %s is not: set both to embed episodes", EnvEmbedModel, EnvEmbedBaseURL)
	case cfg.Model == "":
		return cfg, false, fmt.Errorf("%s is set and %s is not: set both to embed episodes", EnvEmbedBaseURL, EnvEmbedModel)
	}
	if d := getenv(EnvEmbedDimensions); d != "" {
		if cfg.Dimensions, err = strconv.Atoi(d); err != nil || cfg.Dimensions <= 0 {
			return cfg, false, fmt.Errorf("%s: %q is not a positive number", EnvEmbedDimensions, d)
		}
	}
	if cfg.APIKey, err = apiKeyFromEnv(getenv, EnvEmbedAPIKey, EnvEmbedAPIKeyFile); err != nil {
		return cfg, false, err
	}
	return cfg, true, nil
}

// Check validates the configuration and fills in the defaults.
func (c EmbedConfig) Check() (EmbedConfig, error) {
	switch {
	case c.BaseURL == "":
		return c, fmt.Errorf("the embeddings base URL is not set: set %s (for example http://localhost:11434/v1)", EnvEmbedBaseURL)
	case !strings.HasPrefix(c.BaseURL, "http://") && !strings.HasPrefix(c.BaseURL, "https://"):
		return c, fmt.Errorf("the embeddings base URL %q must start with http:// or https://", c.BaseURL)
	case c.Model == "":
		return c, fmt.Errorf("the embedding model is not set: set %s", EnvEmbedModel)
	case strings.ContainsAny(c.APIKey, "\r\n"):
		return c, errors.New("the embeddings API key holds a line break")
	case c.Dimensions < 0 || c.Dimensions > 1<<16:
		return c, fmt.Errorf("embedding dimensions %d: must be between 1 and 65536, or 0 for the model's", c.Dimensions)
	}
	if c.Timeout <= 0 {
		c.Timeout = 120 * time.Second
	}
	switch {
	case c.MaxRetries == 0:
		c.MaxRetries = 3
	case c.MaxRetries < 0:
		c.MaxRetries = 0
	}
	return c, nil
}

// EmbedClient asks an OpenAI-compatible embeddings endpoint (POST
// /embeddings). It is safe for concurrent use.
type EmbedClient struct {
	cfg EmbedConfig
	oa  openai.Client
}

var _ Embedder = (*EmbedClient)(nil)

// NewEmbedder checks cfg and returns a client. No request is sent.
func NewEmbedder(cfg EmbedConfig) (*EmbedClient, error) {
	cfg, err := cfg.Check()
	if err != nil {
		return nil, err
	}
	return &EmbedClient{cfg: cfg, oa: newOpenAI(cfg.BaseURL, cfg.APIKey, 0)}, nil
}

// Model implements Embedder: the model's name, with "@" and the
// dimensions when they are asked for ("text-embedding-3-small@256"), since
// a model shortened to other dimensions makes vectors of another space.
func (c *EmbedClient) Model() string {
	if c.cfg.Dimensions > 0 {
		return fmt.Sprintf("%s@%d", c.cfg.Model, c.cfg.Dimensions)
	}
	return c.cfg.Model
}

// Embed implements Embedder: requests of at most MaxEmbedBatch texts (and
// 512 KiB) each, one after the other, each retried on a 429, a 5xx or a
// timeout. A text longer than MaxEmbedTextBytes is cut to that. An empty
// text is refused before anything is sent (servers refuse them). An error
// is an *Error when a request failed or its answer was unusable: it says
// what was wrong with the answer, and never holds the key.
func (c *EmbedClient) Embed(ctx context.Context, texts []string) ([][]float32, int, error) {
	for i, t := range texts {
		if t == "" {
			return nil, 0, fmt.Errorf("texts[%d] is empty: an embeddings server embeds no empty text", i)
		}
	}
	out := make([][]float32, 0, len(texts))
	tokens := 0
	dims := c.cfg.Dimensions
	for start := 0; start < len(texts); {
		end, size := start, 0
		for end < len(texts) && end-start < MaxEmbedBatch {
			n := min(len(texts[end]), MaxEmbedTextBytes)
			if end > start && size+n > maxEmbedRequestBytes {
				break
			}
			size += n
			end++
		}
		batch := make([]string, end-start)
		for i, t := range texts[start:end] {
			batch[i] = CutText(t, MaxEmbedTextBytes)
		}
		vecs, n, err := c.request(ctx, batch, &dims)
		tokens += n
		if err != nil {
			return nil, tokens, err
		}
		out = append(out, vecs...)
		start = end
	}
	return out, tokens, nil
}

// request embeds one batch; dims is the dimension every vector must have
// (0: the first answer's, which sets it).
func (c *EmbedClient) request(ctx context.Context, batch []string, dims *int) ([][]float32, int, error) {
	params := openai.EmbeddingNewParams{
		Input:          openai.EmbeddingNewParamsInputUnion{OfArrayOfStrings: batch},
		Model:          openai.EmbeddingModel(c.cfg.Model),
		EncodingFormat: openai.EmbeddingNewParamsEncodingFormatFloat,
	}
	if c.cfg.Dimensions > 0 {
		params.Dimensions = openai.Int(int64(c.cfg.Dimensions))
	}
	r := retrier{maxAttempts: c.cfg.MaxRetries + 1, maxBackoff: 60 * time.Second, timeout: c.cfg.Timeout, what: "embeddings", secret: c.cfg.APIKey}
	var vecs [][]float32
	var tokens int
	_, err := r.do(ctx, func(actx context.Context) error {
		resp, err := c.oa.Embeddings.New(actx, params)
		if err != nil {
			return err
		}
		tokens += int(resp.Usage.PromptTokens)
		vecs, err = decodeEmbeddings(resp.Data, len(batch), dims)
		return err
	})
	return vecs, tokens, err
}

// decodeEmbeddings checks an answer to n texts, all of dimension *dims
// (when set; else it sets it), and returns its vectors in input order.
func decodeEmbeddings(data []openai.Embedding, n int, dims *int) ([][]float32, error) {
	bad := func(format string, args ...any) error {
		return &Error{Kind: KindMalformed, what: "embeddings", Message: fmt.Sprintf(format, args...)}
	}
	if len(data) != n {
		return nil, bad("the answer has %d vectors for %d texts", len(data), n)
	}
	out := make([][]float32, n)
	for j, d := range data {
		i := int(d.Index)
		if i < 0 || i >= n || out[i] != nil {
			return nil, bad("vector %d of the answer has index %d: indices must be 0 to %d, each once", j, d.Index, n-1)
		}
		switch {
		case len(d.Embedding) == 0:
			return nil, bad("the vector of text %d is empty", i)
		case *dims == 0:
			*dims = len(d.Embedding)
		case len(d.Embedding) != *dims:
			return nil, bad("the vector of text %d has %d dimensions, and the others (or the dimensions asked for) %d", i, len(d.Embedding), *dims)
		}
		v := make([]float32, len(d.Embedding))
		for k, x := range d.Embedding {
			v[k] = float32(x)
			if f := float64(v[k]); math.IsNaN(f) || math.IsInf(f, 0) {
				return nil, bad("the vector of text %d holds %v at %d: numbers must be finite", i, x, k)
			}
		}
		out[i] = v
	}
	return out, nil
}

// CutText returns the longest prefix of s of at most n bytes that ends on
// a rune boundary.
func CutText(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}
