package locomo

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"sort"
	"strconv"
	"text/tabwriter"
	"time"
)

// All selects the overall figures (categories 1-4) in Report's getters.
const All = 0

// Report accumulates per-question results into per-category figures.
// The zero value is ready to use; it is not safe for concurrent use.
type Report struct {
	cats map[int]*bucket
}

// bucket keeps sums rather than means so that Add stays O(1); durations are
// kept whole because percentiles need them.
type bucket struct {
	n                    int
	turnSum, sessSum     map[int]float64
	turnCount, sessCount map[int]int
	elapsed              []time.Duration
}

// Add records one question. turnRecall and sessionRecall map k to the recall
// at k; a k may be missing from some questions and is then averaged over the
// questions that have it. Category 5 is for callers to skip; if added, it is
// kept under its own category but never counted in All.
func (r *Report) Add(category int, turnRecall, sessionRecall map[int]float64, elapsed time.Duration) {
	if r.cats == nil {
		r.cats = map[int]*bucket{}
	}
	b := r.cats[category]
	if b == nil {
		b = &bucket{turnSum: map[int]float64{}, sessSum: map[int]float64{}, turnCount: map[int]int{}, sessCount: map[int]int{}}
		r.cats[category] = b
	}
	b.n++
	for k, v := range turnRecall {
		b.turnSum[k] += v
		b.turnCount[k]++
	}
	for k, v := range sessionRecall {
		b.sessSum[k] += v
		b.sessCount[k]++
	}
	b.elapsed = append(b.elapsed, elapsed)
}

// Summary is the figures of one category, or of All; its JSON is the
// --json output format.
type Summary struct {
	Category      int             `json:"category"` // 0 for all
	Name          string          `json:"name"`
	N             int             `json:"n"`
	TurnRecall    map[int]float64 `json:"turn_recall"`    // k -> mean recall
	SessionRecall map[int]float64 `json:"session_recall"` // k -> mean recall
	MeanMS        float64         `json:"mean_ms"`
	P50MS         float64         `json:"p50_ms"`
	P99MS         float64         `json:"p99_ms"`
}

// Summary returns the figures of a category, or of categories 1-4 for All.
func (r *Report) Summary(category int) Summary {
	var parts []*bucket
	name := CategoryName(category)
	if category == All {
		name = "all"
		for c := 1; c <= 4; c++ {
			parts = append(parts, r.cats[c])
		}
	} else {
		parts = append(parts, r.cats[category])
	}
	s := Summary{Category: category, Name: name, TurnRecall: map[int]float64{}, SessionRecall: map[int]float64{}}
	turnSum, sessSum := map[int]float64{}, map[int]float64{}
	turnCount, sessCount := map[int]int{}, map[int]int{}
	var elapsed []time.Duration
	for _, b := range parts {
		if b == nil {
			continue
		}
		s.N += b.n
		for k, v := range b.turnSum {
			turnSum[k] += v
			turnCount[k] += b.turnCount[k]
		}
		for k, v := range b.sessSum {
			sessSum[k] += v
			sessCount[k] += b.sessCount[k]
		}
		elapsed = append(elapsed, b.elapsed...)
	}
	for k, v := range turnSum {
		s.TurnRecall[k] = v / float64(turnCount[k])
	}
	for k, v := range sessSum {
		s.SessionRecall[k] = v / float64(sessCount[k])
	}
	if len(elapsed) > 0 {
		sort.Slice(elapsed, func(i, j int) bool { return elapsed[i] < elapsed[j] })
		var total time.Duration
		for _, d := range elapsed {
			total += d
		}
		s.MeanMS = ms(total / time.Duration(len(elapsed)))
		s.P50MS = ms(percentile(elapsed, 50))
		s.P99MS = ms(percentile(elapsed, 99))
	}
	return s
}

