package recall

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/sgam-dev/sgam"
	"github.com/sgam-dev/sgam/words"
)

// The rendered block, one line per item, in the order of what matters:
//
//	Question: When is Mira's passport deadline?
//	Read as of 2026-12-01T15:04:05Z (now), as believed at 2026-12-01T15:04:05Z (now).
//	Facts (the values at those instants):
//	- mira passport_deadline = "2026-06-30" | valid 2026-06-03T10:00:00Z → open | fact 7 | sources e2 | "the deadline is June 30, not July 15"
//	Past values (superseded before as_of; not current):
//	- ...
//	Related (through references):
//	- ... | via fact 7
//	Evidence (episodes, best match first):
//	- e2 | 2026-06-03T10:00:00Z | session s1 | Mira: correction, the deadline is June 30, not July 15.
//	Left out to keep within 300 tokens: 2 evidence episodes.
//
// Items are added in that order while they fit; a fact that does not fit
// is tried without its quote, and the first item that does not fit ends
// the block (what follows is less important); the last line says what was
// left out. Rendering reads nothing: gather has read every fact's quote.

const (
	maxSnippetBytes  = 240
	maxQuestionShown = 300
)

// answer is what recall found, ranked, in the order it is shown: the
// facts at the instants, the values superseded before them, the facts
// related through references, the evidence (best first, with its scores).
type answer struct {
	current, past, related []Fact
	evidence               []sgam.EpisodeHit
	// stale are the evidence episodes' statements that are no longer
	// current, by episode id (markStale).
	stale map[string][]Superseded
	// absent are the asked keys without a value, with what ended it.
	absent []absence
}

// render writes the context's facts, evidence and rendered block from a,
// within out's budget, after out's header (the question, the instants,
// the subjects and attributes): the items rendered, and the count of
// those left out.
func render(out *Context, a answer) error { return lay(out, a, false) }

