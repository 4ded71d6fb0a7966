package llm

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"slices"
	"strings"
	"time"
)

// The doctor asks a user's endpoints what sgam will ask of them, each
// capability with a tiny request of its own, and says per capability
// whether sgam can work with it and, when not, what to change. A server
// that claims to be OpenAI-compatible can still ignore a response_format
// (Ollama's /v1 drops strict, llama.cpp's converter skips what it cannot
// express), refuse json_schema (DeepSeek), wrap its JSON in <think>
// blocks or report no usage; each of these changes what sgam must do.

// Verdict is what the doctor says of one capability.
type Verdict string

const (
	// Pass: sgam can use it as configured.
	Pass Verdict = "ok"
	// Warn: sgam can work with it, with a caveat the detail says.
	Warn Verdict = "warn"
	// Fail: sgam cannot work with the endpoint as configured.
	Fail Verdict = "fail"
	// Skip: not checked (not configured, or an earlier check failed).
	Skip Verdict = "skipped"
)

// Finding is the doctor's verdict on one capability.
type Finding struct {
	Check   string  `json:"check"`
	Verdict Verdict `json:"verdict"`
	Detail  string  `json:"detail"`
	// Fix says what to change when the verdict is not Pass.
	Fix string `json:"fix,omitempty"`
	// Millis is how long the check's request took (0: none was sent).
	Millis int64 `json:"ms,omitempty"`
}

// Checks of the doctor, in the order they run.
const (
	CheckReachable  = "reachable"
	CheckKey        = "key"
	CheckModel      = "model listed"
	CheckJSONSchema = "json_schema"
	CheckJSONObject = "json_object"
	CheckTools      = "tools"
	CheckThink      = "think blocks"
	CheckUsage      = "usage"
	CheckEmbeddings = "embeddings"
)

// Report is what the doctor found, one finding per capability.
type Report struct {
	Findings []Finding `json:"findings"`
}

// Usable reports whether sgam can work with the endpoints as configured:
// no finding failed.
func (r Report) Usable() bool {
	return !slices.ContainsFunc(r.Findings, func(f Finding) bool { return f.Verdict == Fail })
}

// probeSchema is the doctor's tiny output schema: an enum the model is
// told to break, so that an answer that keeps to it shows the server
// constrained the output, and one that breaks it shows it did not.
const probeSchema = `{"type":"object","properties":{"color":{"type":"string","enum":["teal","mauve"]}},"required":["color"],"additionalProperties":false}`

var probeColors = []string{"teal", "mauve"}

// probeOf is the doctor's request in mode m. Where the server is to hold
// the answer to the schema (json_schema, tools) it asks for a value
// outside the enum, which only a server that constrains the output can
// refuse; in json_object mode the schema is only in the prompt, and it
// asks for a value the schema allows: whether the answer is JSON that
// sgam can read.
func probeOf(m Mode) Request {
	user := `Answer exactly {"color": "red"}.`
	if m == JSONObject {
		user = `Answer with the color teal.`
	}
	return Request{System: "You answer with JSON only.", User: user, SchemaName: "probe", Schema: json.RawMessage(probeSchema)}
}

// Diagnose checks the model server of chat (nil: none configured) and the
// embeddings server of embed (nil: none), each request bounded by its
// configuration's timeout and sent once: the doctor reports, it does not
// retry. Bad configurations are refused before anything is sent, as
// New and NewEmbedder refuse them.
func Diagnose(ctx context.Context, chat *Config, embed *EmbedConfig) (Report, error) {
	var r Report
	if chat != nil {
		cfg, err := chat.Check()
		if err != nil {
			return r, err
		}
		cfg.MaxAttempts = 1
		r.Findings = append(r.Findings, diagnoseChat(ctx, cfg)...)
	}
	if embed != nil {
		cfg, err := embed.Check()
		if err != nil {
			return r, err
		}
		cfg.MaxRetries = 0
		r.Findings = append(r.Findings, diagnoseEmbed(ctx, cfg))
	}
	return r, nil
}

