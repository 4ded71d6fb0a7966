package extract

import (
	"bytes"
	"encoding/json"
	"fmt"
	"iter"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/sgam-dev/sgam"
	"github.com/sgam-dev/sgam/schema"
	"github.com/sgam-dev/sgam/words"
)

// Grounding: what makes a model's quote support its update. The rules are
// stated in docs/extraction.md ("What grounded means"); this file is the
// only place that applies them.

// MinQuoteChars is the fewest letters and digits a quote has: fewer ("o",
// "M", "no") state nothing, and occur in every episode.
const MinQuoteChars = 3

// passage is a text as grounding compares it: a quote, or the whole
// episode (for a corroboration of an inferred attribute).
type passage struct {
	norm  string          // normalize's form
	words []string        // words.Tokens
	stems map[string]bool // words.Stem of each word
	nums  []float64       // the numbers it writes, read when first asked for
	numOK bool            // nums is read
}

func newPassage(s string) *passage {
	p := &passage{norm: normalize(s), words: words.Tokens(s)}
	p.stems = make(map[string]bool, len(p.words))
	for _, w := range p.words {
		p.stems[words.Stem(w)] = true
	}
	return p
}

// episodeText is an episode as grounding searches it: its normalized text,
// and the episode as a passage, made when first needed.
type episodeText struct {
	content string
	norm    string
	whole   *passage
}

func newEpisodeText(content string) *episodeText {
	return &episodeText{content: content, norm: normalize(content)}
}

func (e *episodeText) passage() *passage {
	if e.whole == nil {
		e.whole = newPassage(e.content)
	}
	return e.whole
}

// quote checks the first rule of grounding: the evidence is whole words of
// the episode, at least MinQuoteChars letters and digits of them. It
// returns the quote as a passage, or the rejection that names the rule
// broken.
func (e *episodeText) quote(evidence string) (*passage, *sgam.Rejection) {
	q := normalize(evidence)
	if q == "" {
		return nil, reject(sgam.RejectUngrounded, "evidence", "the quote is empty: evidence is the words of the episode that state the update")
	}
	n := 0
	for _, r := range q {
		if unicode.IsLetter(r) || unicode.IsDigit(r) {
			n++
		}
	}
	if n < MinQuoteChars {
		return nil, reject(sgam.RejectUngrounded, "evidence", "the quote %q has fewer than %d letters and digits: too short to state an update", clip(evidence, 120), MinQuoteChars)
	}
	first := strings.Index(e.norm, q)
	if first < 0 {
		return nil, reject(sgam.RejectUngrounded, "evidence", "the quote %q does not occur in the episode", clip(evidence, 120))
	}
	for i := range occurrences(e.norm, q, first) {
		if wordEdge(e.norm, i) && wordEdge(e.norm, i+len(q)) {
			return newPassage(evidence), nil
		}
	}
	return nil, reject(sgam.RejectUngrounded, "evidence", "the quote %q occurs in the episode only as part of longer words: a quote is whole words of the episode", clip(evidence, 120))
}

// occurrences yields the offsets at which p occurs in s, from first (the
// first of them) on, in one pass over s (Knuth-Morris-Pratt): a quote
// that occurs at every offset of a long episode ("aaa" in "aaaa...")
// costs time linear in the episode, not in the episode times the quote.
// Bytes are compared; a match of valid UTF-8 starts on a rune.
func occurrences(s, p string, first int) iter.Seq[int] {
	return func(yield func(int) bool) {
		if !yield(first) {
			return
		}
		fail := make([]int, len(p))
		for i, k := 1, 0; i < len(p); i++ {
			for k > 0 && p[i] != p[k] {
				k = fail[k-1]
			}
			if p[i] == p[k] {
				k++
			}
			fail[i] = k
		}
		for i, k := first+1, 0; i < len(s); i++ {
			for k > 0 && s[i] != p[k] {
				k = fail[k-1]
			}
			if s[i] == p[k] {
				k++
			}
			if k == len(p) {
				if !yield(i - len(p) + 1) {
					return
				}
				k = fail[k-1]
			}
		}
	}
}

// wordEdge reports whether byte offset i of s falls between words: not
// between two letters or digits of a script written with spaces. Scripts
// written without spaces between words (Chinese, Japanese, Thai) have no
// edge to check, so a quote of them may start anywhere.
func wordEdge(s string, i int) bool {
	if i <= 0 || i >= len(s) {
		return true
	}
	before, _ := utf8.DecodeLastRuneInString(s[:i])
	after, _ := utf8.DecodeRuneInString(s[i:])
	return !(inWord(before) && inWord(after)) || unspacedRune(before) || unspacedRune(after)
}

