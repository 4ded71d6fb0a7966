package eval

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/goccy/go-yaml"

	"github.com/sgam-dev/sgam/llm"
	"github.com/sgam-dev/sgam/recall"
)

// A cassette is the recording of a scenario's model exchanges, in a YAML
// file next to it (CassettePath): each answer keyed by the digest of the
// request that got it, with the episode it was for and the prompt, so
// that a replay needs no model, no network and no tokens, and a prompt
// that changed is named by its episode.
type Cassette struct {
	// Model and Mode are those of the model that was recorded.
	Model     string     `yaml:"model"`
	Mode      string     `yaml:"mode"`
	Exchanges []Exchange `yaml:"exchanges"`
}

// Exchange is one recorded request and its answer.
type Exchange struct {
	Tenant  string `yaml:"tenant"`
	Episode string `yaml:"episode"`
	// Digest identifies the request (RequestDigest); empty in an exchange
	// written by hand, which --rekey fills in.
	Digest string `yaml:"digest,omitempty"`
	// Usage is the tokens the server counted; Estimated marks a count
	// made by sgam (o200k_base) for an answer written by hand.
	PromptTokens     int  `yaml:"prompt_tokens"`
	CompletionTokens int  `yaml:"completion_tokens"`
	Estimated        bool `yaml:"estimated,omitempty"`
	// Calls is how many requests the answer took, retries included
	// (default 1).
	Calls int `yaml:"calls,omitempty"`
	// Prompt is the user part of the prompt, for review and to say what
	// changed; Answer the model's raw answer.
	Prompt string `yaml:"prompt"`
	Answer string `yaml:"answer"`
}

// CassettePath is where the cassette of a scenario file is kept:
// passport.yaml → passport.cassette.yaml.
func CassettePath(scenarioPath string) string {
	for _, ext := range []string{".yaml", ".yml", ".json"} {
		if strings.HasSuffix(scenarioPath, ext) {
			return strings.TrimSuffix(scenarioPath, ext) + ".cassette.yaml"
		}
	}
	return scenarioPath + ".cassette.yaml"
}

// IsCassette reports whether a file name is a cassette's.
func IsCassette(name string) bool { return strings.HasSuffix(name, ".cassette.yaml") }

// IsScenario reports whether a YAML file of a directory is a scenario:
// not a cassette (NAME.cassette.yaml) and not a schema file that a
// scenario names (NAME.schema.yaml).
func IsScenario(name string) bool {
	return (strings.HasSuffix(name, ".yaml") || strings.HasSuffix(name, ".yml")) &&
		!IsCassette(name) && !strings.HasSuffix(name, ".schema.yaml")
}

// LoadCassette reads a cassette file.
func LoadCassette(path string) (*Cassette, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var c Cassette
	if err := yaml.UnmarshalWithOptions(data, &c, yaml.Strict(), yaml.DisallowUnknownField()); err != nil {
		return nil, fmt.Errorf("cassette %s: %s", path, yaml.FormatError(err, false, false))
	}
	for i, x := range c.Exchanges {
		if x.Episode == "" || x.Tenant == "" {
			return nil, fmt.Errorf("cassette %s: exchanges[%d]: tenant and episode are required", path, i)
		}
	}
	return &c, nil
}

