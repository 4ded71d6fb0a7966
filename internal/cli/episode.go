package cli

import (
	"encoding/json"
	"fmt"
	"io"
	"os"

	"github.com/spf13/cobra"

	"github.com/sgam-dev/sgam"
	"github.com/sgam-dev/sgam/store"
)

func (a *app) episodeCommand() *cobra.Command {
	c := &cobra.Command{
		Use:   "episode",
		Short: "Capture, list and show episodes: the raw inputs facts cite as sources",
		Args:  cobra.NoArgs, // an unknown subcommand is a usage error, not help
		RunE: func(cmd *cobra.Command, args []string) error {
			return cmd.Help()
		},
	}
	c.AddCommand(a.episodeAddCommand(), a.episodeListCommand(), a.episodeShowCommand())
	return c
}

func (a *app) episodeAddCommand() *cobra.Command {
	var e sgam.Episode
	var occurred, metadata, content, contentFile string
	c := &cobra.Command{
		Use:   "add",
		Short: "Capture an episode (a message, a tool result, an event)",
		Long: `Capture an episode. Its text comes from --content, or --content-file (- for
standard input). Adding the same episode again is a no-op; adding a different
one under the same --id or --idempotency-key is a conflict. An episode that a
fact already named as its source is filled in.`,
		Example: `  sgam episode add --id e2 --kind message --occurred-at 2026-06-03T10:00:00Z \
    --content "Correction: the passport deadline is June 30."`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			contentFlag := "--content"
			if contentFile != "" {
				contentFlag = "--content-file" // the text's errors name where it came from
			}
			a.withFields(map[string]string{"episode_id": "--id", "kind": "--kind", "session": "--session", "occurred_at": "--occurred-at",
				"metadata": "--metadata", "idempotency_key": "--idempotency-key", "content": contentFlag})
			var err error
			if e.OccurredAt, err = timeFlag("occurred-at", occurred); err != nil {
				return err
			}
			if metadata != "" {
				e.Metadata = json.RawMessage(metadata)
			}
			switch {
			case content != "" && contentFile != "":
				return sgam.Errorf(sgam.Invalid, "--content-file", "give either --content or --content-file, not both")
			case contentFile == "-":
				if e.Content, err = readContent(a.stdin); err != nil {
					return err
				}
			case contentFile != "":
				f, err := os.Open(contentFile)
				if err != nil {
					return sgam.Errorf(sgam.Invalid, "--content-file", "%v", err)
				}
				e.Content, err = readContent(f)
				f.Close()
				if err != nil {
					return err
				}
			default:
				e.Content = content
			}
			e.Tenant = a.tenant
			return a.withStore(func(s store.Store) error {
				stored, err := s.AddEpisode(a.ctx, e)
				if err != nil {
					return err
				}
				return a.show(stored, func(w io.Writer) error {
					fmt.Fprintln(w, stored.ID)
					return nil
				})
			})
		},
	}
	f := c.Flags()
	f.StringVar(&e.ID, "id", "", "episode id (default: generated)")
	f.StringVar(&e.Session, "session", "", "session or conversation id")
	f.StringVar(&e.Kind, "kind", sgam.KindMessage, "kind: message, tool, event, user_confirmed, ...")
	f.StringVar(&occurred, "occurred-at", "", "when it happened (RFC 3339; default now)")
	f.StringVar(&metadata, "metadata", "", "a JSON object")
	f.StringVar(&e.IdempotencyKey, "idempotency-key", "", "a key that makes retries of this capture no-ops")
	f.StringVar(&e.Retention, "retention", "", "retention class (declared in the schema; default its episode_retention)")
	f.StringVar(&content, "content", "", "the episode's text (required: this or --content-file)")
	f.StringVar(&contentFile, "content-file", "", "read the text from a file (- for standard input)")
	return c
}

// readContent reads an episode's text for --content-file, refusing more
// than an episode may hold without reading all of it.
func readContent(r io.Reader) (string, error) {
	b, err := io.ReadAll(io.LimitReader(r, sgam.DefaultMaxContentBytes+1))
	if err != nil {
		return "", sgam.Errorf(sgam.Invalid, "--content-file", "%v", err)
	}
	if len(b) > sgam.DefaultMaxContentBytes {
		return "", sgam.Errorf(sgam.Invalid, "--content-file", "is more than %d bytes, the limit of an episode's content", sgam.DefaultMaxContentBytes)
	}
	return string(b), nil
}

func (a *app) episodeListCommand() *cobra.Command {
	var q sgam.EpisodeQuery
	c := &cobra.Command{
		Use:   "list",
		Short: "List episodes, oldest first",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			q.Tenant = a.tenant
			if q.Limit < 1 || q.Limit > 10000 {
				return sgam.Errorf(sgam.Invalid, "--limit", "must be between 1 and 10000, not %d", q.Limit)
			}
			return a.withExisting(func(s store.Store) error {
				eps, err := s.Episodes(a.ctx, q)
				if err != nil {
					return err
				}
				return a.show(eps, func(w io.Writer) error {
					for _, e := range eps {
						printEpisode(w, e, false)
					}
					return nil
				})
			})
		},
	}
	c.Flags().StringVar(&q.Session, "session", "", "only this session")
	c.Flags().IntVar(&q.Limit, "limit", 100, "at most this many (1 to 10000)")
	return c
}

func (a *app) episodeShowCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "show ID",
		Short: "Show one episode with its content and its extraction records",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			a.withFields(map[string]string{"episode_id": "ID"})
			return a.withExisting(func(s store.Store) error {
				e, err := s.Episode(a.ctx, a.tenant, args[0])
				if err != nil {
					return err
				}
				recs, err := s.Extractions(a.ctx, a.tenant, args[0])
				if err != nil {
					return err
				}
				return a.show(struct {
					sgam.Episode
					Extractions []sgam.Extraction `json:"extractions"`
				}{e, recs}, func(w io.Writer) error {
					printEpisode(w, e, true)
					for _, r := range recs {
						fmt.Fprintf(w, "\nextraction %s at %s, model %s (%s), schema version %d, prompt %s\n", r.ID, fmtTime(r.At), r.Model, r.Mode, r.SchemaVersion, truncate(r.PromptDigest, 12))
						a.printExtraction(r, false)
					}
					return nil
				})
			})
		},
	}
}
