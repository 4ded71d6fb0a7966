package cli

import (
	"fmt"
	"io"
	"os"

	"github.com/spf13/cobra"

	"github.com/sgam-dev/sgam"
	"github.com/sgam-dev/sgam/llm"
)

func (a *app) doctorCommand() *cobra.Command {
	var f llmFlags
	c := &cobra.Command{
		Use:   "doctor",
		Short: "Check the configured model and embedding endpoints: one verdict per capability, with the fix",
		Long: `Check the model server and the embeddings server that sgam is configured
with (the same flags and SGAM_LLM_*, SGAM_EMBED_* variables as ingest and
recall), with a tiny request per capability, and print one verdict each:

  reachable      GET /models answers (503: still loading the model)
  key            the key is accepted (it is never printed)
  model listed   the model is among those the server lists
  json_schema    the server holds the answer to a strict JSON Schema: the
                 probe asks the model for a value outside the schema's
                 enum, which only a server that constrains output refuses
  json_object    the json_object fallback answers JSON sgam can read
  tools          (in tools mode) the forced tool call keeps to the schema
  think blocks   whether answers carry <think> blocks (sgam removes them)
  usage          whether the server reports token usage (else sgam counts
                 its own estimate, marked estimated)
  embeddings     vectors of the expected dimension, different for
                 different texts

Each request is sent once, bounded by --llm-timeout. A failed check says
what to change. Exit 0 when sgam can work with the endpoints, 1 when it
cannot, 2 for a bad configuration (or none). docs/models.md has working
settings for llama.cpp, Ollama, vLLM, LM Studio and OpenAI.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			chat, ok, err := f.config()
			if err != nil {
				return err
			}
			var chatCfg *llm.Config
			if ok {
				chatCfg = &chat
			}
			embed, eok, err := llm.EmbedConfigFromEnv(os.Getenv)
			if err != nil {
				return sgam.Errorf(sgam.Invalid, "SGAM_EMBED", "%v", err)
			}
			var embedCfg *llm.EmbedConfig
			if eok {
				embedCfg = &embed
			}
			if chatCfg == nil && embedCfg == nil {
				return sgam.Errorf(sgam.Invalid, "--llm-base-url", "nothing to check: %s; and SGAM_EMBED_BASE_URL and SGAM_EMBED_MODEL for embeddings", modelHelp)
			}
			rep, err := llm.Diagnose(a.ctx, chatCfg, embedCfg)
			if err != nil {
				if chatCfg != nil && sgam.ErrorCode(err) == sgam.Invalid {
					return llmError(err)
				}
				return sgam.Errorf(sgam.Invalid, "SGAM_EMBED", "%v", err)
			}
			if err := a.show(rep, func(w io.Writer) error { return printReport(w, chatCfg, embedCfg, rep) }); err != nil {
				return err
			}
			if !rep.Usable() {
				return exitError{code: ExitFailure}
			}
			return nil
		},
	}
	f.add(c)
	return c
}

// printReport writes the doctor's findings for people: the endpoints (never
// the key), a line per check, its fix beneath, and the verdict.
func printReport(w io.Writer, chat *llm.Config, embed *llm.EmbedConfig, rep llm.Report) error {
	if chat != nil {
		mode := chat.Mode
		if mode == "" {
			mode = llm.JSONSchema
		}
		fmt.Fprintf(w, "model server %s, model %q, mode %s\n", chat.BaseURL, chat.Model, mode)
	}
	if embed != nil {
		fmt.Fprintf(w, "embeddings server %s, model %q\n", embed.BaseURL, embed.Model)
	}
	failed := 0
	for _, f := range rep.Findings {
		took := ""
		if f.Millis > 0 {
			took = fmt.Sprintf(" (%d ms)", f.Millis)
		}
		fmt.Fprintf(w, "  %-7s  %-12s  %s%s\n", f.Verdict, f.Check, f.Detail, took)
		if f.Fix != "" {
			fmt.Fprintf(w, "  %-7s  %-12s  fix: %s\n", "", "", f.Fix)
		}
		if f.Verdict == llm.Fail {
			failed++
		}
	}
	if failed > 0 {
		checks := "checks"
		if failed == 1 {
			checks = "check"
		}
		_, err := fmt.Fprintf(w, "sgam cannot work with these endpoints as configured: %d %s failed\n", failed, checks)
		return err
	}
	_, err := fmt.Fprintln(w, "sgam can work with these endpoints")
	return err
}
