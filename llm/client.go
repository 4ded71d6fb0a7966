package llm

import (
	"context"
	"strings"

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
	return &Client{cfg: cfg, oa: newOpenAI(cfg.BaseURL, cfg.APIKey)}, nil
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
	var err error
	resp.Attempts, err = c.retrier().do(ctx, func(actx context.Context) error {
		raw, usage, err := c.once(actx, params, extra)
		resp.Usage = resp.Usage.Add(usage)
		if err == nil {
			resp.Raw = raw
			resp.JSON = Clean(raw)
		}
		return err
	})
	return resp, err
}

// retrier is how the client's requests are sent again.
func (c *Client) retrier() retrier {
	return retrier{maxAttempts: c.cfg.MaxAttempts, maxBackoff: c.cfg.MaxBackoff, timeout: c.cfg.Timeout, mode: c.cfg.Mode, secret: c.cfg.APIKey}
}

// once sends one attempt (ctx bounds it: see retrier.do).
func (c *Client) once(ctx context.Context, params openai.ChatCompletionNewParams, extra []option.RequestOption) (string, Usage, error) {
	out, usage, err := c.answer(ctx, params, extra)
	// The answer is kept in extraction records: a server that echoes the
	// request's key into it must not leave the key there.
	return redact(out, c.cfg.APIKey, minRedacted), usage, err
}

// minRedacted is the shortest key cut out of a model's answer: real keys
// are long, and a short placeholder ("none", "ollama") may be a word.
const minRedacted = 8

func (c *Client) answer(ctx context.Context, params openai.ChatCompletionNewParams, extra []option.RequestOption) (string, Usage, error) {
	cc, err := c.oa.Chat.Completions.New(ctx, params, extra...)
	if err != nil {
		return "", Usage{}, err
	}
	usage := Usage{PromptTokens: int(cc.Usage.PromptTokens), CompletionTokens: int(cc.Usage.CompletionTokens)}
	if len(cc.Choices) == 0 {
		return "", usage, &Error{Kind: KindMalformed, Mode: c.cfg.Mode, Message: "the answer has no choices"}
	}
	msg := cc.Choices[0].Message
	if msg.Refusal != "" {
		return "", usage, &Error{Kind: KindRefused, Mode: c.cfg.Mode, Message: "the model refused: " + clip(redact(msg.Refusal, c.cfg.APIKey, 1), 300)}
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
