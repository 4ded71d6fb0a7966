package when

import (
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"
)

// Found is what a question says about time.
type Found struct {
	AsOf       time.Time // zero: the question names no instant of valid time
	AsOfWhy    string    // the phrase as written in the question, e.g. "on June 2, 2026"; "" when AsOf is zero
	KnownAt    time.Time // zero: none
	KnownAtWhy string
	// BeforeMigration: the question says "before the migration" (or "before the schema change"); the caller resolves it to an instant (known_at just before the tenant's latest schema change). KnownAtWhy holds the phrase.
	BeforeMigration bool
	// Period is the period the valid time phrase names, from its first
	// microsecond to AsOf ("in May 2023" is all of May 2023, "on June 2,
	// 2026" that day), when it names one: zero for an instant, for
	// "before X", and when AsOf is zero.
	Period Period
	// Around is the period of a phrase that gives no instant but says
	// where to look: a range with both ends ("between August 11 and
	// August 15, 2023", "from May to July 2025"), a part of a month or a
	// year that does not end with it ("early June", "the second week of
	// November"; "the end of 2025" ends with its year, so it gives AsOf
	// and Period), a span shifted from a day ("the week before June 3",
	// "two days after May 1"), a season of a year ("summer 2021") or
	// "around X". Its ends are a reading, not a certainty, so valid time
	// never comes from it; recall looks for evidence in it. Zero when
	// the question names none, and when Period is set.
	Around Period
	// Past: the question asks about the past or about history ("was", "were", "used to", "previously", "before", "history", "changed", "originally", "formerly", "at first", "earlier", "did ... have") or names a past instant; then superseded values may be shown (marked as past).
	Past bool
}

const micro = time.Microsecond

// Period is a span of time, both ends included.
type Period struct{ Start, End time.Time }

// IsZero reports whether p is no period.
func (p Period) IsZero() bool { return p.End.IsZero() }

// Holds reports whether t is within p.
func (p Period) Holds(t time.Time) bool {
	return !p.IsZero() && !t.Before(p.Start) && !t.After(p.End)
}

// Parse reads q relative to now (interpreted in now's location; callers pass UTC). It never fails: a phrase it cannot read with certainty is ignored, never guessed into a wrong date.
func Parse(q string, now time.Time) Found {
	now = now.Truncate(micro) // the stores' precision; also drops the monotonic reading
	p := parser{q: q, t: tokenize(q), now: now, loc: now.Location()}
	var f Found
	// Left to right, each token may start a migration phrase, a transaction
	// time lead with its time phrase, or a valid time phrase, in that order
	// (so "as we believed on June 4" is not read as "on June 4"). What a
	// phrase consumed is not read again, and the first phrase of an axis wins.
	for i := 0; i < len(p.t); {
		if n := p.migration(i); n > 0 {
			if f.KnownAtWhy == "" {
				f.BeforeMigration, f.KnownAtWhy = true, p.why(i, i+n)
			}
			i += n
			continue
		}
		if n := p.lead(i); n > 0 {
			if r, next := p.timeAt(i + n); next > i+n {
				if r.ok && f.KnownAtWhy == "" {
					f.KnownAt, f.KnownAtWhy = r.at, p.why(i, next)
				}
				i = next
				continue
			}
		}
		if r, next := p.timeAt(i); next > i {
			if r.ok && f.AsOfWhy == "" {
				f.AsOf, f.AsOfWhy = r.at, p.why(i, next)
				if r.from.Before(r.at) {
					f.Period = Period{r.from, r.at}
				}
			}
			if !r.ok && f.AsOfWhy == "" && f.Around.IsZero() && r.around.Start.Before(r.around.End) {
				f.Around = r.around
			}
			i = next
			continue
		}
		i++
	}
	if !f.Period.IsZero() {
		f.Around = Period{}
	}
	f.Past = p.historical() || !f.AsOf.IsZero() && f.AsOf.Before(now) ||
		!f.KnownAt.IsZero() || f.BeforeMigration
	return f
}

// A token is a word of the question with the punctuation around it split
// off, so that "2nd," reads as "2nd" followed by a comma and a phrase can
// refuse to run across a full stop ("on June 2? 2025 was...").
type token struct {
	text        string // as written: q[start:end]
	low         string // lower case
	start, end  int
	lead, trail string // punctuation before and after (trail also holds a possessive "'s")
}

