package llm

import (
	"context"
	"strings"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/shared"
)

// TextRequest asks a model for an answer in plain text: a system and a
// user message, with no response format and no tools (an evaluation's
// question, or a judge's verdict), unlike Request, which asks for JSON.
type TextRequest struct {
	System string
	User   string
	// MaxTokens is sent as max_tokens; 0 is the client's (Config.MaxTokens).
	MaxTokens int
}

// TextResponse is a model's plain text answer.
type TextResponse struct {
	// Text is the answer without any <think>…</think> block first,
	// trimmed: what to use.
	Text string
	// Raw is the answer as it came, but that the API key, should the
	// server have quoted it, is replaced by [redacted], and that it is
	// cut to MaxAnswerBytes.
	Raw string
	// Cut is set when the model stopped at max_tokens (Text is the
	// beginning of a longer answer) or Raw was cut to MaxAnswerBytes: an
	// answer all the same, not an error.
	Cut bool
	// Usage sums the tokens of every attempt sent, answered or not, as
	// Response's does (the server's counts where plausible).
	Usage Usage
	// Attempts counts the requests sent, the first included.
	Attempts int
}

// Text sends r as a chat completion with no response format, whatever
// the client's Mode, retrying 429, 5xx and timeouts with backoff as
// Complete does, and returns the answer's text. An error is an *Error
// (an answer with no choices, a refusal); Usage and Attempts are set
// whatever happened.
func (c *Client) Text(ctx context.Context, r TextRequest) (TextResponse, error) {
	maxTokens := r.MaxTokens
	if maxTokens <= 0 {
		maxTokens = c.cfg.MaxTokens
	}
	maxTokens = min(maxTokens, MaxMaxTokens)
	params := openai.ChatCompletionNewParams{
		Model:       shared.ChatModel(c.cfg.Model),
		Messages:    []openai.ChatCompletionMessageParamUnion{openai.SystemMessage(r.System), openai.UserMessage(r.User)},
		Temperature: openai.Float(c.cfg.Temperature),
		MaxTokens:   openai.Int(int64(maxTokens)),
	}
	promptBytes := len(r.System) + len(r.User)
	// The retrier of Complete, without its mode: an error about a text
	// request must not suggest another JSON mode.
	rt := c.retrier()
	rt.mode = ""
	var resp TextResponse
	var err error
	resp.Attempts, err = rt.do(ctx, func(actx context.Context) error {
		cc, err := c.oa.Chat.Completions.New(actx, params)
		if err != nil {
			resp.Usage = resp.Usage.Add(unanswered(promptBytes, actx.Err() != nil))
			return err
		}
		reported := Usage{PromptTokens: clampCount(cc.Usage.PromptTokens), CompletionTokens: clampCount(cc.Usage.CompletionTokens)}
		if len(cc.Choices) == 0 {
			resp.Usage = resp.Usage.Add(plausible(reported, promptBytes, 0, maxTokens))
			return &Error{Kind: KindMalformed, Message: "the answer has no choices"}
		}
		choice := cc.Choices[0]
		raw := choice.Message.Content
		refused := choice.Message.Refusal != ""
		if refused {
			raw = choice.Message.Refusal
		}
		resp.Usage = resp.Usage.Add(plausible(reported, promptBytes, len(raw), maxTokens))
		raw = redact(raw, c.cfg.APIKey, minRedacted)
		resp.Cut = choice.FinishReason == "length" || len(raw) > MaxAnswerBytes
		resp.Raw = CutText(raw, MaxAnswerBytes)
		if refused {
			return &Error{Kind: KindRefused, Message: "the model refused: " + clip(resp.Raw, 300)}
		}
		resp.Text = stripThink(resp.Raw)
		return nil
	})
	return resp, err
}

// stripThink removes the <think>…</think> blocks a reasoning model puts
// before its answer, and the spaces around it. An unfinished block (the
// model stopped while thinking) leaves no answer.
func stripThink(s string) string {
	s = strings.TrimSpace(s)
	for strings.HasPrefix(s, "<think>") {
		end := strings.Index(s, "</think>")
		if end < 0 {
			return ""
		}
		s = strings.TrimSpace(s[end+len("</think>"):])
	}
	return s
}