// diagnoseChat checks the chat server: the listing of models (reachable,
// the key, the model), then one probe in each structured-output mode
// (the configured one decides; the others say what a switch would give),
// and what the configured mode's answer shows of <think> blocks and usage.
func diagnoseChat(ctx context.Context, cfg Config) []Finding {
	out := listModels(ctx, cfg)
	if out[0].Verdict == Fail || out[1].Verdict == Fail {
		for _, c := range []string{CheckJSONSchema, CheckJSONObject, CheckThink, CheckUsage} {
			out = append(out, Finding{Check: c, Verdict: Skip, Detail: "not checked: the server cannot be asked"})
		}
		return out
	}
	modes := []Mode{JSONSchema, JSONObject}
	if cfg.Mode == Tools {
		modes = append(modes, Tools)
	}
	var used *Response
	for _, m := range modes {
		f, resp := probeMode(ctx, cfg, m)
		out = append(out, f)
		if m == cfg.Mode {
			used = resp
		}
	}
	if used == nil {
		return append(out,
			Finding{Check: CheckThink, Verdict: Skip, Detail: "not checked: the configured mode got no answer"},
			Finding{Check: CheckUsage, Verdict: Skip, Detail: "not checked: the configured mode got no answer"})
	}
	think := Finding{Check: CheckThink, Verdict: Pass, Detail: "none in the answer"}
	if strings.Contains(used.Raw, "<think>") {
		think.Detail = "the answer holds a <think> block: sgam removes it before parsing, and keeps it in the extraction record"
	}
	usage := Finding{Check: CheckUsage, Verdict: Pass, Detail: fmt.Sprintf("the server counted %d prompt and %d completion tokens", used.Usage.PromptTokens, used.Usage.CompletionTokens)}
	if used.Usage.Estimated {
		usage = Finding{Check: CheckUsage, Verdict: Warn,
			Detail: fmt.Sprintf("the server reported no token usage (or one it could not have spent): sgam counts its own estimate (%d prompt, %d completion tokens), marked estimated in records and budgets", used.Usage.PromptTokens, used.Usage.CompletionTokens),
			Fix:    "budgets are then estimates; llama.cpp's llama-server, vLLM, Ollama and OpenAI report usage"}
	}
	return append(out, think, usage)
}

// listModels asks GET /models: whether the server answers, takes the key
// and lists the model. A server without the listing is reachable.
func listModels(ctx context.Context, cfg Config) []Finding {
	reach := Finding{Check: CheckReachable}
	key := Finding{Check: CheckKey}
	model := Finding{Check: CheckModel}
	oa := newOpenAI(cfg.BaseURL, cfg.APIKey, maxResponseBytes)
	r := retrier{maxAttempts: 1, timeout: cfg.Timeout, secret: cfg.APIKey}
	start := time.Now()
	var ids []string
	err := r.once(ctx, func(actx context.Context) error {
		page, err := oa.Models.List(actx)
		if err != nil {
			return err
		}
		for _, m := range page.Data {
			ids = append(ids, m.ID)
		}
		return nil
	})
	reach.Millis = time.Since(start).Milliseconds()
	var e *Error
	if err != nil {
		e = r.classify(err)
	}
	switch {
	case e == nil:
		reach.Verdict, reach.Detail = Pass, "GET "+cfg.BaseURL+"/models answered"
	case e.Kind == KindConnection || e.Kind == KindTimeout || e.Kind == KindCanceled:
		reach.Verdict, reach.Detail = Fail, e.Error()
		reach.Fix = "start the server, or set " + EnvBaseURL + " to its OpenAI-compatible root, with its /v1 (http://localhost:8080/v1)"
	case e.Kind == KindStatus && e.Status == http.StatusServiceUnavailable:
		reach.Verdict, reach.Detail = Fail, e.Error()
		reach.Fix = "the server is up but not ready (llama-server and vLLM answer 503 while they load the model): wait, and ask again"
	case e.Kind == KindStatus && (e.Status == http.StatusUnauthorized || e.Status == http.StatusForbidden):
		reach.Verdict, reach.Detail = Pass, "the server answered"
	case e.Kind == KindStatus && e.Status == http.StatusNotFound:
		reach.Verdict, reach.Detail = Pass, "the server answered, without a /models listing"
	case e.Kind == KindStatus && e.Status >= 500:
		reach.Verdict, reach.Detail = Fail, e.Error()
		reach.Fix = "the server fails: see its log"
	default:
		reach.Verdict, reach.Detail = Warn, "the models listing failed: "+e.Error()
	}
	if reach.Verdict == Fail {
		key.Verdict, key.Detail = Skip, "not checked: the server cannot be asked"
		model.Verdict, model.Detail = Skip, "not checked: the server cannot be asked"
		return []Finding{reach, key, model}
	}
	sent := "a key was sent"
	if cfg.APIKey == "" {
		sent = "no key was sent"
	}
	switch {
	case e != nil && e.Kind == KindStatus && (e.Status == http.StatusUnauthorized || e.Status == http.StatusForbidden):
		key.Verdict = Fail
		key.Detail = fmt.Sprintf("the server refused the request (%d %s); %s", e.Status, http.StatusText(e.Status), sent)
		key.Fix = "set " + EnvAPIKey + " (or " + EnvAPIKeyFile + ") to a key the server accepts"
	default:
		key.Verdict, key.Detail = Pass, "accepted ("+sent+")"
	}
	switch {
	case key.Verdict == Fail:
		model.Verdict, model.Detail = Skip, "not checked: the key was refused"
	case e != nil:
		model.Verdict, model.Detail = Skip, "not checked: the server lists no models"
	case slices.Contains(ids, cfg.Model):
		model.Verdict, model.Detail = Pass, fmt.Sprintf("%q is listed", cfg.Model)
	default:
		// llama-server answers whatever name a request gives, Ollama and
		// OpenAI refuse one they do not know: a warning, and the probes
		// below decide.
		listed := ids[:min(len(ids), 5)]
		model.Verdict = Warn
		model.Detail = fmt.Sprintf("%q is not among the %d listed (%s)", cfg.Model, len(ids), strings.Join(quoteAll(listed), ", "))
		model.Fix = "set " + EnvModel + " to a listed model, unless the server serves one model whatever the name (llama-server does)"
	}
	return []Finding{reach, key, model}
}