// tokenize splits q at white space and commas.
func tokenize(q string) []token {
	var toks []token
	for i := 0; i < len(q); {
		if r, w := utf8.DecodeRuneInString(q[i:]); unicode.IsSpace(r) {
			i += w
			continue
		}
		j := len(q)
		if k := strings.IndexFunc(q[i:], func(r rune) bool { return unicode.IsSpace(r) || r == ',' }); k >= 0 {
			j = i + k
		}
		if j < len(q) && q[j] == ',' {
			j++
		}
		if j-i > len("mid-") && strings.EqualFold(q[i:i+len("mid-")], "mid-") {
			// "mid-June" is "mid" and "June", as "mid June" is.
			toks = append(toks, trim(q, i, i+len("mid-")))
			i += len("mid-")
		}
		toks = append(toks, trim(q, i, j))
		i = j
	}
	return toks
}

func trim(q string, i, j int) token {
	s := j - len(strings.TrimLeftFunc(q[i:j], unicode.IsPunct))
	e := s + len(strings.TrimRightFunc(q[s:j], unicode.IsPunct))
	for _, poss := range []string{"'s", "'S", "’s", "’S"} { // "yesterday's", "May's"
		if e-s > len(poss) && strings.HasSuffix(q[s:e], poss) {
			e -= len(poss)
			break
		}
	}
	return token{text: q[s:e], low: strings.ToLower(q[s:e]), start: s, end: e, lead: q[i:s], trail: q[e:j]}
}

type parser struct {
	q   string
	t   []token
	now time.Time
	loc *time.Location
}

func (p *parser) why(i, next int) string { return p.q[p.t[i].start:p.t[next-1].end] }

// joined reports whether token i+1 follows token i with nothing but the
// characters in allow between them.
func (p *parser) joined(i int, allow string) bool {
	return i >= 0 && i+1 < len(p.t) && strings.Trim(p.t[i].trail, allow) == "" && p.t[i+1].lead == ""
}

// words reports how many tokens the words ws take at i (0: they are not there).
func (p *parser) words(i int, ws ...string) int {
	for k, w := range ws {
		if i+k >= len(p.t) || p.t[i+k].low != w || k > 0 && !p.joined(i+k-1, "") {
			return 0
		}
	}
	return len(ws)
}

// is reports whether token j continues the phrase before it as one of ws.
func (p *parser) is(j int, ws ...string) bool {
	return p.joined(j-1, "") && slices.Contains(ws, p.t[j].low)
}

// migration reads "before the [latest] [schema] migration" or "before the
// schema change" at i. A bare "before the change" is left alone: it may be
// any change of the value asked about.
func (p *parser) migration(i int) int {
	j := i + max(p.words(i, "before"), p.words(i, "prior", "to"))
	if j == i || !p.is(j, "the", "our") {
		return 0
	}
	j++
	if p.is(j, "latest", "last") {
		j++
	}
	schema := p.is(j, "schema")
	if schema {
		j++
	}
	if p.is(j, "migration") || schema && p.is(j, "change") {
		return j + 1 - i
	}
	return 0
}

// leads put the time phrase right after them on the transaction time
// axis; a longer lead comes before any lead it starts with.
var leads = phrases("according to what we knew", "according to what we believed", "as we knew it",
	"as we knew", "as we believed", "as believed", "as known", "as recorded", "what did we think",
	"what did we believe", "what did we know", "what we knew", "what we believed")

func (p *parser) lead(i int) int {
	for _, l := range leads {
		if n := p.words(i, l...); n > 0 && p.joined(i+n-1, "") {
			return n
		}
	}
	return 0
}

// how a prefix turns a period into an instant.
type how int

const (
	atEnd      how = iota // the last microsecond of the period
	inPeriod              // atEnd, for a month, a year or a relative period but no day
	justBefore            // the microsecond before it starts
	ignored               // a range or an approximation: consumed, never read
)

// prefixes, a longer one before any it starts with.
var prefixes = []struct {
	how   how
	words [][]string
}{
	{atEnd, phrases("on or before", "as of", "on", "at")},
	{inPeriod, phrases("in", "during")},
	{justBefore, phrases("prior to", "before")},
}

// rangeWords open a phrase that names no single instant.
var rangeWords = set("after", "since", "until", "till", "til", "from", "between", "through", "thru",
	"to", "by", "following", "within", "past", "beyond", "around", "circa", "approximately", "roughly", "near")

