package cli

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/sgam-dev/sgam"
	"github.com/sgam-dev/sgam/store"
)

// The passport story: a deadline told, corrected, and extracted late.
var demoEpisodes = []struct {
	id, at, recorded, content, value string
}{
	{"e1", "2026-06-01T09:00:00Z", "2026-06-01T09:00:00Z", "Mira: my passport renewal deadline is July 15.", "2026-07-15"},
	{"e2", "2026-06-03T10:00:00Z", "2026-06-03T10:00:00Z", "Mira: correction, the deadline is June 30, not July 15.", "2026-06-30"},
	{"e0", "2026-05-30T08:00:00Z", "2026-06-05T12:00:00Z", "Consulate letter to Mira, extracted late: renew by August 1.", "2026-08-01"},
}

func (a *app) demoCommand() *cobra.Command {
	var keep bool
	c := &cobra.Command{
		Use:   "demo",
		Short: "Tell the passport story end to end on a fresh temporary database",
		Long: `Tell the passport story on a fresh temporary database: Mira's passport
deadline is July 15 (episode e1, June 1), corrected to June 30 (e2, June 3),
and a consulate letter from May 30 saying August 1 is extracted late (e0,
recorded June 5). It shows what a naive text memory returns, then what sgam
answers now, at past instants, and as it was believed before the correction.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			dir, err := os.MkdirTemp("", "sgam-demo-")
			if err != nil {
				return err
			}
			if !keep {
				defer os.RemoveAll(dir)
			}
			return a.runDemo(filepath.Join(dir, "demo.db"), keep)
		},
	}
	c.Flags().BoolVar(&keep, "keep", false, "keep the demo database and print its path")
	return c
}

func (a *app) runDemo(path string, keep bool) error {
	w := a.stdout
	ts := func(s string) time.Time {
		t, err := sgam.ParseTime("demo", s)
		if err != nil {
			panic(err)
		}
		return t
	}
	clock := &sgam.ManualClock{}
	s, err := store.Open(a.ctx, path, store.Options{Clock: clock})
	if err != nil {
		return err
	}
	defer s.Close()
	const tenant = "demo"
	key := sgam.Key{Tenant: tenant, Subject: "mira", Attribute: "passport_deadline"}

	fmt.Fprintln(w, "sgam demo: Mira's passport deadline, told three times")
	fmt.Fprintln(w)
	for _, e := range demoEpisodes {
		clock.Set(ts(e.recorded))
		if _, err := s.AddEpisode(a.ctx, sgam.Episode{Tenant: tenant, ID: e.id, Kind: sgam.KindMessage, Content: e.content, OccurredAt: ts(e.at)}); err != nil {
			return err
		}
		value, _ := json.Marshal(e.value)
		r, err := s.Assert(a.ctx, sgam.Assertion{Key: key, Value: value, ValidFrom: ts(e.at), Source: e.id})
		if err != nil {
			return err
		}
		fmt.Fprintf(w, "  recorded %s  %s (said %s): %q\n", e.recorded[:16], e.id, e.at[:16], e.content)
		fmt.Fprintf(w, "      -> fact %d: passport_deadline = %s from %s\n", r.Fact.ID, r.Fact.Value, e.at[:16])
	}

	question := "When is Mira's passport deadline?"
	fmt.Fprintf(w, "\nQ: %s\n\n", question)
	best, score := naiveRecall(question)
	fmt.Fprintf(w, "A naive text memory (best keyword match, %d words in common) returns %s:\n  %q\n", score, best.id, best.content)
	fmt.Fprintln(w, "  It cannot tell that this was corrected, nor what held when.")

	fmt.Fprintln(w, "\nsgam answers from the ledger:")
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	ask := func(label string, at sgam.At) error {
		f, err := s.Get(a.ctx, key, at)
		if err != nil {
			return err
		}
		if f == nil {
			fmt.Fprintf(tw, "  %s\t(no value)\n", label)
			return nil
		}
		fmt.Fprintf(tw, "  %s\t%s\tsource %s, fact %d, valid %s → %s\n", label, f.Value, strings.Join(f.Sources, ","), f.ID,
			fmtTime(f.ValidFrom), fmtEnd(f.ValidTo, "open"))
		return nil
	}
	for _, q := range []struct {
		label string
		at    sgam.At
	}{
		{"now (current value)", sgam.At{}},
		{"on 2026-06-02", sgam.At{AsOf: ts("2026-06-02T00:00:00Z")}},
		{"on 2026-05-31", sgam.At{AsOf: ts("2026-05-31T00:00:00Z")}},
		{"about 2026-06-04, as believed before e2 was recorded", sgam.At{AsOf: ts("2026-06-04T00:00:00Z"), KnownAt: ts("2026-06-03T09:59:00Z")}},
		{"on 2026-05-31, as believed on 2026-06-04 (before e0)", sgam.At{AsOf: ts("2026-05-31T00:00:00Z"), KnownAt: ts("2026-06-04T00:00:00Z")}},
	} {
		if err := ask(q.label, q.at); err != nil {
			return err
		}
	}
	tw.Flush()

	hist, err := s.History(a.ctx, key)
	if err != nil {
		return err
	}
	fmt.Fprintln(w, "\nThe ledger keeps every row; a correction retracts and closes, it never edits:")
	printFacts(w, hist, false)

	vs, err := s.Check(a.ctx)
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "\ncheck: %d violations\n", len(vs))
	if keep {
		fmt.Fprintf(w, "database kept at %s (tenant %q); try: sgam --db %s --tenant demo history mira passport_deadline\n", path, tenant, path)
	}
	return nil
}

// naiveRecall stands in for a text-similarity memory: it returns the
// episode sharing the most words with the question.
func naiveRecall(question string) (best struct{ id, content string }, score int) {
	q := words(question)
	for _, e := range demoEpisodes {
		n := 0
		for w := range words(e.content) {
			if q[w] {
				n++
			}
		}
		if n > score {
			score = n
			best.id, best.content = e.id, e.content
		}
	}
	return best, score
}

func words(s string) map[string]bool {
	out := map[string]bool{}
	for _, w := range strings.FieldsFunc(strings.ToLower(s), func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '\'')
	}) {
		out[strings.TrimSuffix(w, "'s")] = true
	}
	return out
}
