package eval

import (
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"
	"time"
)

// Summary is the outcome of a run of several scenarios: each one's
// report, their metrics summed, and the run's own thresholds (--min,
// --max) on the sum.
type Summary struct {
	Scenarios []*Report     `json:"scenarios"`
	Total     *Metrics      `json:"total"`
	Bounds    []Bound       `json:"thresholds"`
	Elapsed   time.Duration `json:"elapsed_ns"`
}

// Summarize sums the reports and checks t on the sum.
func Summarize(reports []*Report, t Thresholds, elapsed time.Duration) *Summary {
	total := newMetrics()
	for _, r := range reports {
		total.Add(r.Metrics)
	}
	total.Finish()
	return &Summary{Scenarios: reports, Total: total, Bounds: t.Check(total), Elapsed: elapsed}
}

// OK reports whether every threshold holds: each scenario's own and the
// run's.
func (s *Summary) OK() bool {
	for _, r := range s.Scenarios {
		if !r.OK() {
			return false
		}
	}
	for _, b := range s.Bounds {
		if !b.OK {
			return false
		}
	}
	return true
}

// Write renders the summary for people: one row of metrics a scenario
// and their total, then what went wrong, then the thresholds.
func (s *Summary) Write(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "scenario\tmode\textraction P / R / F1\trejected\twrite errors\tcheckpoints\tstale\tpoint-in-time\tleaks\tfacts\tevidence recall\tanswer in context\tcontext tokens p50 (always)\tforget\tcalls/ep\ttokens/ep\ttime")
	row := func(name, mode string, m *Metrics, elapsed time.Duration) {
		v := m.Values()
		x := m.Extraction
		fmt.Fprintf(tw, "%s\t%s\t%s / %s / %s\t%d\t%d\t%s\t%d\t%s\t%d\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", name, mode,
			ratioText(x.Precision), ratioText(x.Recall), ratioText(x.F1), int(v["rejected"]), m.WriteErrors,
			countText(m.Checkpoints), m.Stale, countText(m.PointInTime), m.Leaks, countText(m.Facts), evidenceText(m.Evidence),
			countText(m.Context.AnswerInContext), contextText(m.Context),
			countText(m.Forget), perEpisode(v, "calls_per_episode", "%.1f"), perEpisode(v, "tokens_per_episode", "%.0f"), elapsed.Round(time.Millisecond))
	}
	for _, r := range s.Scenarios {
		row(r.Name, r.Mode, r.Metrics, r.Elapsed)
	}
	if len(s.Scenarios) > 1 {
		row("total", "", s.Total, s.Elapsed)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintf(w, "\nrejected by reason: %s\n", rejectedText(s.Total.Rejected))
	if c := s.Total.Context; c.Answered > 0 {
		fmt.Fprintf(w, "contexts of the %d questions the facts answer (of %d): median %d tokens, %d with evidence always (%.2f)\n",
			c.Answered, c.Questions, c.AnsweredTokensP50, c.AnsweredAlwaysTokensP50, *c.AnsweredTokensRatio)
	}
	var stages []string
	for _, st := range []string{StageCapture, StageExtraction, StageSchema, StageCheck, StageRecall, StageForget} {
		if d, ok := s.Total.Time[st]; ok {
			stages = append(stages, fmt.Sprintf("%s %s", st, d.Round(time.Microsecond)))
		}
	}
	fmt.Fprintf(w, "time by stage: %s\n", strings.Join(stages, ", "))
	for _, r := range s.Scenarios {
		if len(r.Findings) == 0 {
			continue
		}
		fmt.Fprintf(w, "\n%s (%s):\n", r.Name, r.Path)
		for _, f := range limit(r.Findings, 50) {
			fmt.Fprintf(w, "  line %d, steps[%d], %s: %s\n", f.Line, f.Step, f.Stage, f.Message)
		}
		if len(r.Findings) > 50 {
			fmt.Fprintf(w, "  and %d more (--json lists them all)\n", len(r.Findings)-50)
		}
	}
	// A scenario's thresholds are listed when one fails; the run's own
	// (--min, --max) always.
	held, total := 0, 0
	var bounds []string
	for _, r := range s.Scenarios {
		for _, b := range r.Bounds {
			total++
			if b.OK {
				held++
			} else {
				bounds = append(bounds, r.Name+": "+b.String())
			}
		}
	}
	for _, b := range s.Bounds {
		bounds = append(bounds, "run: "+b.String())
	}
	if total > 0 {
		fmt.Fprintf(w, "\nthresholds of the scenarios: %d of %d hold\n", held, total)
	}
	for _, b := range bounds {
		fmt.Fprintln(w, "  "+b)
	}
	return nil
}

func limit[T any](xs []T, n int) []T { return xs[:min(n, len(xs))] }

func ratioText(r *float64) string {
	if r == nil {
		return "-"
	}
	return fmt.Sprintf("%.2f", *r)
}

func countText(c Count) string {
	if c.Passed+c.Failed == 0 {
		return "-"
	}
	return fmt.Sprintf("%d/%d", c.Passed, c.Passed+c.Failed)
}

func evidenceText(e EvidenceCount) string {
	if e.Questions == 0 {
		return "-"
	}
	return fmt.Sprintf("%.3f (%d/%d)", *e.Recall, e.Passed, e.Passed+e.Failed)
}

func contextText(c ContextCount) string {
	if c.Questions == 0 {
		return "-"
	}
	return fmt.Sprintf("%d (%d)", c.TokensP50, c.AlwaysTokensP50)
}

func perEpisode(v map[string]float64, name, format string) string {
	x, ok := v[name]
	if !ok {
		return "-"
	}
	return fmt.Sprintf(format, x)
}

// Failed lists the thresholds that failed, for an error message.
func (s *Summary) Failed() []string {
	var out []string
	for _, r := range s.Scenarios {
		for _, b := range r.Bounds {
			if !b.OK {
				out = append(out, r.Name+": "+b.String())
			}
		}
	}
	for _, b := range s.Bounds {
		if !b.OK {
			out = append(out, "run: "+b.String())
		}
	}
	return slices.Clip(out)
}