// approximate are the range words that name the period after them.
var approximate = set("around", "circa", "approximately", "roughly")

// units before "before" shift the day: "two days before June 3".
var units = set("day", "days", "week", "weeks", "month", "months", "year", "years", "hour", "hours", "minute", "minutes")

// reading is what a time phrase gives.
type reading struct {
	// ok: the phrase gives the instant at; from is the first instant of
	// the period it names, when at is its end (from == at for an instant
	// or "before X").
	at, from time.Time
	ok       bool
	// around, when not ok, is the period a range or an approximation
	// names, if it names one (Found.Around).
	around Period
}

// timeAt reads an optional prefix and a time expression at i. next > i
// when it consumed tokens. A prefixed expression is consumed even when it
// gives no instant, so that its tail is not read again without the prefix
// ("until June 3, 2026" must not become "June 3, 2026").
func (p *parser) timeAt(i int) (r reading, next int) {
	h, j := atEnd, i
	for _, pf := range prefixes {
		for _, ws := range pf.words {
			if n := p.words(i, ws...); n > 0 && j == i && p.joined(i+n-1, "") {
				h, j = pf.how, i+n
			}
		}
	}
	if j == i && rangeWords[p.t[i].low] && p.joined(i, "") {
		h, j = ignored, i+1
	}
	if e, ends, ok := p.part(j); ok {
		if e.loose && !p.free(e.next) && !(h == ignored && p.connects(e.next)) {
			return reading{}, i
		}
		switch {
		case h == ignored:
			return p.ranged(i, e)
		case j > i+1 || j > i && !partPrefixes[p.t[i].low]:
			// "before the end of 2025", "on or before early June", "as of
			// mid-May": open, or an instant inside the part, unwritten.
			return reading{}, e.next
		case ends:
			// "at the end of last year", "in late May 2023": the part ends
			// with its period, whose last microsecond is as certain as
			// that of "in May 2023".
			return reading{at: p.cut(e), from: e.start, ok: true}, e.next
		}
		return reading{around: e.period()}, e.next
	}
	e, found := p.expr(j)
	if !found {
		return reading{}, i
	}
	// A bare lower-case word that needs a prefix is most likely no date at
	// all ("where I sat yesterday"), so it does not spoil the next phrase.
	if end := p.follows(e.next); end > 0 && (j > i || !e.needsPrefix || !unicode.IsLower(rune(p.t[i].text[0]))) {
		return reading{}, end
	}
	// "In March 5 people left": "in" takes no day, so the 5 is a count.
	if j == i && e.needsPrefix || e.loose && !p.free(e.next) && !(h == ignored && p.connects(e.next)) || h == inPeriod && e.day {
		return reading{}, i
	}
	next = e.next
	if !e.void && (h == justBefore || h == ignored && p.t[i].low == "after") && i > 0 && units[p.t[i-1].low] && p.joined(i-1, "") {
		// "two days before June 3": a day read by counting, not written.
		return reading{around: p.shifted(i, e.span)}, next
	}
	if h == ignored || e.void {
		return p.ranged(i, e)
	}
	at, from := p.cut(e), e.start
	if h == justBefore {
		at = e.start.Add(-micro)
		from = at
	}
	if y := at.Year(); y < 1 || y > 9999 {
		return reading{}, next
	}
	return reading{at: at, from: from, ok: true}, next
}

// cut is the instant e is read at: its end, or now for a period under
// way ("in 2026" read during 2026, as "in December" is in December) and
// for a relative one that has not come ("next week"): the state is not
// read at an instant that has not come for what has begun.
func (p *parser) cut(e expr) time.Time {
	if e.end.After(p.now) && (e.relative || !e.start.After(p.now)) {
		return p.now
	}
	return e.end
}

// ranged reads the rest of a range or an approximation whose first
// expression (after the range word at i) is e: none is an instant, but
// "between A and B", "from A to B" and "around A" name a period.
func (p *parser) ranged(i int, e expr) (reading, int) {
	next := e.next
	if to := next; p.connects(to) {
		// "between June 1, 2026 and June 3, 2026": the other end is no instant either.
		e2, _, ok := p.part(to + 1)
		if !ok {
			e2, ok = p.expr(to + 1)
		}
		if ok && p.joined(to, "") {
			next = e2.next
			w, c := p.t[i].low, p.t[to].low
			if !e.void && !e2.void && (w == "between" && c == "and" || w == "from" && c != "or" && c != "and") {
				return reading{around: p.between(e, e2)}, next
			}
			return reading{}, next
		}
	}
	if !e.void && approximate[p.t[i].low] {
		return reading{around: e.period()}, next
	}
	return reading{}, next
}

