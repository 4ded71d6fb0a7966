package eval

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"sort"
	"strings"
	"time"
)

// Metrics are a run's figures by stage. Counts sum across scenarios; the
// ratios are computed from the sums (Finish).
type Metrics struct {
	// Extraction scores what the model proposed (accepted or rejected by
	// validation; a no_change only when it corroborates a stored row)
	// against the gold candidates of the episodes that have gold; an
	// extraction that failed proposed nothing, and misses its gold.
	Extraction struct {
		Gold      int      `json:"gold"`
		Proposed  int      `json:"proposed"`
		Matched   int      `json:"matched"`
		Precision *float64 `json:"precision"`
		Recall    *float64 `json:"recall"`
		F1        *float64 `json:"f1"`
	} `json:"extraction"`
	// Rejected counts the candidates validation refused, by reason.
	Rejected map[string]int `json:"rejected"`
	// WriteErrors counts write steps that failed: an extraction with no
	// usable answer, an episode, schema, migration, confirmation or
	// forget that the store refused.
	WriteErrors int `json:"write_errors"`
	// Checkpoints counts the expectations of check steps (one per value,
	// pending list and episode's rejections).
	Checkpoints Count `json:"checkpoints"`
	// Stale counts facts recall presented as current that the ledger does
	// not hold as current at the context's instants. Must be 0.
	Stale int `json:"stale"`
	// PointInTime counts the expectations at a past instant: checkpoint
	// values at an explicit as_of or known_at, the instants recall read
	// at, and the past facts questions expect.
	PointInTime Count `json:"point_in_time"`
	// Leaks counts what a context held from another tenant: a fact or an
	// episode that is not the asker's, or a text a question marks absent.
	// Must be 0.
	Leaks int `json:"leaks"`
	// Facts counts the facts questions expect in recall's context;
	// Evidence the episodes they expect cited among the first k, and its
	// Recall is the mean over the questions of the fraction cited (as
	// LoCoMo's recall@k is), not the ratio of the episode counts.
	Facts    Count         `json:"facts"`
	Evidence EvidenceCount `json:"evidence"`
	// Context is what the questions' rendered contexts held and cost.
	Context ContextCount `json:"context"`
	// Forget counts the checks of forget steps: what must be gone is.
	Forget Count `json:"forget"`
	// Episodes extracted, the model calls they took (retries included;
	// none for an answer taken from an identical earlier prompt) and the
	// tokens they cost (as recorded, in a replay).
	Extracted int `json:"extracted"`
	Calls     int `json:"calls"`
	TokensIn  int `json:"tokens_in"`
	TokensOut int `json:"tokens_out"`
	// Time is the wall time of each stage: capture, extract, check,
	// recall, forget, schema.
	Time map[string]time.Duration `json:"time_ns"`
}

// Count is a number of expectations and how many held.
type Count struct {
	Passed int      `json:"passed"`
	Failed int      `json:"failed"`
	Ratio  *float64 `json:"ratio"` // passed / (passed+failed); null with none
}

// EvidenceCount counts the expected evidence episodes cited and missed,
// and the questions that expect some.
type EvidenceCount struct {
	Count
	Questions int      `json:"questions"`
	sum       float64  // of each question's fraction cited
	Recall    *float64 `json:"recall"`
}

// ContextCount is what the rendered contexts of the questions held and
// what they cost in tokens (recall.Tokens). Each question is asked a
// second time with evidence "always" (the quota recall had before
// "auto"), so the two are measured in one run.
type ContextCount struct {
	// AnswerInContext counts the expected values (facts that name a value)
	// that the rendered text holds (words.Holds).
	AnswerInContext Count `json:"answer_in_context"`
	// Questions is how many were asked; Answered how many of them the
	// facts answer (they expect facts, and the context presents them all).
	Questions int `json:"questions"`
	Answered  int `json:"answered"`
	// The median tokens of the contexts, as asked and with evidence
	// always: of every question, and of those the facts answer.
	TokensP50               int `json:"tokens_p50"`
	AlwaysTokensP50         int `json:"always_tokens_p50"`
	AnsweredTokensP50       int `json:"answered_tokens_p50"`
	AnsweredAlwaysTokensP50 int `json:"answered_always_tokens_p50"`
	// AnsweredTokensRatio is AnsweredTokensP50 / AnsweredAlwaysTokensP50.
	AnsweredTokensRatio *float64 `json:"answered_tokens_ratio"`

	tokens, always, answeredTokens, answeredAlways []int
}

// question adds a question's context tokens, as asked and with evidence
// always, and whether the facts answer it.
func (c *ContextCount) question(tokens, always int, answered bool) {
	c.Questions++
	c.tokens, c.always = append(c.tokens, tokens), append(c.always, always)
	if answered {
		c.Answered++
		c.answeredTokens, c.answeredAlways = append(c.answeredTokens, tokens), append(c.answeredAlways, always)
	}
}