// percentile uses the nearest-rank method on sorted durations: the smallest
// value with at least p% of the values at or below it. No interpolation, so
// every figure reported is a time actually measured.
func percentile(sorted []time.Duration, p float64) time.Duration {
	i := int(math.Ceil(float64(len(sorted))*p/100)) - 1
	return sorted[max(0, min(i, len(sorted)-1))]
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// N returns the number of questions of a category (or All).
func (r *Report) N(category int) int { return r.Summary(category).N }

// TurnRecall returns the mean turn recall at k of a category (or All).
func (r *Report) TurnRecall(category, k int) float64 { return r.Summary(category).TurnRecall[k] }

// SessionRecall returns the mean session recall at k of a category (or All).
func (r *Report) SessionRecall(category, k int) float64 {
	return r.Summary(category).SessionRecall[k]
}

// Summaries returns categories 1-4 then All, the rows of Write.
func (r *Report) Summaries() []Summary {
	out := make([]Summary, 0, 5)
	for _, c := range []int{1, 2, 3, 4, All} {
		out = append(out, r.Summary(c))
	}
	return out
}

// MarshalJSON writes {"categories": [1..4], "all": {...}}. Maps with int
// keys encode sorted, so the output is stable.
func (r *Report) MarshalJSON() ([]byte, error) {
	rows := r.Summaries()
	return json.Marshal(struct {
		Categories []Summary `json:"categories"`
		All        Summary   `json:"all"`
	}{rows[:4], rows[4]})
}

// Write prints the table: a row per category 1-4 and "all".
func (r *Report) Write(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "category\tn\tturn R@5\tR@10\tR@25\tsession R@1\tR@3\tp50 ms\t")
	for _, s := range r.Summaries() {
		label := s.Name
		if s.Category != All {
			label = fmt.Sprintf("%d %s", s.Category, s.Name)
		}
		p50 := "-" // no questions: no time, rather than a misleading 0
		if s.N > 0 {
			p50 = strconv.FormatFloat(s.P50MS, 'f', 1, 64)
		}
		fmt.Fprintf(tw, "%s\t%d\t%s\t%s\t%s\t%s\t%s\t%s\t\n", label, s.N,
			cell(s.TurnRecall, 5), cell(s.TurnRecall, 10), cell(s.TurnRecall, 25),
			cell(s.SessionRecall, 1), cell(s.SessionRecall, 3), p50)
	}
	return tw.Flush()
}

// cell prints "-" for a k nobody measured, so it is not mistaken for 0.
func cell(m map[int]float64, k int) string {
	v, ok := m[k]
	if !ok {
		return "-"
	}
	return strconv.FormatFloat(v, 'f', 3, 64)
}

// WriteComparison prints two runs of the same questions side by side
// (lexical against fused, say): for all conversations and each half, a
// row per run with the figures of categories 1-4 together.
func WriteComparison(w io.Writer, a, b *Results) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "conversations\tsearch\tn\tturn R@5\tR@10\tR@25\tsession R@1\tR@3\tmean ms\tp50 ms\t")
	for _, part := range []struct {
		name string
		get  func(*Results) *Report
	}{{"all", func(r *Results) *Report { return r.All }}, {"1-5 (tuned on)", func(r *Results) *Report { return r.Tuned }},
		{"6-10 (unseen)", func(r *Results) *Report { return r.Unseen }}} {
		for i, r := range []*Results{a, b} {
			name := part.name
			if i > 0 {
				name = ""
			}
			s := part.get(r).Summary(All)
			mean, p50 := "-", "-"
			if s.N > 0 {
				mean, p50 = strconv.FormatFloat(s.MeanMS, 'f', 1, 64), strconv.FormatFloat(s.P50MS, 'f', 1, 64)
			}
			fmt.Fprintf(tw, "%s\t%s\t%d\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t\n", name, r.Search, s.N,
				cell(s.TurnRecall, 5), cell(s.TurnRecall, 10), cell(s.TurnRecall, 25),
				cell(s.SessionRecall, 1), cell(s.SessionRecall, 3), mean, p50)
		}
	}
	return tw.Flush()
}