// connects reports whether token j joins the two ends of a range.
func (p *parser) connects(j int) bool {
	return p.is(j, "and", "or", "to", "until", "till", "through", "thru")
}

// partPrefixes may come before a part of a month or a year ("in early
// June", "at the end of 2025"); any other prefix makes it open or an
// unwritten instant.
var partPrefixes = set("in", "during", "at", "on")

// shifted is the span that "N units before X" or "N units after X" names,
// "before" or "after" being token i: one unit long, N units from the
// start (or end) of X ("the week before June 3" is May 27 to June 2). N is
// a count ("two", "3", "a"); a unit alone or after "the" is one; any other
// word is no count to read ("a few days", "several weeks", "a couple of
// days"), and the phrase names no period.
func (p *parser) shifted(i int, x span) Period {
	n := 0
	if i > 1 && p.joined(i-2, "") {
		if c, ok := count(p.t[i-2].low); ok {
			n = c
		}
	}
	if n == 0 && !strings.HasSuffix(p.t[i-1].low, "s") && (i < 2 || !p.joined(i-2, "") || p.t[i-2].low == "the") {
		n = 1
	}
	if n == 0 {
		return Period{}
	}
	var days, months int
	switch strings.TrimSuffix(p.t[i-1].low, "s") {
	case "day":
		days = 1
	case "week":
		days = 7
	case "month":
		months = 1
	case "year":
		months = 12
	default: // hours and minutes: a time of day, which no phrase here reads
		return Period{}
	}
	// move goes k units from t; a month before March 31 is February 28,
	// not March 3 (monthsAgo).
	move := func(t time.Time, k int) time.Time {
		if months == 0 {
			return t.AddDate(0, 0, k*days)
		}
		return p.monthsAgo(t, -k*months)
	}
	if p.t[i].low == "after" {
		s := x.end.Add(micro)
		return Period{move(s, n-1), move(s, n).Add(-micro)}
	}
	return Period{move(x.start, -n), move(x.start, 1-n).Add(-micro)}
}

// between is the period from the start of a to the end of b; a written
// without its year takes b's ("between August 11 and August 15, 2023").
func (p *parser) between(a, b expr) Period {
	if a.relative && !b.relative {
		dy := b.end.Year() - a.start.Year()
		if a.start.AddDate(dy, 0, 0).After(b.start) {
			dy--
		}
		s := a.start.AddDate(dy, 0, 0)
		if s.Day() != a.start.Day() {
			return Period{} // February 29 in a year without one
		}
		a.start = s
	}
	if !a.start.Before(b.end) {
		return Period{}
	}
	return Period{a.start, b.end}
}

// parts narrow a month or a year to part of it: the fraction of it where
// the part starts and ends. Early, mid and late are its thirds.
var parts = []struct {
	words      []string
	start, end float64
}{
	{[]string{"early"}, 0, 1.0 / 3}, {[]string{"mid"}, 1.0 / 3, 2.0 / 3}, {[]string{"late"}, 2.0 / 3, 1},
	{[]string{"the", "beginning", "of"}, 0, 1.0 / 3}, {[]string{"the", "start", "of"}, 0, 1.0 / 3},
	{[]string{"the", "middle", "of"}, 1.0 / 3, 2.0 / 3}, {[]string{"the", "end", "of"}, 2.0 / 3, 1},
	{[]string{"the", "first", "half", "of"}, 0, 0.5}, {[]string{"the", "second", "half", "of"}, 0.5, 1},
}

// weekOrdinals name the weeks of a month: "the second week of November"
// is its days 8 to 14, "the last week" its last seven.
var weekOrdinals = map[string]int{"first": 1, "second": 2, "third": 3, "fourth": 4, "last": 0}

// seasonStarts are the first months of a season of a year, as the northern
// hemisphere has them; winter, which spans two years, is not read.
var seasonStarts = map[string]time.Month{"spring": time.March, "summer": time.June, "autumn": time.September, "fall": time.September}