func (c *ContextCount) sum(o ContextCount) {
	c.AnswerInContext.sum(o.AnswerInContext)
	c.Questions += o.Questions
	c.Answered += o.Answered
	c.tokens, c.always = append(c.tokens, o.tokens...), append(c.always, o.always...)
	c.answeredTokens, c.answeredAlways = append(c.answeredTokens, o.answeredTokens...), append(c.answeredAlways, o.answeredAlways...)
}

func (c *ContextCount) finish() {
	c.AnswerInContext.finish()
	c.TokensP50, c.AlwaysTokensP50 = median(c.tokens), median(c.always)
	c.AnsweredTokensP50, c.AnsweredAlwaysTokensP50 = median(c.answeredTokens), median(c.answeredAlways)
	c.AnsweredTokensRatio = nil
	if c.AnsweredAlwaysTokensP50 > 0 {
		r := float64(c.AnsweredTokensP50) / float64(c.AnsweredAlwaysTokensP50)
		c.AnsweredTokensRatio = &r
	}
}

// median is the lower median of xs, 0 for none.
func median(xs []int) int {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Sorted(slices.Values(xs))
	return s[(len(s)-1)/2]
}

// question adds a question that expects want episodes, found of them cited.
func (e *EvidenceCount) question(found, want int) {
	e.Questions++
	e.sum += float64(found) / float64(want)
}

func (c *Count) add(ok bool) {
	if ok {
		c.Passed++
	} else {
		c.Failed++
	}
}

func (c *Count) sum(o Count) { c.Passed += o.Passed; c.Failed += o.Failed }

func (c *Count) finish() { c.Ratio = ratio(c.Passed, c.Passed+c.Failed) }

func ratio(n, d int) *float64 {
	if d == 0 {
		return nil
	}
	r := float64(n) / float64(d)
	return &r
}

func newMetrics() *Metrics {
	return &Metrics{Rejected: map[string]int{}, Time: map[string]time.Duration{}}
}

// Add sums o into m.
func (m *Metrics) Add(o *Metrics) {
	m.Extraction.Gold += o.Extraction.Gold
	m.Extraction.Proposed += o.Extraction.Proposed
	m.Extraction.Matched += o.Extraction.Matched
	for k, v := range o.Rejected {
		m.Rejected[k] += v
	}
	m.WriteErrors += o.WriteErrors
	m.Checkpoints.sum(o.Checkpoints)
	m.Stale += o.Stale
	m.PointInTime.sum(o.PointInTime)
	m.Leaks += o.Leaks
	m.Facts.sum(o.Facts)
	m.Evidence.Count.sum(o.Evidence.Count)
	m.Evidence.Questions += o.Evidence.Questions
	m.Evidence.sum += o.Evidence.sum
	m.Context.sum(o.Context)
	m.Forget.sum(o.Forget)
	m.Extracted += o.Extracted
	m.Calls += o.Calls
	m.TokensIn += o.TokensIn
	m.TokensOut += o.TokensOut
	for k, v := range o.Time {
		m.Time[k] += v
	}
}

// Finish computes the ratios from the counts.
func (m *Metrics) Finish() {
	x := &m.Extraction
	x.Precision, x.Recall, x.F1 = ratio(x.Matched, x.Proposed), ratio(x.Matched, x.Gold), nil
	if x.Precision != nil && x.Recall != nil {
		f := 0.0
		if *x.Precision+*x.Recall > 0 {
			f = 2 * *x.Precision * *x.Recall / (*x.Precision + *x.Recall)
		}
		x.F1 = &f
	}
	for _, c := range []*Count{&m.Checkpoints, &m.PointInTime, &m.Facts, &m.Evidence.Count, &m.Forget} {
		c.finish()
	}
	if m.Evidence.Questions > 0 {
		r := m.Evidence.sum / float64(m.Evidence.Questions)
		m.Evidence.Recall = &r
	}
	m.Context.finish()
}

// metricNames are the names thresholds bound, besides rejected.REASON.
var metricNames = []string{
	"extraction.precision", "extraction.recall", "extraction.f1", "extraction.proposed", "extraction.matched",
	"rejected", "write_errors", "checkpoints.passed", "checkpoints.failed", "checkpoints.ratio",
	"stale", "point_in_time", "point_in_time.failed", "leaks", "facts.recall", "facts.failed",
	"evidence.recall", "evidence.failed", "answer_in_context", "context.answered_tokens_ratio", "forget.failed",
	"calls_per_episode", "tokens_per_episode",
}

// MetricNames lists the metrics a threshold may bound; rejected.REASON
// (rejected.ungrounded, ...) bounds one reason's count.
func MetricNames() []string { return slices.Clone(metricNames) }