// lay is render; shortest gives every item its shortest line at once (see
// reach).
func lay(out *Context, a answer, shortest bool) error {
	b := &block{}
	b.add("Question: " + words.Truncate(words.OneLine(out.Question), maxQuestionShown))
	b.add(words.OneLine(fmt.Sprintf("Read as of %s (%s), as believed at %s (%s).", stamp(out.AsOf), out.Instants.AsOf, stamp(out.KnownAt), out.Instants.KnownAt)))
	if used := b.used(); used > out.Budget {
		return sgam.Errorf(sgam.Invalid, "budget", "%d tokens do not hold even the question and its instants (%d tokens)", out.Budget, used)
	}
	// The omitted line, at its longest: kept free while more may follow.
	reserve := omittedReserve()

	// An item's line, and a shorter one to try when it does not fit (a
	// fact without its quote; "" when there is none); keep is told which
	// was rendered.
	type item struct {
		section string
		line    func() (full, short string)
		keep    func(short bool)
		omit    func()
	}
	items := make([]item, 0, len(a.current)+len(a.absent)+1+len(a.past)+len(a.related)+len(a.evidence))
	// The items point into a's facts, which reach's lay shares with
	// render's: what is kept is a copy.
	keepFact := func(to *[]Fact, f *Fact) func(bool) {
		return func(short bool) {
			kept := *f
			if short {
				kept.Quote = ""
			}
			*to = append(*to, kept)
		}
	}
	for i := range a.current {
		f := &a.current[i]
		items = append(items, item{"Facts (the values at those instants):",
			func() (string, string) { return factLine(*f) },
			keepFact(&out.Facts, f), func() { out.Omitted.Facts++ }})
	}
	for _, ab := range a.absent {
		items = append(items, item{"Facts (the values at those instants):",
			func() (string, string) { return noneLine(ab), "" },
			func(bool) {
				out.Absent = append(out.Absent, Absent{Subject: ab.subject, Attribute: ab.attribute, Ended: ab.end})
			},
			func() { out.Omitted.Facts++ }})
	}
	if len(a.current) == 0 && len(a.absent) == 0 && len(out.Subjects) > 0 {
		what := strings.Join(out.Subjects, ", ")
		if len(out.Attributes) > 0 {
			what = strings.Join(out.Attributes, ", ") + " of " + what
		}
		items = append(items, item{"Facts (the values at those instants):",
			func() (string, string) { return "- none: no value of " + what + " at those instants", "" }, func(bool) {}, func() {}})
	}
	for i := range a.past {
		f := &a.past[i]
		items = append(items, item{"Past values (superseded before as_of; not current):",
			func() (string, string) { return factLine(*f) },
			keepFact(&out.Facts, f), func() { out.Omitted.Facts++ }})
	}
	for i := range a.related {
		f := &a.related[i]
		items = append(items, item{"Related (through references):",
			func() (string, string) {
				full, short := factLine(*f)
				via := fmt.Sprintf(" | via fact %d", f.Via)
				return full + via, short + via
			},
			keepFact(&out.Related, f), func() { out.Omitted.Related++ }})
	}
	var terms []string // the question's, around which snippets are cut
	if len(a.evidence) > 0 {
		terms = words.Terms(out.Question, words.MaxTerms)
	}
	for _, h := range a.evidence {
		ev := Evidence{EpisodeID: h.Episode.ID, Session: h.Episode.Session, OccurredAt: h.Episode.OccurredAt, Score: h.Score,
			Snippet: words.Snippet(h.Episode.Content, terms, maxSnippetBytes), Superseded: a.stale[h.Episode.ID]}
		items = append(items, item{"Evidence (episodes, best match first):",
			func() (string, string) {
				// Appended, not formatted, as factLine.
				b := make([]byte, 0, 64+len(ev.EpisodeID)+len(ev.Session)+len(ev.Snippet))
				b = append(b, "- "...)
				b = append(b, ev.EpisodeID...)
				b = append(b, " | "...)
				b = appendStamp(b, ev.OccurredAt)
				if ev.Session != "" {
					b = append(b, " | session "...)
					b = append(b, ev.Session...)
				}
				b = append(b, " | "...)
				b = append(b, ev.Snippet...)
				for i, s := range ev.Superseded {
					if i == 0 {
						b = append(b, " (superseded: "...)
					} else {
						b = append(b, "; "...)
					}
					b = append(b, supersededText(s)...)
				}
				if len(ev.Superseded) > 0 {
					b = append(b, ')')
				}
				return string(b), ""
			},
			func(bool) { out.Evidence = append(out.Evidence, ev) }, func() { out.Omitted.Evidence++ }})
	}

	out.Facts = slices.Grow(out.Facts, len(a.current)+len(a.past))
	out.Related = slices.Grow(out.Related, len(a.related))
	out.Evidence = slices.Grow(out.Evidence, len(a.evidence))
	section, full := "", false
	for i, it := range items {
		if full {
			it.omit()
			continue
		}
		line, short := it.line()
		if shortest && short != "" {
			line, short = short, ""
		}
		var room [2]string // the section's heading and the line
		more := room[:0]
		if it.section != section {
			more = append(more, it.section)
		}
		more = append(more, line)
		free := out.Budget
		if i < len(items)-1 {
			free -= reserve
		}
		shortened := false
		if !b.fits(more, free) {
			if short == "" {
				full = true
				it.omit()
				continue
			}
			more[len(more)-1] = short
			if !b.fits(more, free) {
				full = true
				it.omit()
				continue
			}
			shortened = true
		}
		for _, l := range more {
			b.add(l)
		}
		section = it.section
		it.keep(shortened)
	}
	if out.Omitted != (Omitted{}) {
		// The items before the first left out kept the line's tokens
		// free; when none was shown, the header alone may leave too few.
		line := omittedLine(out.Budget, out.Omitted)
		if !b.fits([]string{line}, out.Budget) {
			return sgam.Errorf(sgam.Invalid, "budget", "%d tokens do not hold the question, its instants and the line that says what was left out (%d tokens)",
				out.Budget, b.used()+lineTokens(line))
		}
		b.add(line)
	}
	out.Rendered = strings.Join(b.lines, "\n") + "\n"
	out.Tokens = b.tokens
	return nil
}

