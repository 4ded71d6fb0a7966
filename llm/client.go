package llm

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"net/http"
	"strconv"
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
	opts := []option.RequestOption{
		option.WithBaseURL(cfg.BaseURL),
		// Retries are ours: the SDK's would also retry 408 and 409, and
		// hide the attempts from the record.
		option.WithMaxRetries(0),
		// The SDK reads OPENAI_* variables by default; sgam's
		// configuration is its own, and an OpenAI key must never go to a
		// local server by accident.
		option.WithAPIKey(cfg.APIKey),
		option.WithHeaderDel("OpenAI-Organization"),
		option.WithHeaderDel("OpenAI-Project"),
	}
	if cfg.APIKey == "" {
		opts = append(opts, option.WithHeaderDel("Authorization"))
	}
	return &Client{cfg: cfg, oa: openai.NewClient(opts...)}, nil
}

// Name implements Model.
func (c *Client) Name() string { return c.cfg.Model }

// Mode implements Model.
func (c *Client) Mode() Mode { return c.cfg.Mode }

// Complete sends r, retrying 429, 5xx and timeouts with backoff, and
// returns the answer's JSON text. An error is an *Error.
func (c *Client) Complete(ctx context.Context, r Request) (Response, error) {
	params := c.params(r)
	var extra []option.RequestOption
	if c.cfg.Mode == Tools {
		// FunctionParameters is a map, which would lose the schema's
		// property order: set the parameters as the JSON they are.
		extra = append(extra, option.WithJSONSet("tools.0.function.parameters", r.Schema))
	}
	var resp Response
	for attempt := 1; ; attempt++ {
		resp.Attempts = attempt
		raw, usage, err := c.once(ctx, params, extra)
		resp.Usage = resp.Usage.Add(usage)
		if err == nil {
			resp.Raw = raw
			resp.JSON = Clean(raw)
			return resp, nil
		}
		if ctx.Err() != nil {
			return resp, &Error{Kind: KindCanceled, Mode: c.cfg.Mode, Message: ctx.Err().Error()}
		}
		e := c.classify(err)
		if !e.Retryable() || attempt >= c.cfg.MaxAttempts {
			e.Attempts = attempt
			return resp, e
		}
		wait := backoff(attempt, c.cfg.MaxBackoff)
		if e.retryAfterSet {
			if e.RetryAfter > c.cfg.MaxBackoff {
				e.Attempts = attempt
				e.Message += fmt.Sprintf(" (the server asks to wait %s, more than the %s allowed)", e.RetryAfter, c.cfg.MaxBackoff)
				return resp, e
			}
			wait = e.RetryAfter
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return resp, &Error{Kind: KindCanceled, Mode: c.cfg.Mode, Message: ctx.Err().Error(), Attempts: attempt}
		case <-t.C:
		}
	}
}

// once sends one attempt under the per-attempt timeout.
func (c *Client) once(ctx context.Context, params openai.ChatCompletionNewParams, extra []option.RequestOption) (string, Usage, error) {
	actx, cancel := context.WithTimeout(ctx, c.cfg.Timeout)
	defer cancel()
	cc, err := c.oa.Chat.Completions.New(actx, params, extra...)
	if err != nil {
		if actx.Err() != nil && ctx.Err() == nil {
			return "", Usage{}, errTimeout
		}
		return "", Usage{}, err
	}
	usage := Usage{PromptTokens: int(cc.Usage.PromptTokens), CompletionTokens: int(cc.Usage.CompletionTokens)}
	if len(cc.Choices) == 0 {
		return "", usage, &Error{Kind: KindMalformed, Mode: c.cfg.Mode, Message: "the answer has no choices"}
	}
	msg := cc.Choices[0].Message
	if msg.Refusal != "" {
		return "", usage, &Error{Kind: KindRefused, Mode: c.cfg.Mode, Message: "the model refused: " + clip(msg.Refusal, 300)}
	}
	if c.cfg.Mode == Tools {
		for _, tc := range msg.ToolCalls {
			if tc.Function.Name == toolName(params) {
				return tc.Function.Arguments, usage, nil
			}
		}
		// Some servers answer in the content when they cannot force a
		// tool call; the JSON is the same.
		if strings.TrimSpace(msg.Content) != "" {
			return msg.Content, usage, nil
		}
		return "", usage, &Error{Kind: KindMalformed, Mode: c.cfg.Mode, Message: "the answer has no call of the tool " + toolName(params)}
	}
	return msg.Content, usage, nil
}

var errTimeout = errors.New("timeout")

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
	if r.MaxTokens > 0 {
		p.MaxTokens = openai.Int(int64(r.MaxTokens))
	}
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

// classify turns a failed attempt into an *Error.
func (c *Client) classify(err error) *Error {
	var e *Error
	if errors.As(err, &e) {
		return e
	}
	if errors.Is(err, errTimeout) {
		return &Error{Kind: KindTimeout, Mode: c.cfg.Mode, Message: fmt.Sprintf("no answer within %s", c.cfg.Timeout)}
	}
	var ae *openai.Error
	if errors.As(err, &ae) {
		out := &Error{Kind: KindStatus, Mode: c.cfg.Mode, Status: ae.StatusCode, Message: serverMessage(ae)}
		if ae.Response != nil {
			out.RetryAfter, out.retryAfterSet = retryAfter(ae.Response.Header)
		}
		return out
	}
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return &Error{Kind: KindTimeout, Mode: c.cfg.Mode, Message: "the connection timed out"}
	}
	var oe *net.OpError
	if errors.As(err, &oe) {
		return &Error{Kind: KindConnection, Mode: c.cfg.Mode, Message: oe.Error()}
	}
	// The SDK wraps undecodable bodies and such; its text never holds the
	// key (it is a header, not part of the URL).
	return &Error{Kind: KindMalformed, Mode: c.cfg.Mode, Message: clip(err.Error(), 500)}
}

// serverMessage is the server's own message of an error answer, without
// the request line the SDK prefixes.
func serverMessage(ae *openai.Error) string {
	if ae.Message != "" {
		return clip(ae.Message, 500)
	}
	if raw := ae.RawJSON(); raw != "" {
		return clip(raw, 500)
	}
	return http.StatusText(ae.StatusCode)
}

// retryAfter reads Retry-After (seconds or an HTTP date) or OpenAI's
// retry-after-ms; ok is false when there is none.
func retryAfter(h http.Header) (d time.Duration, ok bool) {
	if ms := h.Get("Retry-After-Ms"); ms != "" {
		if v, err := strconv.ParseFloat(ms, 64); err == nil && v >= 0 && v < 1e9 {
			return time.Duration(v * float64(time.Millisecond)), true
		}
	}
	v := h.Get("Retry-After")
	if v == "" {
		return 0, false
	}
	if s, err := strconv.ParseFloat(v, 64); err == nil && s >= 0 && s < 1e9 {
		return time.Duration(s * float64(time.Second)), true
	}
	if t, err := http.ParseTime(v); err == nil {
		return max(time.Until(t), 0), true
	}
	return 0, false
}

// backoff is the wait before attempt+1: exponential from 500 ms with
// jitter, at most limit.
func backoff(attempt int, limit time.Duration) time.Duration {
	d := 500 * time.Millisecond << min(attempt-1, 10)
	d = d/2 + rand.N(d/2+1)
	return min(d, limit)
}

func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}
