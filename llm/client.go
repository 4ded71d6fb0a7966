package llm

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/shared"
)

// Client asks an OpenAI-compatible server. It is safe for concurrent use.
type Client struct {
	cfg Config
	oa  openai.Client
}

var _ Model = (*Client)(nil)

// New checks cfg and returns a client. No request is sent.
func New(cfg Config) (*Client, error) {
	cfg, err := cfg.Check()
	if err != nil {
		return nil, err
	}
	return &Client{cfg: cfg, oa: newOpenAI(cfg.BaseURL, cfg.APIKey, maxResponseBytes)}, nil
}

// Name implements Model.
func (c *Client) Name() string { return c.cfg.Model }

// Mode implements Model.
func (c *Client) Mode() Mode { return c.cfg.Mode }

// Complete sends r, retrying 429, 5xx and timeouts with backoff, and
// returns the answer's JSON text. An error is an *Error; Raw and Usage are
// set whatever happened (an answer that was refused, cut or too large is
// kept, cut to MaxAnswerBytes, and every attempt counts).
func (c *Client) Complete(ctx context.Context, r Request) (Response, error) {
	params := c.params(r)
	var extra []option.RequestOption
	if c.cfg.Mode == Tools {
		// FunctionParameters is a map, which would lose the schema's
		// property order: set the parameters as the JSON they are.
		extra = append(extra, option.WithJSONSet("tools.0.function.parameters", r.Schema))
	}
	promptBytes := len(r.System) + len(r.User) + len(r.Schema)
	var resp Response
	var err error
	resp.Attempts, err = c.retrier().do(ctx, func(actx context.Context) error {
		a := c.once(actx, params, extra)
		if a.answered {
			resp.Usage = resp.Usage.Add(plausible(a.usage, promptBytes, len(a.raw), c.cfg.MaxTokens))
			resp.Raw, resp.RawCut = a.raw, a.rawCut
		} else {
			// Cut off while the server may have been working on it: by
			// the attempt's deadline, or by the server dying mid-answer.
			cutOff := actx.Err() != nil || diedMidAnswer(a.err)
			resp.Usage = resp.Usage.Add(unanswered(promptBytes, cutOff))
		}
		if a.err == nil {
			resp.JSON = Clean(a.raw)
		}
		return a.err
	})
	return resp, err
}

// WorstCase implements Model.
func (c *Client) WorstCase() time.Duration { return c.cfg.WorstCase() }

// retrier is how the client's requests are sent again.
func (c *Client) retrier() retrier {
	return retrier{maxAttempts: c.cfg.MaxAttempts, maxBackoff: c.cfg.MaxBackoff, timeout: c.cfg.Timeout, mode: c.cfg.Mode, secret: c.cfg.APIKey}
}

// attempt is what one request got.
type attempt struct {
	raw      string // the answer's text, the key cut out
	rawCut   bool   // raw is the beginning of a longer answer
	usage    Usage  // as the server reported it
	answered bool   // a chat completion came back
	err      error
}

// once sends one attempt (ctx bounds it: see retrier.do).
func (c *Client) once(ctx context.Context, params openai.ChatCompletionNewParams, extra []option.RequestOption) attempt {
	a := c.answer(ctx, params, extra)
	// The answer is kept in extraction records: a server that echoes the
	// request's key into it must not leave the key there.
	a.raw = redact(a.raw, c.cfg.APIKey, minRedacted)
	return a
}

// minRedacted is the shortest key cut out of a model's answer: real keys
// are long, and a short placeholder ("none", "ollama") may be a word.
const minRedacted = 8

// MaxAnswerBytes bounds the answer taken from a model: a longer one is
// refused (KindTooLarge), and kept cut to this length.
const MaxAnswerBytes = 1 << 20

// maxResponseBytes bounds the body of a chat completion read from the
// server: an answer of MaxAnswerBytes escaped in JSON, and the rest.
const maxResponseBytes = 8 << 20