// Values returns every metric by name; a ratio with no data is missing.
// Finish must have run.
func (m *Metrics) Values() map[string]float64 {
	v := map[string]float64{}
	put := func(name string, r *float64) {
		if r != nil {
			v[name] = *r
		}
	}
	put("extraction.precision", m.Extraction.Precision)
	put("extraction.recall", m.Extraction.Recall)
	put("extraction.f1", m.Extraction.F1)
	v["extraction.proposed"] = float64(m.Extraction.Proposed)
	v["extraction.matched"] = float64(m.Extraction.Matched)
	total := 0
	for _, r := range reasons {
		v["rejected."+r] = float64(m.Rejected[r])
		total += m.Rejected[r]
	}
	v["rejected"] = float64(total)
	v["write_errors"] = float64(m.WriteErrors)
	v["checkpoints.passed"] = float64(m.Checkpoints.Passed)
	v["checkpoints.failed"] = float64(m.Checkpoints.Failed)
	put("checkpoints.ratio", m.Checkpoints.Ratio)
	v["stale"] = float64(m.Stale)
	put("point_in_time", m.PointInTime.Ratio)
	v["point_in_time.failed"] = float64(m.PointInTime.Failed)
	v["leaks"] = float64(m.Leaks)
	put("facts.recall", m.Facts.Ratio)
	v["facts.failed"] = float64(m.Facts.Failed)
	put("evidence.recall", m.Evidence.Recall)
	v["evidence.failed"] = float64(m.Evidence.Failed)
	put("answer_in_context", m.Context.AnswerInContext.Ratio)
	put("context.answered_tokens_ratio", m.Context.AnsweredTokensRatio)
	v["forget.failed"] = float64(m.Forget.Failed)
	if m.Extracted > 0 {
		v["calls_per_episode"] = float64(m.Calls) / float64(m.Extracted)
		v["tokens_per_episode"] = float64(m.TokensIn+m.TokensOut) / float64(m.Extracted)
	}
	return v
}

// Bound is one threshold and how the run met it.
type Bound struct {
	Metric string   `json:"metric"`
	Kind   string   `json:"kind"` // min or max
	Limit  float64  `json:"limit"`
	Value  *float64 `json:"value"` // null: the run has no data for it
	OK     bool     `json:"ok"`
}

func (b Bound) String() string {
	op := "≥"
	if b.Kind == "max" {
		op = "≤"
	}
	got := "no data"
	if b.Value != nil {
		got = formatFloat(*b.Value)
	}
	verdict := "ok"
	if !b.OK {
		verdict = "FAILED"
	}
	return fmt.Sprintf("%s %s %s: %s, %s", b.Metric, op, formatFloat(b.Limit), got, verdict)
}

// Check measures m against t, in name order; a metric without data fails
// its bound.
func (t Thresholds) Check(m *Metrics) []Bound {
	vals := m.Values()
	var out []Bound
	for _, kind := range []string{"min", "max"} {
		bounds := t.Min
		if kind == "max" {
			bounds = t.Max
		}
		for _, name := range slices.Sorted(maps.Keys(bounds)) {
			limit := bounds[name]
			b := Bound{Metric: name, Kind: kind, Limit: limit}
			if v, ok := vals[name]; ok {
				b.Value = &v
				const eps = 1e-9
				b.OK = (kind == "min" && v >= limit-eps) || (kind == "max" && v <= limit+eps)
			}
			out = append(out, b)
		}
	}
	return out
}

// ParseBounds reads NAME=VALUE thresholds (--min, --max) into t.
func ParseBounds(kind string, args []string, into map[string]float64) error {
	for _, a := range args {
		name, val, ok := strings.Cut(a, "=")
		if !ok {
			return fmt.Errorf("--%s %q: write METRIC=VALUE, for example extraction.f1=0.9", kind, a)
		}
		if !knownMetric(name) {
			return fmt.Errorf("--%s %q: %q is not a metric; the metrics are %s and rejected.REASON", kind, a, name, strings.Join(metricNames, ", "))
		}
		var f float64
		if _, err := fmt.Sscan(val, &f); err != nil || math.IsNaN(f) || math.IsInf(f, 0) {
			return fmt.Errorf("--%s %q: %q is not a number", kind, a, val)
		}
		into[name] = f
	}
	return nil
}

func formatFloat(f float64) string {
	if f == math.Trunc(f) && math.Abs(f) < 1e15 {
		return fmt.Sprintf("%.0f", f)
	}
	return fmt.Sprintf("%.3f", f)
}

// rejectedText lists the rejections by reason: "ungrounded 1, invalid_value 2".
func rejectedText(r map[string]int) string {
	var parts []string
	keys := slices.Collect(maps.Keys(r))
	sort.Strings(keys)
	for _, k := range keys {
		if r[k] > 0 {
			parts = append(parts, fmt.Sprintf("%s %d", k, r[k]))
		}
	}
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, ", ")
}
