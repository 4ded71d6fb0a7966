package recall

import (
	"encoding/json"
	"fmt"
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
// left out.

const (
	maxQuoteBytes    = 200
	maxSnippetBytes  = 240
	maxQuestionShown = 300
)

// assemble renders the context within its budget and keeps, in out, the
// items it rendered.
func (g *gather) assemble(out *Context, current, past, related []Fact, hits []sgam.EpisodeHit) error {
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
		line    func() (full, short string, err error)
		keep    func(short bool)
		omit    func()
	}
	var items []item
	keepFact := func(to *[]Fact, f *Fact) func(bool) {
		return func(short bool) {
			if short {
				f.Quote = ""
			}
			*to = append(*to, *f)
		}
	}
	for _, f := range current {
		items = append(items, item{"Facts (the values at those instants):",
			func() (string, string, error) { return g.factLine(&f) },
			keepFact(&out.Facts, &f), func() { out.Omitted.Facts++ }})
	}
	if len(current) == 0 && len(out.Subjects) > 0 {
		what := strings.Join(out.Subjects, ", ")
		if len(out.Attributes) > 0 {
			what = strings.Join(out.Attributes, ", ") + " of " + what
		}
		items = append(items, item{"Facts (the values at those instants):",
			func() (string, string, error) { return "- none: no value of " + what + " at those instants", "", nil }, func(bool) {}, func() {}})
	}
	for _, f := range past {
		items = append(items, item{"Past values (superseded before as_of; not current):",
			func() (string, string, error) { return g.factLine(&f) },
			keepFact(&out.Facts, &f), func() { out.Omitted.Facts++ }})
	}
	for _, f := range related {
		items = append(items, item{"Related (through references):",
			func() (string, string, error) {
				full, short, err := g.factLine(&f)
				via := fmt.Sprintf(" | via fact %d", f.Via)
				return full + via, short + via, err
			},
			keepFact(&out.Related, &f), func() { out.Omitted.Related++ }})
	}
	for _, h := range hits {
		ev := Evidence{EpisodeID: h.Episode.ID, Session: h.Episode.Session, OccurredAt: h.Episode.OccurredAt, Score: h.Score, Snippet: words.Truncate(h.Snippet, maxSnippetBytes)}
		items = append(items, item{"Evidence (episodes, best match first):",
			func() (string, string, error) {
				session := ""
				if ev.Session != "" {
					session = " | session " + ev.Session
				}
				return fmt.Sprintf("- %s | %s%s | %s", ev.EpisodeID, stamp(ev.OccurredAt), session, ev.Snippet), "", nil
			},
			func(bool) { out.Evidence = append(out.Evidence, ev) }, func() { out.Omitted.Evidence++ }})
	}

	section, full := "", false
	for i, it := range items {
		if full {
			it.omit()
			continue
		}
		line, short, err := it.line()
		if err != nil {
			return err
		}
		var more []string
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
		b.add(omittedLine(out.Budget, out.Omitted))
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
	}{{o.Facts, "facts"}, {o.Related, "related facts"}, {o.Evidence, "evidence episodes"}} {
		if p.n > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", p.n, p.what))
		}
	}
	return fmt.Sprintf("Left out to keep within %d tokens: %s.", budget, strings.Join(parts, ", "))
}

// factLine renders a fact, reading the quote of its source into it, and
// the same line without the quote.
func (g *gather) factLine(f *Fact) (full, short string, err error) {
	q, err := g.quote(f.Fact)
	if err != nil {
		return "", "", err
	}
	f.Quote = q
	value := string(f.Value)
	if f.Tombstone {
		value = "(no value: retracted)"
	}
	to := "open"
	if f.ValidTo != nil {
		to = stamp(*f.ValidTo)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "- %s %s = %s | valid %s → %s | fact %d", f.Subject, f.Attribute, value, stamp(f.ValidFrom), to, f.ID)
	if f.Status == Past {
		b.WriteString(" | past")
	}
	if len(f.Sources) > 0 {
		fmt.Fprintf(&b, " | sources %s", strings.Join(f.Sources, ", "))
	}
	short = b.String()
	if q == "" {
		return short, "", nil
	}
	return fmt.Sprintf("%s | %q", short, q), short, nil
}

// quote is what the fact's source episode says for it: the evidence the
// extraction of that episode quoted for this fact, else the part of the
// episode's content that best matches the attribute and the value.
func (g *gather) quote(f sgam.Fact) (string, error) {
	if len(f.Sources) == 0 {
		return "", nil
	}
	src := f.Sources[0]
	recs, ok := g.records[src]
	if !ok {
		var err error
		recs, err = g.r.store.Extractions(g.ctx, g.q.Tenant, src)
		if err != nil && sgam.ErrorCode(err) != sgam.NotFound {
			return "", err
		}
		if g.records == nil {
			g.records = map[string][]sgam.Extraction{}
		}
		g.records[src] = recs
	}
	for i := len(recs) - 1; i >= 0; i-- {
		for _, a := range recs[i].Accepted {
			if a.Evidence != "" && (a.FactID == f.ID || a.Subject == f.Subject && a.Attribute == f.Attribute && sameJSON(a.Value, f.Value)) {
				return words.Truncate(words.OneLine(a.Evidence), maxQuoteBytes), nil
			}
		}
	}
	ep, ok := g.episodes[src]
	if !ok {
		var err error
		ep, err = g.r.store.Episode(g.ctx, g.q.Tenant, src)
		if sgam.ErrorCode(err) == sgam.NotFound {
			return "", nil
		}
		if err != nil {
			return "", err
		}
		g.episodes[src] = ep
	}
	var text string
	if json.Unmarshal(f.Value, &text) != nil {
		text = string(f.Value)
	}
	terms := words.Terms(strings.NewReplacer("_", " ", "-", " ").Replace(f.Attribute)+" "+text, words.MaxTerms)
	return words.Snippet(ep.Content, terms, maxQuoteBytes), nil
}

func sameJSON(a, b json.RawMessage) bool {
	if string(a) == string(b) {
		return true
	}
	var x, y any
	if json.Unmarshal(a, &x) != nil || json.Unmarshal(b, &y) != nil {
		return false
	}
	xj, _ := json.Marshal(x)
	yj, _ := json.Marshal(y)
	return string(xj) == string(yj)
}

func stamp(t time.Time) string { return t.UTC().Format(time.RFC3339Nano) }