// Save writes the cassette to path, answers and prompts as block text.
func (c *Cassette) Save(path string) error {
	data, err := yaml.MarshalWithOptions(c, yaml.UseLiteralStyleIfMultiline(true), yaml.Indent(2), yaml.IndentSequence(true))
	if err != nil {
		return err
	}
	header := "# Model answers of the scenario " + filepath.Base(strings.TrimSuffix(path, ".cassette.yaml")) + ", replayed by `sgam eval run`.\n" +
		"# Re-record with --record (a live model) or --rekey (these answers, new prompts).\n"
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, append([]byte(header), data...), 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

// RequestDigest identifies a request to the model: what it is asked,
// whatever model answers.
func RequestDigest(r llm.Request) string {
	h := sha256.New()
	for _, s := range []string{r.System, r.User, r.SchemaName, string(r.Schema)} {
		fmt.Fprintf(h, "%d:%s", len(s), s)
	}
	return hex.EncodeToString(h.Sum(nil))[:32]
}

type episodeKey struct{}

// forEpisode tells the cassette which episode a request is for.
func forEpisode(ctx context.Context, tenant, episode string) context.Context {
	return context.WithValue(ctx, episodeKey{}, [2]string{tenant, episode})
}

func episodeOf(ctx context.Context) (tenant, episode string) {
	v, _ := ctx.Value(episodeKey{}).([2]string)
	return v[0], v[1]
}

// ErrPromptChanged is matched by the error of a replay whose prompt is
// not in the cassette.
var ErrPromptChanged = errors.New("the prompt is not in the cassette")

// PromptError says which episode's prompt the cassette does not have.
type PromptError struct {
	Tenant, Episode, Cassette string
	// Changed is the first line of the prompt that differs from the one
	// recorded for the episode; empty when none was recorded for it.
	Changed string
	// Unkeyed: the episode's answer was written by hand and never keyed.
	Unkeyed bool
}

func (e *PromptError) Error() string {
	if e.Unkeyed {
		return fmt.Sprintf("episode %s of tenant %s: the cassette %s has an answer for it without a digest (written by hand): run `sgam eval run --rekey` to key it",
			e.Episode, e.Tenant, e.Cassette)
	}
	if e.Changed == "" {
		return fmt.Sprintf("episode %s of tenant %s: the cassette %s has no answer for it; re-record with `sgam eval run --record` (a live model) or add one and run --rekey",
			e.Episode, e.Tenant, e.Cassette)
	}
	return fmt.Sprintf("episode %s of tenant %s: its prompt changed since the cassette %s was recorded (first changed line: %q); re-record with `sgam eval run --record`, or --rekey to keep the recorded answers",
		e.Episode, e.Tenant, e.Cassette, e.Changed)
}

func (e *PromptError) Is(target error) bool { return target == ErrPromptChanged }

// player answers from a cassette.
type player struct {
	c      *Cassette
	path   string
	digest map[string]*Exchange
}

func newPlayer(c *Cassette, path string) *player {
	p := &player{c: c, path: path, digest: map[string]*Exchange{}}
	for i := range c.Exchanges {
		p.digest[c.Exchanges[i].Digest] = &c.Exchanges[i]
	}
	return p
}

func (p *player) Name() string   { return p.c.Model }
func (p *player) Mode() llm.Mode { return llm.Mode(p.c.Mode) }

// WorstCase implements llm.Model: a recording answers at once.
func (p *player) WorstCase() time.Duration { return 0 }

func (p *player) Complete(ctx context.Context, r llm.Request) (llm.Response, error) {
	if x, ok := p.digest[RequestDigest(r)]; ok {
		return llm.Response{Raw: x.Answer, JSON: llm.Clean(x.Answer), Attempts: max(x.Calls, 1),
			Usage: llm.Usage{PromptTokens: x.PromptTokens, CompletionTokens: x.CompletionTokens}}, nil
	}
	tenant, episode := episodeOf(ctx)
	e := &PromptError{Tenant: tenant, Episode: episode, Cassette: p.path}
	for _, x := range p.c.Exchanges {
		if x.Tenant == tenant && x.Episode == episode && x.Digest == "" {
			e.Unkeyed = true
			break
		}
		if x.Tenant == tenant && x.Episode == episode {
			e.Changed = firstChange(x.Prompt, r.User)
			if e.Changed == "" {
				e.Changed = "(the system prompt or the output schema)"
			}
			break
		}
	}
	return llm.Response{}, e
}

// firstChange is the first line of now that is not the same line of was.
func firstChange(was, now string) string {
	a, b := strings.Split(was, "\n"), strings.Split(now, "\n")
	for i, l := range b {
		if i >= len(a) || a[i] != l {
			return l
		}
	}
	if len(a) > len(b) {
		return "(a line removed: " + a[len(b)] + ")"
	}
	return ""
}

// recorder asks a model and keeps every exchange.
type recorder struct {
	model llm.Model
	mu    sync.Mutex
	out   Cassette
}

func newRecorder(m llm.Model) *recorder {
	return &recorder{model: m, out: Cassette{Model: m.Name(), Mode: string(m.Mode())}}
}

func (r *recorder) Name() string   { return r.model.Name() }
func (r *recorder) Mode() llm.Mode { return r.model.Mode() }

// WorstCase implements llm.Model.
func (r *recorder) WorstCase() time.Duration { return r.model.WorstCase() }

func (r *recorder) Complete(ctx context.Context, req llm.Request) (llm.Response, error) {
	resp, err := r.model.Complete(ctx, req)
	if err != nil {
		return resp, err
	}
	tenant, episode := episodeOf(ctx)
	x := Exchange{Tenant: tenant, Episode: episode, Digest: RequestDigest(req), Prompt: req.User, Answer: resp.Raw,
		PromptTokens: resp.Usage.PromptTokens, CompletionTokens: resp.Usage.CompletionTokens}
	if resp.Attempts > 1 {
		x.Calls = resp.Attempts
	}
	if est, ok := r.model.(*rekeyer); ok && est.estimated {
		x.Estimated = true
	}
	r.mu.Lock()
	r.out.Exchanges = append(r.out.Exchanges, x)
	r.mu.Unlock()
	return resp, nil
}

// rekeyer answers each episode's requests, in order, with the answers a
// cassette holds for it, whatever the prompt: to re-key a cassette after
// a prompt changed, or to key answers written by hand.
type rekeyer struct {
	c         *Cassette
	path      string
	next      map[[2]string][]Exchange
	estimated bool
}

func newRekeyer(c *Cassette, path string) *rekeyer {
	k := &rekeyer{c: c, path: path, next: map[[2]string][]Exchange{}}
	for _, x := range c.Exchanges {
		key := [2]string{x.Tenant, x.Episode}
		k.next[key] = append(k.next[key], x)
	}
	return k
}

func (k *rekeyer) Name() string {
	if k.c.Model == "" {
		return "hand-written"
	}
	return k.c.Model
}

func (k *rekeyer) Mode() llm.Mode {
	if k.c.Mode == "" {
		return llm.JSONSchema
	}
	return llm.Mode(k.c.Mode)
}

// WorstCase implements llm.Model: a recording answers at once.
func (k *rekeyer) WorstCase() time.Duration { return 0 }

func (k *rekeyer) Complete(ctx context.Context, r llm.Request) (llm.Response, error) {
	tenant, episode := episodeOf(ctx)
	key := [2]string{tenant, episode}
	xs := k.next[key]
	if len(xs) == 0 {
		return llm.Response{}, &PromptError{Tenant: tenant, Episode: episode, Cassette: k.path}
	}
	x := xs[0]
	k.next[key] = xs[1:]
	resp := llm.Response{Raw: x.Answer, JSON: llm.Clean(x.Answer), Attempts: 1,
		Usage: llm.Usage{PromptTokens: x.PromptTokens, CompletionTokens: x.CompletionTokens}}
	k.estimated = x.Estimated || (x.PromptTokens == 0 && x.CompletionTokens == 0)
	if k.estimated {
		// An answer written by hand: count what a server would have.
		resp.Usage = llm.Usage{PromptTokens: recall.Tokens(r.System) + recall.Tokens(r.User) + recall.Tokens(string(r.Schema)),
			CompletionTokens: recall.Tokens(x.Answer)}
	}
	return resp, nil
}

// unused reports the exchanges a rekey did not use: answers for episodes
// the scenario no longer extracts, or extracts fewer times.
func (k *rekeyer) unused() []string {
	var out []string
	for key, xs := range k.next {
		if len(xs) > 0 {
			out = append(out, fmt.Sprintf("%s/%s (%d)", key[0], key[1], len(xs)))
		}
	}
	return out
}
