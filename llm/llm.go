// Package llm is the only code in sgam that knows the wire format of a
// model server: it asks an OpenAI-compatible chat completions endpoint
// (OpenAI, vLLM, llama.cpp server, Ollama, LM Studio, ...) for one JSON
// object that fills a given JSON Schema, and returns that JSON with the
// tokens it cost; and an OpenAI-compatible embeddings endpoint for the
// vectors of texts (EmbedClient). It retries what is worth retrying (429,
// 5xx, timeouts, honouring Retry-After) and nothing else, and never puts
// the API key in an error or a log.
package llm

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/sgam-dev/sgam"
)

// Mode is how a request asks the model for JSON.
type Mode string

const (
	// JSONSchema asks for response_format {type: json_schema, strict:
	// true}: the server constrains the output to the schema. The default.
	JSONSchema Mode = "json_schema"
	// JSONObject asks for response_format {type: json_object} and gives
	// the schema in the prompt, for servers without schema support.
	JSONObject Mode = "json_object"
	// Tools asks for one forced call of a function whose parameters are
	// the schema, for servers that only constrain tool arguments.
	Tools Mode = "tools"
)

// Modes lists the modes a user can pick.
var Modes = []Mode{JSONSchema, JSONObject, Tools}

// ParseMode checks a mode name; empty is JSONSchema.
func ParseMode(s string) (Mode, error) {
	if s == "" {
		return JSONSchema, nil
	}
	for _, m := range Modes {
		if string(m) == s {
			return m, nil
		}
	}
	return "", fmt.Errorf("llm mode %q: must be one of json_schema, json_object, tools", s)
}

// Config configures a Client.
type Config struct {
	// BaseURL is the server's OpenAI-compatible API root, with its /v1
	// ("http://localhost:11434/v1"). Required.
	BaseURL string
	// Model is the model name the server knows. Required.
	Model string
	// APIKey is sent as a bearer token when set. It never appears in an
	// error, a log or a record.
	APIKey string
	Mode   Mode // default JSONSchema
	// Timeout bounds one attempt; default 120s (local models are slow),
	// at most MaxTimeout.
	Timeout time.Duration
	// MaxAttempts bounds the attempts of one request, the first included;
	// default 4, at most MaxAttemptsLimit.
	MaxAttempts int
	// MaxBackoff caps the wait between attempts, Retry-After included;
	// default 60s. A server that asks to wait longer gets an error.
	MaxBackoff time.Duration
	// MaxTokens is sent as max_tokens, so that an answer cannot run away
	// (and a server's count of its tokens can be checked); default
	// DefaultMaxTokens.
	MaxTokens int
	// Temperature of the request; default 0 (extraction wants the same
	// answer for the same prompt).
	Temperature float64
}

// Bounds of a Config.
const (
	MaxTimeout       = time.Hour
	MaxAttemptsLimit = 10
	DefaultMaxTokens = 8192
	MaxMaxTokens     = 1 << 20
)

// WorstCase is the longest one Complete may take: every attempt running
// to its timeout, and the longest wait between them. Whatever bounds a
// call from outside (a job's timeout, the immediate path's deadline) must
// not be shorter, or it cuts off attempts the client would have finished.
func (c Config) WorstCase() time.Duration {
	return time.Duration(c.MaxAttempts)*c.Timeout + time.Duration(c.MaxAttempts-1)*c.MaxBackoff
}

// Environment variables of the configuration (see FromEnv).
const (
	EnvBaseURL = "SGAM_LLM_BASE_URL"
	EnvModel   = "SGAM_LLM_MODEL"
	EnvAPIKey  = "SGAM_LLM_API_KEY"
	// EnvAPIKeyFile names a file that holds the key (its first line), for
	// secrets mounted as files.
	EnvAPIKeyFile = "SGAM_LLM_API_KEY_FILE"
	EnvMode       = "SGAM_LLM_MODE"
	// EnvTimeout is one attempt's timeout (a Go duration: "90s"),
	// EnvAttempts the attempts of one request, EnvMaxTokens max_tokens.
	EnvTimeout   = "SGAM_LLM_TIMEOUT"
	EnvAttempts  = "SGAM_LLM_ATTEMPTS"
	EnvMaxTokens = "SGAM_LLM_MAX_TOKENS"
)

// FromEnv reads the configuration from the environment: base URL, model,
// mode, timeout, attempts, max tokens, and the API key from
// SGAM_LLM_API_KEY or the file named by SGAM_LLM_API_KEY_FILE. Both unset
// base URL and model is no model (ok is false, with no error).
func FromEnv(getenv func(string) string) (cfg Config, ok bool, err error) {
	cfg = Config{BaseURL: getenv(EnvBaseURL), Model: getenv(EnvModel)}
	if cfg.Mode, err = ParseMode(getenv(EnvMode)); err != nil {
		return cfg, false, fmt.Errorf("%s: %w", EnvMode, err)
	}
	if v := getenv(EnvTimeout); v != "" {
		if cfg.Timeout, err = time.ParseDuration(v); err != nil || cfg.Timeout <= 0 {
			return cfg, false, fmt.Errorf("%s: %q is not a positive duration (90s, 2m)", EnvTimeout, v)
		}
	}
	if v := getenv(EnvAttempts); v != "" {
		if cfg.MaxAttempts, err = strconv.Atoi(v); err != nil || cfg.MaxAttempts <= 0 {
			return cfg, false, fmt.Errorf("%s: %q is not a positive number", EnvAttempts, v)
		}
	}
	if v := getenv(EnvMaxTokens); v != "" {
		if cfg.MaxTokens, err = strconv.Atoi(v); err != nil || cfg.MaxTokens <= 0 {
			return cfg, false, fmt.Errorf("%s: %q is not a positive number", EnvMaxTokens, v)
		}
	}
	if cfg.APIKey, err = apiKeyFromEnv(getenv, EnvAPIKey, EnvAPIKeyFile); err != nil {
		return cfg, false, err
	}
	return cfg, cfg.BaseURL != "" || cfg.Model != "", nil
}