func inWord(r rune) bool { return unicode.IsLetter(r) || unicode.IsDigit(r) || unicode.IsMark(r) }

// unspacedRune reports whether r belongs to a script written without
// spaces between words.
func unspacedRune(r rune) bool {
	return unicode.In(r, unicode.Han, unicode.Hiragana, unicode.Katakana, unicode.Thai, unicode.Lao, unicode.Khmer, unicode.Myanmar)
}

func unspaced(w string) bool {
	for _, r := range w {
		if unspacedRune(r) {
			return true
		}
	}
	return false
}

// statement says how a passage must state a value, for the rejection's
// message: "the words of "Oslo"", "the number 1200".
type statement struct {
	ok   bool
	what string
}

// states reports whether p states value v (canonical JSON) of attribute
// name (a nil a: no schema, the value a string); written is the value as
// the model wrote it, whose offset a datetime's date is read in. member:
// v names a set's member to remove, which the passage names by half its
// words (at least one): a removal refers to what is stored, often by part
// of its name ("rate limiting is done" for "add rate limiting").
func (p *passage) states(a *schema.Attribute, name string, v json.RawMessage, written string, member bool) statement {
	if name == sgam.AliasAttribute {
		// Without a schema the value is not yet in the stored form of a
		// name, which the store gives it.
		var s string
		_ = json.Unmarshal(v, &s)
		return statement{p.hasRun(words.Name(s)), fmt.Sprintf("the name %q as words of the quote", clip(s, 80))}
	}
	typ := schema.TypeString
	if a != nil {
		typ = a.Type
	}
	var s string
	if json.Unmarshal(v, &s) == nil {
		switch typ {
		case schema.TypeDate:
			if t, err := time.Parse("2006-01-02", s); err == nil {
				return statement{p.hasDate(t), "the date " + s + " (as 2026-07-15, July 15, 15 July, 7/15 or 15.07.2026)"}
			}
		case schema.TypeDatetime:
			return p.statesDatetime(s, written)
		}
		return statement{p.hasWords(s, member), fmt.Sprintf("the words of %q", clip(s, 80))}
	}
	dec := json.NewDecoder(bytes.NewReader(v))
	dec.UseNumber()
	var x any
	_ = dec.Decode(&x) // v is canonical JSON, read by the attribute's type
	if n, isNum := x.(json.Number); isNum {
		f, _ := n.Float64()
		return statement{p.hasNumber(f), "the number " + n.String()}
	}
	// A boolean states nothing a quote could hold, and neither do the
	// booleans and nulls inside a JSON value: what the quote must show is
	// the attribute, by a word of its name ("vegetarian", "vip").
	checked, ok, what := 0, true, ""
	var walk func(any)
	walk = func(x any) {
		switch x := x.(type) {
		case string:
			checked++
			if !p.hasWords(x, false) {
				ok, what = false, fmt.Sprintf("the words of %q", clip(x, 80))
			}
		case json.Number:
			checked++
			f, _ := x.Float64()
			if !p.hasNumber(f) {
				ok, what = false, "the number "+x.String()
			}
		case []any:
			for _, e := range x {
				walk(e)
			}
		case map[string]any:
			for _, e := range x {
				walk(e)
			}
		}
	}
	walk(x)
	if checked > 0 {
		return statement{ok, what}
	}
	return statement{p.namesAttribute(name), fmt.Sprintf("a word of the attribute's name (%s), as a %s's quote must", name, typ)}
}

// hasWords reports whether p holds the words of s that are not stop
// words (all of s's words when it has only stop words), compared by stem
// ("tests" holds test): all of them, or at least half for partial. A
// text of no words at all ("+", "?") must occur in p as written.
func (p *passage) hasWords(s string, partial bool) bool {
	content := contentWords(words.Tokens(s))
	if len(content) == 0 {
		n := normalize(s)
		return n != "" && strings.Contains(p.norm, n)
	}
	held := 0
	for _, w := range content {
		if p.hasWord(w) {
			held++
		}
	}
	if partial {
		return held > 0 && 2*held >= len(content)
	}
	return held == len(content)
}

// hasWord reports whether p holds the word w (lowercase): by stem, or for
// a script written without spaces, where a word is not delimited, as part
// of its text.
func (p *passage) hasWord(w string) bool {
	return p.stems[words.Stem(w)] || (unspaced(w) && strings.Contains(p.norm, w))
}