// part reads a part of a month or a year at i ("early June", "the end of
// 2025", "the second week of November 2022", "summer 2021", "the summer
// of 2021"); ends when the part ends with the month or the year. Of a
// month or a year written without its year, the latest part that has
// begun by now.
func (p *parser) part(i int) (e expr, ends, ok bool) {
	if i >= len(p.t) {
		return expr{}, false, false
	}
	j := i
	if p.t[j].low == "the" && p.joined(j, "") {
		j++
	}
	if j < len(p.t) {
		if m, ok := seasonStarts[p.t[j].low]; ok {
			k := j + 1
			if p.is(k, "of") {
				k++
			}
			if y, present, valid := p.yearAt(k); present && valid && p.joined(k-1, "") {
				s := time.Date(y, m, 1, 0, 0, 0, 0, p.loc)
				return expr{span: span{s, s.AddDate(0, 3, 0).Add(-micro)}, next: k + 1, loose: true}, false, true
			}
			return expr{}, false, false
		}
	}
	if n, ok := weekOrdinals[p.t[j].low]; ok && j > i && p.is(j+1, "week") && p.is(j+2, "of") && p.joined(j+2, "") {
		return p.narrowed(j+3, func(whole span) span {
			s := whole.start.AddDate(0, 0, 7*(n-1))
			if n == 0 {
				s = whole.end.Add(micro).AddDate(0, 0, -7)
			}
			return span{s, s.AddDate(0, 0, 7).Add(-micro)}
		}, n == 0, false)
	}
	for _, pt := range parts {
		if n := p.words(i, pt.words...); n > 0 && p.joined(i+n-1, "-") { // "mid-June" (tokenize)
			return p.narrowed(i+n, func(whole span) span { return p.fraction(whole, pt.start, pt.end) }, pt.end == 1, true)
		}
	}
	return expr{}, false, false
}

// isMonth reports whether s is a whole calendar month.
func (p *parser) isMonth(s span) bool {
	return s.start.Day() == 1 && s == p.monthSpan(s.start.Year(), s.start.Month())
}

// isYear reports whether s is a whole calendar year.
func (p *parser) isYear(s span) bool {
	return s.start.YearDay() == 1 && s == p.yearSpan(s.start.Year())
}

// narrowed reads a month (or, with years, a year) at j and keeps the
// part of it that cut gives; a month read without its year whose part
// has not begun yet is the same month a year earlier.
func (p *parser) narrowed(j int, cut func(span) span, ends, years bool) (expr, bool, bool) {
	e, ok := p.expr(j)
	if !ok || e.void || !p.isMonth(e.span) && !(years && p.isYear(e.span)) {
		return expr{}, false, false
	}
	whole := e.span
	e.span = cut(whole)
	if e.relative && e.start.After(p.now) && p.isMonth(whole) {
		e.span = cut(p.monthSpan(whole.start.Year()-1, whole.start.Month()))
	}
	return e, ends, true
}

// fraction is the part of a month (whole days) or a year (whole months)
// from fraction a to fraction b of it.
func (p *parser) fraction(whole span, a, b float64) span {
	if p.isMonth(whole) {
		days := float64(whole.end.Day())
		return span{whole.start.AddDate(0, 0, int(a*days+0.5)), whole.start.AddDate(0, 0, int(b*days+0.5)).Add(-micro)}
	}
	return span{whole.start.AddDate(0, int(a*12+0.5), 0), whole.start.AddDate(0, int(b*12+0.5), 0).Add(-micro)}
}

// follows reports where a time expression right after token j-1 ends, or
// 0. Two in a row refine each other ("in May last year", "on Monday last
// week", "last year in May"), and which instant they mean together is not
// certain, so neither is read.
func (p *parser) follows(j int) int {
	if !p.joined(j-1, ",") {
		return 0
	}
	if p.is(j, "in", "on", "of", "at", "during") && p.joined(j, "") {
		j++
	}
	if e, ok := p.expr(j); ok && (!e.loose || p.free(e.next)) {
		return e.next
	}
	return 0
}

// followers may come right after a loose expression; anything else ("in
// 1000 words", "on sun loungers", "on June 2, 2000 people") means it was no
// date.
var followers = set("and", "or", "but", "as", "according", "vs", "versus", "compared", "than", "when", "while",
	"then", "so", "what", "who", "whom", "whose", "which", "where", "how", "why", "did", "was", "were", "is", "are",
	"for", "at", "with", "from", "in", "on", "the", "this", "that", "we", "i", "you", "it", "they", "he", "she",
	"our", "my", "your", "their", "about", "regarding", "concerning")

