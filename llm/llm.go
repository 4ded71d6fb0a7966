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
	"errors"
	"fmt"
	"strings"
	"time"
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
	// Timeout bounds one attempt; default 120s (local models are slow).
	Timeout time.Duration
	// MaxAttempts bounds the attempts of one request, the first included;
	// default 4.
	MaxAttempts int
	// MaxBackoff caps the wait between attempts, Retry-After included;
	// default 60s. A server that asks to wait longer gets an error.
	MaxBackoff time.Duration
	// Temperature of the request; default 0 (extraction wants the same
	// answer for the same prompt).
	Temperature float64
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
)

// FromEnv reads the configuration from the environment: base URL, model,
// mode, and the API key from SGAM_LLM_API_KEY or the file named by
// SGAM_LLM_API_KEY_FILE. Both unset base URL and model is no model (ok is
// false, with no error).
func FromEnv(getenv func(string) string) (cfg Config, ok bool, err error) {
	cfg = Config{BaseURL: getenv(EnvBaseURL), Model: getenv(EnvModel)}
	if cfg.Mode, err = ParseMode(getenv(EnvMode)); err != nil {
		return cfg, false, fmt.Errorf("%s: %w", EnvMode, err)
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
		return c, fmt.Errorf("the model's base URL is not set: set %s or --llm-base-url (for example http://localhost:11434/v1)", EnvBaseURL)
	case !strings.HasPrefix(c.BaseURL, "http://") && !strings.HasPrefix(c.BaseURL, "https://"):
		return c, fmt.Errorf("the model's base URL %q must start with http:// or https://", c.BaseURL)
	case c.Model == "":
		return c, fmt.Errorf("the model is not set: set %s or --llm-model", EnvModel)
	case strings.ContainsAny(c.APIKey, "\r\n"):
		return c, errors.New("the model API key holds a line break")
	}
	m, err := ParseMode(string(c.Mode))
	if err != nil {
		return c, err
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
	// MaxTokens bounds the answer; 0 leaves it to the server.
	MaxTokens int
}

// Usage is what a call cost, as the server counted it.
type Usage struct {
	PromptTokens     int `json:"prompt_tokens"`
	CompletionTokens int `json:"completion_tokens"`
}

// Add sums two usages.
func (u Usage) Add(v Usage) Usage {
	return Usage{PromptTokens: u.PromptTokens + v.PromptTokens, CompletionTokens: u.CompletionTokens + v.CompletionTokens}
}

// Response is a model's answer.
type Response struct {
	// Raw is the text the model answered (message content, or the tool
	// call's arguments), as it came, except that the API key, should the
	// server have quoted it, is replaced by [redacted].
	Raw string
	// JSON is the answer with any <think> block and code fence removed:
	// what to parse. It is not checked against the schema.
	JSON string
	// Usage sums the tokens of every attempt that the server answered.
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
}