// block is the rendered lines and their tokens (lineTokens: the sum of
// the lines' is the block's).
type block struct {
	lines  []string
	tokens int
}

func (b *block) add(line string) {
	b.lines = append(b.lines, line)
	b.tokens += lineTokens(line)
}

// used returns the block's tokens.
func (b *block) used() int { return b.tokens }

// fits reports whether more lines fit within free tokens after b's.
func (b *block) fits(more []string, free int) bool {
	n := b.tokens
	for _, l := range more {
		n += lineTokens(l)
	}
	return n <= free
}

// omittedReserve is the tokens of the longest omitted line (a budget of
// MaxBudget, 999 of each): what is kept free while more may follow.
var omittedReserve = sync.OnceValue(func() int {
	return Tokens(omittedLine(MaxBudget, Omitted{Facts: 999, Related: 999, Evidence: 999}) + "\n")
})

func omittedLine(budget int, o Omitted) string {
	var parts []string
	for _, p := range []struct {
		n    int
		what string
	}{{o.Facts, "fact"}, {o.Related, "related fact"}, {o.Evidence, "evidence episode"}} {
		switch {
		case p.n == 1:
			parts = append(parts, "1 "+p.what)
		case p.n > 1:
			parts = append(parts, fmt.Sprintf("%d %ss", p.n, p.what))
		}
	}
	return fmt.Sprintf("Left out to keep within %d tokens: %s.", budget, strings.Join(parts, ", "))
}

// factLine renders a fact with its quote, and the same line without the
// quote ("" when it has none).
func factLine(f Fact) (full, short string) {
	// Appended piece by piece, not formatted: a recall renders every fact
	// twice (reach and render), and fmt boxes each argument.
	b := make([]byte, 0, 128+len(f.Subject)+len(f.Attribute)+len(f.Value)+len(f.Quote))
	b = append(b, "- "...)
	b = append(b, f.Subject...)
	b = append(b, ' ')
	b = append(b, f.Attribute...)
	b = append(b, " = "...)
	if f.Tombstone {
		b = append(b, "(no value: retracted)"...)
	} else {
		b = append(b, f.Value...)
	}
	b = append(b, " | valid "...)
	b = appendStamp(b, f.ValidFrom)
	b = append(b, " → "...)
	if f.ValidTo != nil {
		b = appendStamp(b, *f.ValidTo)
	} else {
		b = append(b, "open"...)
	}
	b = append(b, " | fact "...)
	b = strconv.AppendInt(b, f.ID, 10)
	if f.Status == Past {
		b = append(b, " | past"...)
	}
	for i, src := range f.Sources {
		if i == 0 {
			b = append(b, " | sources "...)
		} else {
			b = append(b, ", "...)
		}
		b = append(b, src...)
	}
	short = string(b)
	if f.Quote == "" {
		return short, ""
	}
	b = append(b, " | "...)
	return string(strconv.AppendQuote(b, f.Quote)), short
}

// reach is how many of a's facts (current, past, then related, in that
// order) render could show after head's header: those that fit when each
// item takes its shortest line and no fact has its quote yet. A fact's
// line is never shorter with its quote (" |" starts a token of its own),
// so the facts render shows once the quotes are read are among these,
// and only their quotes need reading. The evidence comes after the facts:
// left out, it changes none of this.
func reach(head *Context, a answer) int {
	if len(a.current)+len(a.past)+len(a.related) == 0 {
		return 0
	}
	c := *head
	c.Facts, c.Absent, c.Related, c.Evidence, c.Omitted = nil, nil, nil, nil, Omitted{}
	a.evidence = nil
	if lay(&c, a, true) != nil {
		return 0 // not even the header fits: nothing is shown
	}
	return len(c.Facts) + len(c.Related)
}

// stamp is how a rendered line writes an instant.
func stamp(t time.Time) string { return string(appendStamp(nil, t)) }

// appendStamp appends stamp(t) to b.
func appendStamp(b []byte, t time.Time) []byte { return t.UTC().AppendFormat(b, time.RFC3339Nano) }
