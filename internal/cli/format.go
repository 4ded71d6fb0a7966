package cli

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/sgam-dev/sgam"
)

// Human output. Every command also has --json, which prints the library's
// types as they are; these renderings are for people and may change.

func fmtTime(t time.Time) string { return sgam.FormatTime(t) }

func fmtEnd(t *time.Time, open string) string {
	if t == nil {
		return open
	}
	return fmtTime(*t)
}

func fmtValue(f sgam.Fact) string {
	if f.Tombstone {
		return "(retracted)"
	}
	return truncate(string(f.Value), 80)
}

func truncate(s string, n int) string {
	s = strings.ReplaceAll(s, "\n", " ")
	if len([]rune(s)) <= n {
		return s
	}
	return string([]rune(s)[:n-1]) + "…"
}

func fmtSources(f sgam.Fact) string {
	if len(f.Sources) == 0 {
		return "-"
	}
	return strings.Join(f.Sources, ",")
}

// printFact renders one fact in full.
func printFact(w io.Writer, f sgam.Fact) {
	fmt.Fprintf(w, "%s\n", fmtValue(f))
	fmt.Fprintf(w, "  key       %s.%s (tenant %s)\n", f.Subject, f.Attribute, f.Tenant)
	fmt.Fprintf(w, "  valid     %s → %s\n", fmtTime(f.ValidFrom), fmtEnd(f.ValidTo, "open"))
	fmt.Fprintf(w, "  believed  %s → %s\n", fmtTime(f.RecordedAt), fmtEnd(f.RetractedAt, "still"))
	fmt.Fprintf(w, "  sources   %s\n", fmtSources(f))
	if f.Supersedes != nil {
		fmt.Fprintf(w, "  fact      %d (supersedes %d)\n", f.ID, *f.Supersedes)
	} else {
		fmt.Fprintf(w, "  fact      %d\n", f.ID)
	}
}

// printFacts renders facts as a table.
func printFacts(w io.Writer, facts []sgam.Fact, withAttribute bool) {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	if withAttribute {
		fmt.Fprintln(tw, "ATTRIBUTE\tVALUE\tVALID FROM\tVALID TO\tSOURCES\tFACT")
	} else {
		fmt.Fprintln(tw, "FACT\tVALUE\tVALID FROM\tVALID TO\tRECORDED\tRETRACTED\tSOURCES\tSUPERSEDES")
	}
	for _, f := range facts {
		if withAttribute {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%d\n", f.Attribute, fmtValue(f), fmtTime(f.ValidFrom), fmtEnd(f.ValidTo, "open"), fmtSources(f), f.ID)
			continue
		}
		sup := "-"
		if f.Supersedes != nil {
			sup = fmt.Sprint(*f.Supersedes)
		}
		fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", f.ID, fmtValue(f), fmtTime(f.ValidFrom), fmtEnd(f.ValidTo, "open"),
			fmtTime(f.RecordedAt), fmtEnd(f.RetractedAt, "-"), fmtSources(f), sup)
	}
	tw.Flush()
}

func printEpisode(w io.Writer, e sgam.Episode, full bool) {
	fmt.Fprintf(w, "%s  %s  %s", e.ID, fmtTime(e.OccurredAt), e.Kind)
	if e.Session != "" {
		fmt.Fprintf(w, "  session %s", e.Session)
	}
	if full {
		fmt.Fprintf(w, "\n  recorded  %s\n", fmtTime(e.RecordedAt))
		if len(e.Metadata) > 0 {
			fmt.Fprintf(w, "  metadata  %s\n", e.Metadata)
		}
		if e.IdempotencyKey != "" {
			fmt.Fprintf(w, "  idempotency key  %s\n", e.IdempotencyKey)
		}
		fmt.Fprintf(w, "\n%s\n", e.Content)
		return
	}
	fmt.Fprintf(w, "  %q\n", truncate(e.Content, 70))
}

// printList prints items as JSON (--json), or as a table under header with
// one row of cells per item, or none when there are no items.
func printList[T any](a *app, items []T, none, header string, row func(T) []any) error {
	return a.show(items, func(w io.Writer) error {
		if len(items) == 0 {
			fmt.Fprintln(w, none)
			return nil
		}
		tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, header)
		for _, it := range items {
			for i, cell := range row(it) {
				if i > 0 {
					fmt.Fprint(tw, "\t")
				}
				fmt.Fprint(tw, cell)
			}
			fmt.Fprintln(tw)
		}
		return tw.Flush()
	})
}