// Check validates the configuration and fills in the defaults.
func (c Config) Check() (Config, error) {
	switch {
	case c.BaseURL == "":
		return c, sgam.Errorf(sgam.Invalid, "base_url", "the model's base URL is not set (%s; for example http://localhost:11434/v1)", EnvBaseURL)
	case !strings.HasPrefix(c.BaseURL, "http://") && !strings.HasPrefix(c.BaseURL, "https://"):
		return c, sgam.Errorf(sgam.Invalid, "base_url", "the model's base URL %q must start with http:// or https://", c.BaseURL)
	case c.Model == "":
		return c, sgam.Errorf(sgam.Invalid, "model", "the model is not set (%s)", EnvModel)
	case strings.ContainsAny(c.APIKey, "\r\n"):
		return c, sgam.Errorf(sgam.Invalid, "api_key", "the model API key holds a line break")
	case c.Timeout < 0 || c.Timeout > MaxTimeout:
		return c, sgam.Errorf(sgam.Invalid, "timeout", "the timeout of an attempt must be between 0 (the default, 120s) and %s, not %s", MaxTimeout, c.Timeout)
	case c.MaxAttempts < 0 || c.MaxAttempts > MaxAttemptsLimit:
		return c, sgam.Errorf(sgam.Invalid, "max_attempts", "the attempts of a request must be between 1 and %d, not %d", MaxAttemptsLimit, c.MaxAttempts)
	case c.MaxBackoff < 0 || c.MaxBackoff > MaxTimeout:
		return c, sgam.Errorf(sgam.Invalid, "max_backoff", "the longest wait between attempts must be between 0 (the default, 60s) and %s, not %s", MaxTimeout, c.MaxBackoff)
	case c.MaxTokens < 0 || c.MaxTokens > MaxMaxTokens:
		return c, sgam.Errorf(sgam.Invalid, "max_tokens", "must be between 1 and %d, not %d", MaxMaxTokens, c.MaxTokens)
	}
	m, err := ParseMode(string(c.Mode))
	if err != nil {
		return c, sgam.Errorf(sgam.Invalid, "mode", "%v", err)
	}
	c.Mode = m
	if c.Timeout <= 0 {
		c.Timeout = 120 * time.Second
	}
	if c.MaxAttempts <= 0 {
		c.MaxAttempts = 4
	}
	if c.MaxBackoff <= 0 {
		c.MaxBackoff = 60 * time.Second
	}
	if c.MaxTokens <= 0 {
		c.MaxTokens = DefaultMaxTokens
	}
	return c, nil
}

// Request asks for one JSON object that fills Schema.
type Request struct {
	System string
	User   string
	// SchemaName names the schema (and the function, in Tools mode): a
	// short identifier.
	SchemaName string
	// Schema is the JSON Schema of the answer, as JSON text: its property
	// order is kept, and the model fills properties in that order.
	Schema json.RawMessage
}

// Usage is what a call cost: as the server counted it where its count is
// plausible, else as sgam estimates it (see usage.go).
type Usage struct {
	PromptTokens     int `json:"prompt_tokens"`
	CompletionTokens int `json:"completion_tokens"`
	// Estimated is set when a count is sgam's own: the server gave none
	// (an attempt that got no answer) or one it could not have spent.
	Estimated bool `json:"estimated,omitempty"`
}

// Add sums two usages, saturating at MaxTokenCount rather than wrapping.
func (u Usage) Add(v Usage) Usage {
	return Usage{PromptTokens: SaturatingAdd(u.PromptTokens, v.PromptTokens), CompletionTokens: SaturatingAdd(u.CompletionTokens, v.CompletionTokens),
		Estimated: u.Estimated || v.Estimated}
}

// Response is a model's answer.
type Response struct {
	// Raw is the text the model answered (message content, or the tool
	// call's arguments), as it came, except that the API key, should the
	// server have quoted it, is replaced by [redacted].
	Raw string
	// RawCut is set when Raw is the beginning of an answer longer than
	// MaxAnswerBytes.
	RawCut bool
	// JSON is the answer with any <think> block and code fence removed:
	// what to parse. It is not checked against the schema.
	JSON string
	// Usage sums the tokens of every attempt sent, answered or not.
	Usage Usage
	// Attempts counts the requests sent, the first included.
	Attempts int
}

// Model is what asks a model: a Client, or a recording of one.
type Model interface {
	Complete(ctx context.Context, r Request) (Response, error)
	// Name is the model's name, as records keep it.
	Name() string
	// Mode is how it asks for JSON.
	Mode() Mode
	// WorstCase is the longest one Complete may take (Config.WorstCase).
	WorstCase() time.Duration
}