// hasRun reports whether name (in the form of words.Name) is a run of
// p's words, in order: a name is quoted as it is written.
func (p *passage) hasRun(name string) bool {
	ns := strings.Fields(name)
	if len(ns) == 0 {
		return false
	}
	for i := 0; i+len(ns) <= len(p.words); i++ {
		match := true
		for j, n := range ns {
			if p.words[i+j] != n {
				match = false
				break
			}
		}
		if match {
			return true
		}
	}
	return unspaced(name) && strings.Contains(p.norm, name)
}

// contentWords are the words of ws that are not stop words, or all of
// them when they are all stop words (a value "it" is stated by "it").
func contentWords(ws []string) []string {
	var content []string
	for _, w := range ws {
		if !words.IsStop(w) {
			content = append(content, w)
		}
	}
	if len(content) == 0 {
		return ws
	}
	return content
}

// namesAttribute reports whether p holds a word of the attribute's name
// (split at _ . : @ -) by contentWords.
func (p *passage) namesAttribute(name string) bool {
	for _, w := range contentWords(words.Tokens(name)) {
		if p.hasWord(w) {
			return true
		}
	}
	return false
}

// hasNumber reports whether p writes the number f: in digits, with
// optional thousands commas, a decimal point and a sign ("1,200", "1200",
// "-3.5", "15%", "120 characters"), or in English words from zero to
// ninety-nine ("three", "forty-two").
func (p *passage) hasNumber(f float64) bool {
	if !p.numOK {
		p.nums, p.numOK = append(digitNumbers(p.norm), wordNumbers(p.words)...), true
	}
	for _, n := range p.nums {
		if n == f {
			return true
		}
	}
	return false
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

// digitNumbers returns the numbers s writes in digits. A number starts
// after something that is not a letter or digit ("v2" and "w000123" write
// none); a minus sign counts when it does not join two words ("T-101" is
// 101); a comma separates thousands only before exactly three digits
// ("June 30, 2026" is 30 and 2026).
func digitNumbers(s string) []float64 {
	var out []float64
	for i := 0; i < len(s); {
		if !isDigit(s[i]) {
			i++
			continue
		}
		start := i
		if start > 0 {
			if r, _ := utf8.DecodeLastRuneInString(s[:start]); inWord(r) {
				for i < len(s) && isDigit(s[i]) {
					i++
				}
				continue
			}
		}
		j := i
		for j < len(s) && isDigit(s[j]) {
			j++
		}
		digits := s[i:j]
		if j-i <= 3 {
			for j+4 <= len(s) && s[j] == ',' && isDigit(s[j+1]) && isDigit(s[j+2]) && isDigit(s[j+3]) && (j+4 == len(s) || !isDigit(s[j+4])) {
				digits += s[j+1 : j+4]
				j += 4
			}
		}
		if j+1 < len(s) && s[j] == '.' && isDigit(s[j+1]) {
			k := j + 1
			for k < len(s) && isDigit(s[k]) {
				k++
			}
			digits += s[j:k]
			j = k
		}
		if start > 0 && s[start-1] == '-' {
			if start == 1 {
				digits = "-" + digits
			} else if r, _ := utf8.DecodeLastRuneInString(s[:start-1]); !inWord(r) {
				digits = "-" + digits
			}
		}
		if f, err := strconv.ParseFloat(digits, 64); err == nil {
			out = append(out, f)
		}
		i = j
	}
	return out
}

var (
	units = map[string]float64{"zero": 0, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7, "eight": 8, "nine": 9,
		"ten": 10, "eleven": 11, "twelve": 12, "thirteen": 13, "fourteen": 14, "fifteen": 15, "sixteen": 16, "seventeen": 17, "eighteen": 18, "nineteen": 19}
	tens = map[string]float64{"twenty": 20, "thirty": 30, "forty": 40, "fifty": 50, "sixty": 60, "seventy": 70, "eighty": 80, "ninety": 90}
)

// wordNumbers returns the numbers ws write in English words, zero to
// ninety-nine: "forty-two" is the words forty and two.
func wordNumbers(ws []string) []float64 {
	var out []float64
	for i, w := range ws {
		if n, ok := units[w]; ok {
			out = append(out, n)
		}
		if n, ok := tens[w]; ok {
			out = append(out, n)
			if i+1 < len(ws) {
				if u, ok := units[ws[i+1]]; ok && u >= 1 && u <= 9 {
					out = append(out, n+u)
				}
			}
		}
	}
	return out
}

var months = map[string]time.Month{
	"january": 1, "jan": 1, "february": 2, "feb": 2, "march": 3, "mar": 3, "april": 4, "apr": 4, "may": 5,
	"june": 6, "jun": 6, "july": 7, "jul": 7, "august": 8, "aug": 8, "september": 9, "sep": 9, "sept": 9,
	"october": 10, "oct": 10, "november": 11, "nov": 11, "december": 12, "dec": 12,
}

// hasDate reports whether p writes the date of t: in digits as
// 2026-07-15, 2026/07/15, 15.07.2026, 15-07-2026, 07/15/2026, 7/15/26 or
// 7/15 (day and month in either order: the quote does not say which it
// means), or with the month's English name or abbreviation as July 15,
// July 15th, 15 July or 15th of July. A year written beside the day and
// month must be t's; one not written is not checked.
func (p *passage) hasDate(t time.Time) bool {
	y, m, d := t.Date()
	dayMonth := func(a, b int) bool { return (a == int(m) && b == d) || (a == d && b == int(m)) }
	year := func(s string) bool {
		n, _ := strconv.Atoi(s)
		return (len(s) == 4 && n == y) || (len(s) == 2 && n == y%100)
	}
	runs := digitRuns(p.norm)
	sep := func(k int) byte { // the one separator between runs k and k+1, or 0
		if k+1 < len(runs) && runs[k+1].start == runs[k].end+1 {
			if c := p.norm[runs[k].end]; c == '-' || c == '/' || c == '.' {
				return c
			}
		}
		return 0
	}
	for k := range runs {
		a := runs[k]
		if s := sep(k); s != 0 && sep(k+1) == s {
			b, c := runs[k+1], runs[k+2]
			if len(a.text) == 4 && a.n == y && b.n == int(m) && c.n == d && len(b.text) <= 2 && len(c.text) <= 2 {
				return true
			}
			if len(a.text) <= 2 && len(b.text) <= 2 && year(c.text) && dayMonth(a.n, b.n) {
				return true
			}
			continue
		}
		// Day and month alone, with a slash, and not part of a date of
		// three parts.
		if sep(k) == '/' && (k == 0 || sep(k-1) == 0) && sep(k+1) == 0 && len(a.text) <= 2 && len(runs[k+1].text) <= 2 && dayMonth(a.n, runs[k+1].n) {
			return true
		}
	}
	day := func(i int) bool {
		if i < 0 || i >= len(p.words) {
			return false
		}
		w := p.words[i]
		for _, suffix := range []string{"st", "nd", "rd", "th"} {
			w = strings.TrimSuffix(w, suffix)
		}
		n, err := strconv.Atoi(w)
		return err == nil && len(w) <= 2 && n == d
	}
	yearAt := func(i int) bool { // no year written there, or t's
		if i >= len(p.words) || len(p.words[i]) != 4 {
			return true
		}
		n, err := strconv.Atoi(p.words[i])
		return err != nil || n == y
	}
	for i, w := range p.words {
		if months[w] != m {
			continue
		}
		switch {
		case day(i+1) && yearAt(i+2): // July 15, 2026
			return true
		case day(i-1) && yearAt(i+1): // 15 July 2026
			return true
		case i >= 2 && p.words[i-1] == "of" && day(i-2) && yearAt(i+1): // 15th of July
			return true
		}
	}
	return false
}

type digitRun struct {
	start, end int
	text       string
	n          int
}

// digitRuns returns the runs of ASCII digits in s, of at most 9 digits.
func digitRuns(s string) []digitRun {
	var out []digitRun
	for i := 0; i < len(s); {
		if !isDigit(s[i]) {
			i++
			continue
		}
		j := i
		for j < len(s) && isDigit(s[j]) {
			j++
		}
		if j-i <= 9 {
			n, _ := strconv.Atoi(s[i:j])
			out = append(out, digitRun{i, j, s[i:j], n})
		}
		i = j
	}
	return out
}

// statesDatetime: a datetime is stated by its date, in the offset the
// model wrote it in or in UTC (the time of day is not checked: quotes
// rarely write it the way the value does).
func (p *passage) statesDatetime(canonical, written string) statement {
	t, _ := time.Parse(time.RFC3339Nano, canonical) // the attribute's type made it
	what := "the date " + t.UTC().Format("2006-01-02")
	if p.hasDate(t.UTC()) {
		return statement{true, what}
	}
	if w, err := time.Parse(time.RFC3339Nano, strings.ToUpper(strings.TrimSpace(written))); err == nil && p.hasDate(w) {
		return statement{true, what}
	}
	return statement{false, what}
}