func quoteAll(ss []string) []string {
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = fmt.Sprintf("%q", s)
	}
	return out
}

// probeMode sends the probe in mode m and says whether its answer keeps
// to the schema, and returns the response when one came back.
func probeMode(ctx context.Context, cfg Config, m Mode) (Finding, *Response) {
	f := Finding{Check: string(m)}
	configured := m == cfg.Mode
	// A mode that is not the configured one only informs: its failure
	// does not stop sgam, and its fix is never to switch to it.
	fail := Fail
	if !configured {
		fail = Warn
	}
	c := cfg
	c.Mode = m
	// The probe's answer is a few tokens; a bound keeps a server that
	// ignores the schema from talking for minutes.
	c.MaxTokens = 256
	client := &Client{cfg: c, oa: newOpenAI(c.BaseURL, c.APIKey, maxResponseBytes)}
	start := time.Now()
	resp, err := client.Complete(ctx, probeOf(m))
	f.Millis = time.Since(start).Milliseconds()
	if err != nil {
		f.Verdict, f.Detail = fail, err.Error()
		if e, ok := err.(*Error); ok && e.Kind == KindStatus && e.Status >= 400 && e.Status < 500 {
			f.Detail = fmt.Sprintf("the server refuses %s requests: %s", m, err)
		}
		f.Fix = modeFix(m, configured)
		return f, nil
	}
	var answer struct {
		Color *string `json:"color"`
	}
	if json.Unmarshal([]byte(resp.JSON), &answer) != nil || answer.Color == nil {
		f.Verdict = fail
		f.Detail = fmt.Sprintf("the answer is not a JSON object with the schema's field: %s", clip(resp.JSON, 120))
		if EchoesSchema(resp.JSON) {
			// Small local models often answer the schema given in the
			// prompt rather than an object that fills it.
			f.Detail = fmt.Sprintf("the model answered the JSON Schema itself, not an object that fills it: %s", clip(resp.JSON, 120))
		}
		f.Fix = modeFix(m, configured)
		return f, &resp
	}
	if !slices.Contains(probeColors, *answer.Color) {
		f.Verdict = fail
		f.Detail = fmt.Sprintf("the server did not hold the answer to the schema: it answered color %q, not one of %s (sgam's own validation still refuses such answers)", *answer.Color, strings.Join(quoteAll(probeColors), ", "))
		if m == JSONObject {
			// In json_object mode the schema is only in the prompt: a
			// model that breaks it is one sgam refuses answers of.
			f.Verdict = Warn
			f.Detail = fmt.Sprintf("the model did not keep to the schema given in the prompt: it answered color %q, not one of %s; sgam refuses such answers, and records why", *answer.Color, strings.Join(quoteAll(probeColors), ", "))
		}
		f.Fix = modeFix(m, configured)
		return f, &resp
	}
	f.Verdict = Pass
	switch m {
	case JSONSchema:
		f.Detail = "the server held the answer to the schema (strict): it answered " + *answer.Color
	case JSONObject:
		f.Detail = "the answer is JSON that keeps to the schema in the prompt: " + *answer.Color
	default:
		f.Detail = "the tool call's arguments keep to the schema: " + *answer.Color
	}
	if !configured {
		f.Detail += " (not the configured mode: " + string(cfg.Mode) + ")"
	}
	return f, &resp
}