// free reports whether a phrase ending before token j ends there clearly.
func (p *parser) free(j int) bool {
	return j >= len(p.t) || !p.joined(j-1, "") || p.t[j].text == "" || followers[p.t[j].low]
}

type span struct{ start, end time.Time }

func (s span) period() Period { return Period{s.start, s.end} }

// expr is a time expression read at some token.
type expr struct {
	span
	next int  // the token after it
	day  bool // a calendar day
	// relative: read against now, so an end after now is cut to now.
	relative bool
	// needsPrefix: a date only after a preposition ("in May", "on June 2",
	// "in 2025"); bare, it may be a verb or a count.
	needsPrefix bool
	// loose: ends in a word that may be no date (a month, a weekday, or a
	// year that may be a count: "in May 2000 people"), so the phrase must
	// also end there.
	loose bool
	// void: read but self-contradictory, so it gives no instant and its
	// parts are not read again on their own.
	void bool
}

func (p *parser) expr(i int) (expr, bool) {
	if i >= len(p.t) {
		return expr{}, false
	}
	text := p.t[i].text
	// Only what may be a timestamp is parsed as one: a failed parse
	// allocates its error, and every word of a question is tried.
	if len(text) >= len("2006-01-02T15:04:05Z") && text[4] == '-' {
		if t, err := time.Parse(time.RFC3339, text); err == nil {
			t = t.In(p.loc).Truncate(micro)
			return expr{span: span{t, t}, next: i + 1}, true
		}
	}
	if len(text) == 10 && text[4] == '-' && text[7] == '-' && digits(text[:4]+text[5:7]+text[8:]) {
		if t, err := time.ParseInLocation(time.DateOnly, text, p.loc); err == nil {
			s, ok := p.dayOf(t.Date())
			return expr{span: s, next: i + 1, day: true}, ok
		}
		return expr{}, false
	}
	if e, ok := p.relative(i); ok {
		return e, true
	}
	return p.date(i)
}

// relative reads yesterday, today, last week/month/year/<weekday>, the day
// before yesterday, and "N days/weeks/months/years ago".
func (p *parser) relative(i int) (expr, bool) {
	today := p.dayAt(p.now).start
	rel := func(t time.Time, next int) (expr, bool) {
		return expr{span: p.dayAt(t), next: next, relative: true}, true
	}
	switch p.t[i].low {
	case "today":
		return rel(today, i+1)
	case "yesterday":
		return rel(today.AddDate(0, 0, -1), i+1)
	case "the":
		if n := p.words(i, "the", "day", "before", "yesterday"); n > 0 {
			return rel(today.AddDate(0, 0, -2), i+n)
		}
	case "last":
		// "the last week" is the seven days up to now: a range.
		if i > 0 && p.t[i-1].low == "the" || !p.joined(i, "") {
			return expr{}, false
		}
		switch w := p.t[i+1].low; w {
		case "week": // the previous ISO week, Monday to Sunday
			monday := today.AddDate(0, 0, -(int(today.Weekday())+6)%7)
			return expr{span: span{monday.AddDate(0, 0, -7), monday.Add(-micro)}, next: i + 2, relative: true}, true
		case "month":
			m := time.Date(today.Year(), today.Month()-1, 1, 0, 0, 0, 0, p.loc)
			return expr{span: p.monthSpan(m.Year(), m.Month()), next: i + 2, relative: true}, true
		case "year":
			return expr{span: p.yearSpan(today.Year() - 1), next: i + 2, relative: true}, true
		default:
			if wd, ok := weekdays[w]; ok {
				return rel(p.lastWeekday(wd), i+2)
			}
		}
		return expr{}, false
	}
	n, ok := count(p.t[i].low)
	if !ok || !p.joined(i, "") || !p.is(i+2, "ago") {
		return expr{}, false
	}
	switch strings.TrimSuffix(p.t[i+1].low, "s") {
	case "day":
		return rel(today.AddDate(0, 0, -n), i+3)
	case "week":
		return rel(today.AddDate(0, 0, -7*n), i+3)
	case "month":
		return rel(p.monthsAgo(today, n), i+3)
	case "year":
		return rel(p.monthsAgo(today, 12*n), i+3)
	}
	return expr{}, false
}