func (c *Client) answer(ctx context.Context, params openai.ChatCompletionNewParams, extra []option.RequestOption) attempt {
	cc, err := c.oa.Chat.Completions.New(ctx, params, extra...)
	if err != nil {
		return attempt{err: err}
	}
	a := attempt{answered: true, usage: Usage{PromptTokens: clampCount(cc.Usage.PromptTokens), CompletionTokens: clampCount(cc.Usage.CompletionTokens)}}
	if len(cc.Choices) == 0 {
		a.err = &Error{Kind: KindMalformed, Mode: c.cfg.Mode, Message: "the answer has no choices"}
		return a
	}
	choice := cc.Choices[0]
	msg := choice.Message
	if msg.Refusal != "" {
		a.raw = msg.Refusal
		a.err = &Error{Kind: KindRefused, Mode: c.cfg.Mode, Message: "the model refused: " + clip(redact(msg.Refusal, c.cfg.APIKey, 1), 300)}
		return a.cut()
	}
	a.raw = msg.Content
	if c.cfg.Mode == Tools {
		a.raw = ""
		for _, tc := range msg.ToolCalls {
			if tc.Function.Name == toolName(params) {
				a.raw = tc.Function.Arguments
				break
			}
		}
		// Some servers answer in the content when they cannot force a
		// tool call; the JSON is the same.
		if a.raw == "" && strings.TrimSpace(msg.Content) != "" {
			a.raw = msg.Content
		}
		if a.raw == "" {
			a.err = &Error{Kind: KindMalformed, Mode: c.cfg.Mode, Message: "the answer has no call of the tool " + toolName(params)}
			return a
		}
	}
	if choice.FinishReason == "length" {
		a.err = &Error{Kind: KindTooLarge, Mode: c.cfg.Mode, Message: fmt.Sprintf("the answer reached max_tokens (%d) before it ended: raise the client's max tokens (%s)", c.cfg.MaxTokens, EnvMaxTokens)}
	}
	return a.cut()
}

// cut refuses an answer over MaxAnswerBytes, keeping its beginning.
func (a attempt) cut() attempt {
	if len(a.raw) <= MaxAnswerBytes {
		return a
	}
	n := len(a.raw)
	a.raw, a.rawCut = CutText(a.raw, MaxAnswerBytes), true
	a.err = &Error{Kind: KindTooLarge, Message: fmt.Sprintf("the answer is %d bytes, more than the %d taken; it is kept cut", n, MaxAnswerBytes)}
	return a
}

// clampCount reads a server's count into an int: a count past
// MaxTokenCount is no count (plausible replaces it), never a wrap.
func clampCount(n int64) int {
	if n < 0 || n > MaxTokenCount {
		return -1
	}
	return int(n)
}

func toolName(p openai.ChatCompletionNewParams) string {
	if len(p.Tools) > 0 && p.Tools[0].OfFunction != nil {
		return p.Tools[0].OfFunction.Function.Name
	}
	return ""
}

// params builds the request of r in the client's mode.
func (c *Client) params(r Request) openai.ChatCompletionNewParams {
	name := r.SchemaName
	if name == "" {
		name = "answer"
	}
	system := r.System
	if c.cfg.Mode == JSONObject {
		system += "\n\nAnswer with one JSON object, and nothing else, that is valid under this JSON Schema:\n" + string(r.Schema)
	}
	p := openai.ChatCompletionNewParams{
		Model:       shared.ChatModel(c.cfg.Model),
		Messages:    []openai.ChatCompletionMessageParamUnion{openai.SystemMessage(system), openai.UserMessage(r.User)},
		Temperature: openai.Float(c.cfg.Temperature),
	}
	p.MaxTokens = openai.Int(int64(c.cfg.MaxTokens))
	switch c.cfg.Mode {
	case JSONSchema:
		p.ResponseFormat = openai.ChatCompletionNewParamsResponseFormatUnion{OfJSONSchema: &shared.ResponseFormatJSONSchemaParam{
			JSONSchema: shared.ResponseFormatJSONSchemaJSONSchemaParam{Name: name, Strict: openai.Bool(true), Schema: r.Schema},
		}}
	case JSONObject:
		p.ResponseFormat = openai.ChatCompletionNewParamsResponseFormatUnion{OfJSONObject: &shared.ResponseFormatJSONObjectParam{}}
	case Tools:
		p.Tools = []openai.ChatCompletionToolUnionParam{openai.ChatCompletionFunctionTool(shared.FunctionDefinitionParam{
			Name: name, Strict: openai.Bool(true),
			Description: openai.String("Record the answer."),
		})}
		p.ToolChoice = openai.ChatCompletionToolChoiceOptionUnionParam{OfFunctionToolChoice: &openai.ChatCompletionNamedToolChoiceParam{
			Function: openai.ChatCompletionNamedToolChoiceFunctionParam{Name: name},
		}}
	}
	return p
}