// EchoesSchema reports whether an answer is a JSON Schema rather than a
// value: an object with "type" and "properties" (or "$schema") at its top,
// what small models often answer in json_object mode, where the schema is
// in the prompt.
func EchoesSchema(answer string) bool {
	var top map[string]json.RawMessage
	if json.Unmarshal([]byte(answer), &top) != nil {
		return false
	}
	_, schema := top["$schema"]
	_, typ := top["type"]
	var props map[string]json.RawMessage
	return schema || typ && json.Unmarshal(top["properties"], &props) == nil && props != nil
}

// modeFix says what to do when mode m fails.
func modeFix(m Mode, configured bool) string {
	switch {
	case !configured:
		return ""
	case m == JSONSchema:
		return "set " + EnvMode + "=json_object: sgam then gives the schema in the prompt and validates the answer itself"
	case m == JSONObject:
		return "use a server or model that answers JSON (" + EnvMode + "=json_schema where the server constrains output to a schema)"
	}
	return "set " + EnvMode + "=json_schema or json_object"
}

// diagnoseEmbed embeds two different texts and checks the vectors: one
// per text, of the asked dimensions, finite, not the same.
func diagnoseEmbed(ctx context.Context, cfg EmbedConfig) Finding {
	f := Finding{Check: CheckEmbeddings}
	c := &EmbedClient{cfg: cfg, oa: newOpenAI(cfg.BaseURL, cfg.APIKey, 0)}
	start := time.Now()
	vecs, tokens, err := c.Embed(ctx, []string{"Mira moved to Bergen in February.", "The invoice is due on Friday."})
	f.Millis = time.Since(start).Milliseconds()
	if err != nil {
		f.Verdict, f.Detail = Fail, err.Error()
		f.Fix = "check " + EnvEmbedBaseURL + " and " + EnvEmbedModel + " (llama-server embeds only when started with --embeddings)"
		if e, ok := err.(*Error); ok && e.Kind == KindStatus && (e.Status == http.StatusUnauthorized || e.Status == http.StatusForbidden) {
			f.Fix = "set " + EnvEmbedAPIKey + " (or " + EnvEmbedAPIKeyFile + ") to a key the server accepts"
		}
		return f
	}
	dims := len(vecs[0])
	if cosine(vecs[0], vecs[1]) > 0.9999 {
		f.Verdict = Fail
		f.Detail = fmt.Sprintf("two different texts got the same vector (%d dimensions): the vectors cannot rank episodes", dims)
		f.Fix = "use an embedding model (a chat model's endpoint may answer one vector for everything)"
		return f
	}
	f.Verdict = Pass
	f.Detail = fmt.Sprintf("%d dimensions, model %s", dims, c.Model())
	if tokens == 0 {
		f.Detail += "; the server reported no token usage"
	}
	// llama-server embeds whatever name a request gives: vectors are kept
	// under the configured name, and a name that changes re-embeds every
	// episode. Said when the server lists its models and not this one.
	if ids, ok := embedModels(ctx, cfg); ok && !slices.Contains(ids, cfg.Model) {
		f.Verdict = Warn
		f.Detail += fmt.Sprintf("; the server lists %s, not %q: it answered under a name it does not have, and sgam keeps the vectors under that name (a later change of the name embeds every episode again)",
			strings.Join(quoteAll(ids[:min(len(ids), 5)]), ", "), cfg.Model)
		f.Fix = "set " + EnvEmbedModel + " to the name the server lists"
	}
	return f
}

// embedModels lists the embeddings server's models, ok false when it has
// no listing.
func embedModels(ctx context.Context, cfg EmbedConfig) (ids []string, ok bool) {
	oa := newOpenAI(cfg.BaseURL, cfg.APIKey, maxResponseBytes)
	r := retrier{maxAttempts: 1, timeout: cfg.Timeout, secret: cfg.APIKey}
	err := r.once(ctx, func(actx context.Context) error {
		page, err := oa.Models.List(actx)
		if err != nil {
			return err
		}
		for _, m := range page.Data {
			ids = append(ids, m.ID)
		}
		return nil
	})
	return ids, err == nil && len(ids) > 0
}

func cosine(a, b []float32) float64 {
	var dot, na, nb float64
	for i := range a {
		dot += float64(a[i]) * float64(b[i])
		na += float64(a[i]) * float64(a[i])
		nb += float64(b[i]) * float64(b[i])
	}
	if na == 0 || nb == 0 {
		return 1
	}
	return dot / math.Sqrt(na*nb)
}