// date reads a calendar date, optionally after its weekday ("Monday, June
// 1, 2026"), or a weekday alone.
func (p *parser) date(i int) (expr, bool) {
	wd, ok := weekdays[p.t[i].low]
	if !ok {
		return p.calendar(i)
	}
	if p.joined(i, ",") {
		if e, ok := p.calendar(i + 1); ok && e.day {
			// "Tuesday, June 1, 2026" was a Monday: which one was meant?
			e.void = e.start.Weekday() != wd
			return e, true
		}
		if n := p.t[i+1].low; months[n] != 0 || n == "the" || n != "" && n[0] >= '0' && n[0] <= '9' {
			return expr{}, false // a date follows that we could not read; the weekday alone would be a guess
		}
	}
	return expr{span: p.dayAt(p.lastWeekday(wd)), next: i + 1, relative: true, needsPrefix: true, loose: true}, true
}

// calendar reads "June 2[nd][,] [2026]", "[the] 2[nd] [of] June[,] [2026]",
// "June [of] 2026", a month alone or a year alone.
func (p *parser) calendar(i int) (expr, bool) {
	tk := p.t[i]
	if m, ok := months[tk.low]; ok {
		sep := ""
		if len(tk.low) < len(m.String()) {
			sep = "." // "Jan. 5, 2026"
		}
		if p.joined(i, sep) {
			if d, ok := dayNum(p.t[i+1].low); ok {
				return p.ymd(i+2, m, d, ",")
			}
		}
		if p.joined(i, sep+",") { // "May 2026", "March, 2025", "June of 2026"
			j := i + 1
			if p.t[j].low == "of" && p.joined(j, "") {
				j++
			}
			if y, present, valid := p.yearAt(j); present {
				if !valid {
					return expr{}, false
				}
				return expr{span: p.monthSpan(y, m), next: j + 1, needsPrefix: true, loose: true}, true
			}
		}
		if m == time.May && tk.text[0] != 'M' {
			return expr{}, false // "may" in lower case, alone, is the verb
		}
		y := p.now.Year()
		if m > p.now.Month() {
			y-- // the latest such month that has begun
		}
		return expr{span: p.monthSpan(y, m), next: i + 1, relative: true, needsPrefix: true, loose: true}, true
	}
	j := i
	if tk.low == "the" && p.joined(i, "") {
		j++
	}
	if d, ok := dayNum(p.t[j].low); ok && p.joined(j, "") {
		k := j + 1
		if p.t[k].low == "of" && p.joined(k, "") {
			k++
		}
		if m, ok := months[p.t[k].low]; ok {
			return p.ymd(k+1, m, d, ",.")
		}
		return expr{}, false
	}
	if y, present, valid := p.yearAt(i); present && valid {
		return expr{span: p.yearSpan(y), next: i + 1, needsPrefix: true, loose: true}, true
	}
	return expr{}, false
}

// ymd makes day d of month m in the year written at token j, or, with no
// year there, the latest such day that has begun by now.
func (p *parser) ymd(j int, m time.Month, d int, sep string) (expr, bool) {
	if p.joined(j-1, sep) {
		if y, present, valid := p.yearAt(j); present {
			if !valid {
				return expr{}, false
			}
			s, ok := p.dayOf(y, m, d)
			return expr{span: s, next: j + 1, day: true, loose: true}, ok
		}
	}
	for y := p.now.Year(); y > p.now.Year()-8; y-- { // eight years find any February 29
		if s, ok := p.dayOf(y, m, d); ok && !s.start.After(p.now) {
			return expr{span: s, next: j, day: true, relative: true, needsPrefix: true}, true
		}
	}
	return expr{}, false
}

// yearAt reads token j as a year. Three or more digits are present as a
// year, so "June 2, 10000" is refused rather than read as "June 2"; only
// four digits from 0001 to 9999 are valid.
func (p *parser) yearAt(j int) (y int, present, valid bool) {
	if j >= len(p.t) || len(p.t[j].low) < 3 || !digits(p.t[j].low) {
		return 0, false, false
	}
	y, _ = strconv.Atoi(p.t[j].low)
	return y, true, len(p.t[j].low) == 4 && y >= 1
}

func (p *parser) dayAt(t time.Time) span {
	y, m, d := t.Date()
	return span{time.Date(y, m, d, 0, 0, 0, 0, p.loc), time.Date(y, m, d+1, 0, 0, 0, 0, p.loc).Add(-micro)}
}

// dayOf is the day y-m-d, if there is one.
func (p *parser) dayOf(y int, m time.Month, d int) (span, bool) {
	t := time.Date(y, m, d, 0, 0, 0, 0, p.loc)
	if y < 1 || y > 9999 || t.Month() != m || t.Day() != d {
		return span{}, false
	}
	return p.dayAt(t), true
}

func (p *parser) monthSpan(y int, m time.Month) span {
	return span{time.Date(y, m, 1, 0, 0, 0, 0, p.loc), time.Date(y, m+1, 1, 0, 0, 0, 0, p.loc).Add(-micro)}
}

func (p *parser) yearSpan(y int) span {
	return span{time.Date(y, 1, 1, 0, 0, 0, 0, p.loc), time.Date(y+1, 1, 1, 0, 0, 0, 0, p.loc).Add(-micro)}
}

// lastWeekday is the latest day of weekday wd strictly before today.
func (p *parser) lastWeekday(wd time.Weekday) time.Time {
	back := (int(p.now.Weekday()) - int(wd) + 7) % 7
	if back == 0 {
		back = 7
	}
	return p.dayAt(p.now).start.AddDate(0, 0, -back)
}

// monthsAgo moves today back n months, keeping the day of the month where
// it exists and else taking the month's last day: a month before March 31
// is February 28, not March 3 as time.AddDate would have it.
func (p *parser) monthsAgo(today time.Time, n int) time.Time {
	first := time.Date(today.Year(), today.Month()-time.Month(n), 1, 0, 0, 0, 0, p.loc)
	last := time.Date(first.Year(), first.Month()+1, 0, 0, 0, 0, 0, p.loc).Day()
	return time.Date(first.Year(), first.Month(), min(today.Day(), last), 0, 0, 0, 0, p.loc)
}

var history = set("was", "were", "previously", "before", "history", "historical", "changed", "change",
	"changes", "originally", "formerly", "earlier", "old", "prior", "past")

// historical reports whether the question's words ask about the past.
// "did" does not count: it asks about events ("when did Bob move?") as
// often as about values that held once, and every question about an
// event would read histories.
func (p *parser) historical() bool {
	for k, tk := range p.t {
		if history[tk.low] || p.words(k, "used", "to") > 0 || p.words(k, "at", "first") > 0 {
			return true
		}
	}
	return false
}

var months = map[string]time.Month{}

var weekdays = map[string]time.Weekday{"tues": time.Tuesday, "thur": time.Thursday, "thurs": time.Thursday}

func init() {
	for m := time.January; m <= time.December; m++ {
		name := strings.ToLower(m.String())
		months[name], months[name[:3]] = m, m
	}
	months["sept"] = time.September
	for d := time.Sunday; d <= time.Saturday; d++ {
		name := strings.ToLower(d.String())
		weekdays[name], weekdays[name[:3]] = d, d
	}
}

var numbers = map[string]int{"a": 1, "an": 1, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6,
	"seven": 7, "eight": 8, "nine": 9, "ten": 10, "eleven": 11, "twelve": 12}

// count reads a small count, in digits or in words; a large one is refused
// (it would move the date out of range anyway).
func count(s string) (int, bool) {
	if n, ok := numbers[s]; ok {
		return n, true
	}
	return num(s, 5)
}

// dayNum reads a day of the month: one or two digits, maybe ordinal ("2nd").
func dayNum(s string) (int, bool) {
	for _, suf := range []string{"st", "nd", "rd", "th"} {
		if len(s) > 2 && strings.HasSuffix(s, suf) {
			s = s[:len(s)-2]
			break
		}
	}
	return num(s, 2)
}

// num reads s as a number of at most width digits.
func num(s string, width int) (int, bool) {
	if len(s) > width || !digits(s) {
		return 0, false
	}
	n, _ := strconv.Atoi(s)
	return n, true
}

func digits(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return s != ""
}

func phrases(ps ...string) [][]string {
	out := make([][]string, len(ps))
	for i, p := range ps {
		out[i] = strings.Fields(p)
	}
	return out
}

func set(words ...string) map[string]bool {
	m := make(map[string]bool, len(words))
	for _, w := range words {
		m[w] = true
	}
	return m
}
