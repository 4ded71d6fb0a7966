// Package words holds the lexical rules that every search of sgam shares:
// how a text becomes search terms, which words are too common to search
// for, and how a snippet is cut around the terms. Both stores' full-text
// indexes are queried with these terms (SQLite FTS5 with the porter
// tokenizer, PostgreSQL's english text search configuration), so the same
// question asks the same of either.
package words

import (
	"hash/maphash"
	"slices"
	"strings"
	"sync/atomic"
	"unicode"
	"unicode/utf8"

	porter "github.com/blevesearch/go-porterstemmer"
)

// MaxTerms bounds the terms of one search: a question longer than that
// is searched for by its first MaxTerms distinct terms.
const MaxTerms = 32

// Tokens splits text into lowercase words of letters and digits, in order,
// with a possessive 's dropped ("Mira's" is mira) and a word split at an
// inner apostrophe ("don't" is don, t): the indexes' tokenizers split
// there too, and a term must be one of their tokens.
func Tokens(text string) []string {
	out := make([]string, 0, len(text)/6+1)
	EachToken(text, func(t string) bool {
		out = append(out, t)
		return true
	})
	return out
}

// EachToken calls yield with each of Tokens(text) in order, until yield
// returns false, without collecting them: recall reads every candidate
// episode's words.
func EachToken(text string, yield func(string) bool) {
	// One pass over the text, without the apostrophes' rules for a word
	// that has none.
	lower := strings.ToLower(text)
	start, apostrophe := -1, false
	field := func(f string, apostrophe bool) bool {
		if !apostrophe {
			return yield(f)
		}
		for _, t := range apostropheWords(f) {
			if !yield(t) {
				return false
			}
		}
		return true
	}
	for i, r := range lower {
		var in bool
		switch {
		case r < utf8.RuneSelf:
			in = 'a' <= r && r <= 'z' || '0' <= r && r <= '9' || r == '\''
		default:
			in = unicode.IsLetter(r) || unicode.IsDigit(r) || r == '’'
		}
		switch {
		case !in:
			if start >= 0 {
				if !field(lower[start:i], apostrophe) {
					return
				}
				start = -1
			}
		case start < 0:
			start, apostrophe = i, isApostrophe(r)
		default:
			apostrophe = apostrophe || isApostrophe(r)
		}
	}
	if start >= 0 {
		field(lower[start:], apostrophe)
	}
}

// apostropheWords returns the words of a field of letters, digits and
// apostrophes that holds an apostrophe: a possessive 's dropped, split at
// an inner apostrophe.
func apostropheWords(f string) []string {
	f = strings.TrimSuffix(strings.TrimSuffix(f, "'s"), "’s")
	f = strings.Trim(f, "'’")
	switch {
	case f == "":
		return nil
	case strings.ContainsAny(f, "'’"):
		return strings.FieldsFunc(f, isApostrophe)
	default:
		return []string{f}
	}
}

func isApostrophe(r rune) bool { return r == '\'' || r == '’' }

// Terms returns the words of text worth searching for: Tokens without
// stop words and one-letter words, each once, at most max, in order of
// first appearance.
func Terms(text string, max int) []string {
	seen := map[string]bool{}
	var out []string
	for _, w := range Tokens(text) {
		if len(out) == max {
			break
		}
		if utf8.RuneCountInString(w) < 2 || IsStop(w) || seen[w] {
			continue
		}
		seen[w] = true
		out = append(out, w)
	}
	return out
}

// IsStop reports whether w (lowercase) is an English stop word: too
// common to tell texts apart. Question words are stop words too: "when"
// says what kind of answer is wanted, not what it is about.
func IsStop(w string) bool { return stop[w] }

var stop = func() map[string]bool {
	m := map[string]bool{}
	for _, w := range strings.Fields(`a about above after again against all am an and any are aren as at be because been
		before being below between both but by can cannot could couldn did didn do does doesn doing don down during each
		few for from further had hadn has hasn have haven having he her here hers herself him himself his how i if in into
		is isn it its itself just let ll me more most my myself no nor not now of off on once only or other ought our ours
		ourselves out over own re same shan she should shouldn so some such than that the their theirs them themselves then
		there these they this those through to too under until up ve very was wasn we were weren what when where which while
		who whom why will with won would wouldn you your yours yourself yourselves s t d m o y ma
		also any anyone anything etc get got ever many much one really since still thing things would whose`) {
		m[w] = true
	}
	return m
}()

// Stem reduces a lowercase English word to its stem by the Porter
// algorithm, the one SQLite's porter tokenizer applies to what it
// indexes: "deadlines" and "deadline", "moved" and "move" have one stem,
// and a stem here is a term of that index.
func Stem(w string) string {
	slot := &stems[maphash.String(stemSeed, w)%uint64(len(stems))]
	if e := slot.Load(); e != nil && e.word == w {
		return e.stem
	}
	st := porter.StemString(w)
	// The word is often a slice of a whole episode's text: the cache
	// keeps a copy, so that it holds no episode.
	slot.Store(&stemmed{word: strings.Clone(w), stem: st})
	return st
}

// StemHead is what a word keeps of its start when stemmed: its first
// two bytes, a second byte 'y' read as 'i' (the stemmer turns "ays" into
// "ai"), or its one byte. For every word w, StemHead(Stem(w)) is a prefix
// of StemHead(w) (TestStemHead): recall skips stemming a word whose head
// starts no stem it looks for.
func StemHead(w string) string {
	if len(w) >= 2 && w[1] == 'y' {
		return yHeads[w[0]]
	}
	return w[:min(2, len(w))]
}

// yHeads[b] is the head of a word of first byte b and second byte 'y',
// made once: recall asks for the heads of every candidate's words.
var yHeads = func() (h [256]string) {
	for b := range h {
		h[b] = string([]byte{byte(b), 'i'})
	}
	return h
}()

// stems remembers the stems of the words seen lately: recall stems the
// words of every candidate episode, which repeat from one question to the
// next, and the stemmer allocates. Each word has one slot, by its hash,
// and the last word stemmed there keeps it: a lookup is a hash and one
// load, with no lock (a sync.Map's was as dear as stemming). It holds
// words alone, no tenant and no episode, in this process's memory only (a
// forgotten episode's words may stay in it until other words take their
// slots).
var stems [1 << 14]atomic.Pointer[stemmed]

type stemmed struct{ word, stem string }

var stemSeed = maphash.MakeSeed()

// Snippet returns at most max bytes of content around where the terms
// occur most densely, on word boundaries, with "…" where it was cut. A
// content of at most max bytes is returned whole.
func Snippet(content string, terms []string, max int) string {
	content = strings.Join(strings.Fields(content), " ")
	if len(content) <= max {
		return content
	}
	stems := map[string]bool{}
	for _, t := range terms {
		stems[Stem(t)] = true
	}
	// Word starts and whether each word is a term.
	type word struct {
		start, end int
		hit        bool
	}
	var ws []word
	start := -1
	for i, r := range content + " " {
		letter := unicode.IsLetter(r) || unicode.IsDigit(r)
		switch {
		case letter && start < 0:
			start = i
		case !letter && start >= 0:
			w := strings.ToLower(content[start:i])
			ws = append(ws, word{start, i, stems[Stem(w)]})
			start = -1
		}
	}
	// The window of words that fits max with the most hits; the first
	// such window wins.
	best, bestHits, hits, j := 0, -1, 0, 0
	for i := range ws {
		for j < len(ws) && ws[j].end-ws[i].start <= max-6 {
			if ws[j].hit {
				hits++
			}
			j++
		}
		if hits > bestHits {
			best, bestHits = i, hits
		}
		if j > i && ws[i].hit {
			hits--
		}
		if j == i {
			j++
		}
	}
	if len(ws) == 0 {
		return Truncate(content, max)
	}
	from := ws[best].start
	to := from
	for k := best; k < len(ws) && ws[k].end-from <= max-6; k++ {
		to = ws[k].end
	}
	if to == from {
		return Truncate(content, max)
	}
	out := content[from:to]
	if from > 0 {
		out = "…" + out
	}
	if to < len(content) {
		out += "…"
	}
	return out
}

// OneLine collapses every run of white space in s, line breaks included,
// to one space.
func OneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

// Truncate cuts s to at most max bytes on a rune boundary, marking the
// cut with "…".
func Truncate(s string, max int) string {
	if len(s) <= max {
		return s
	}
	n := max - len("…")
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}

// Candidates returns the words of a text that could be subject ids, at
// most max, in order of first appearance: lowercased words ("Mira's" is
// mira; hyphens, underscores and dots stay inside a word, as in ids) and
// pairs of adjacent words joined by a hyphen and an underscore ("acct 42"
// is acct-42 and acct_42). A reader asks the store which of them are
// known subjects (FactReader.Subjects).
func Candidates(text string, max int) []string {
	var ws []string
	for _, f := range strings.FieldsFunc(strings.ToLower(text), func(r rune) bool {
		return !(unicode.IsLetter(r) || unicode.IsDigit(r) || r == '-' || r == '_' || r == '\'' || r == '.' || r == '’')
	}) {
		f = strings.TrimSuffix(strings.TrimSuffix(f, "'s"), "’s")
		f = strings.Trim(f, "-_.'’")
		if f != "" {
			ws = append(ws, f)
		}
	}
	seen := map[string]bool{}
	var out []string
	add := func(w string) {
		if len(out) < max && !seen[w] {
			seen[w] = true
			out = append(out, w)
		}
	}
	for i, w := range ws {
		add(w)
		if i+1 < len(ws) {
			add(w + "-" + ws[i+1])
			add(w + "_" + ws[i+1])
		}
	}
	return out
}

// MaxNameWords is the most words a subject's alias may have: a reader
// looks a text's runs of up to this many words up as names.
const MaxNameWords = 6

// Name is the form a subject's alias is stored and looked up in: its
// Tokens joined by single spaces ("Dr. Lind's" is "dr lind", "MIRA  Chen"
// is "mira chen"), so that a name matches however a text spells its case,
// spacing and punctuation.
func Name(s string) string { return strings.Join(Tokens(s), " ") }

// IsName reports whether s is in the form of Name (Name(s) == s), without
// building that form: a recall checks some sixty runs of its question's
// words.
func IsName(s string) bool {
	at, ok := 0, true
	EachToken(s, func(t string) bool {
		if at > 0 {
			if at >= len(s) || s[at] != ' ' {
				ok = false
				return false
			}
			at++
		}
		if !strings.HasPrefix(s[at:], t) {
			ok = false
			return false
		}
		at += len(t)
		return true
	})
	return ok && at == len(s)
}

// Names returns the runs of one to MaxNameWords words of a text, each in
// the form of Name, each once, at most limit, in order of where they start:
// the names a reader asks the store about (FactReader.SubjectsNamed).
func Names(text string, limit int) []string {
	ws := Tokens(text)
	// Every run is a piece of the words joined once (no string of its
	// own): a question's runs are some sixty.
	joined := strings.Join(ws, " ")
	starts := make([]int, len(ws))
	for i, at := 1, 0; i < len(ws); i++ {
		at += len(ws[i-1]) + 1
		starts[i] = at
	}
	room := min(max(limit, 0), MaxNameWords*len(ws))
	seen := make(map[string]bool, room)
	out := make([]string, 0, room)
	for i := range ws {
		for n := 0; n < MaxNameWords && i+n < len(ws); n++ {
			if len(out) == limit {
				return out
			}
			name := joined[starts[i] : starts[i+n]+len(ws[i+n])]
			if !seen[name] {
				seen[name] = true
				out = append(out, name)
			}
		}
	}
	return out
}

// MaxRankedRows bounds the rows a search ranks: a store's index ranks
// every row its terms match, so a search's time is in the rows its terms
// hold, and a term that many rows hold weighs little in the ranking (its
// inverse document frequency is low): a question's commonest words are
// the index's stop words. The rows are the tenant's own (each
// conversation of LoCoMo is a tenant): of 50, 70, 100, 150, 200 and 400,
// 100 ranked best on the first five LoCoMo conversations (turn recall@10
// 0.759, 0.765, 0.770, 0.767, 0.769, 0.767, lexical) and took about four
// fifths of the time of 400 per question. (Counted over every tenant's
// rows, as the SQLite store did before, 400 was best of 200 to 1,000.)
const MaxRankedRows = 100

// Selective returns the terms worth searching for, given how many rows
// of the index hold each (rows[i] for terms[i]): the rarest that some row
// holds first (with any that none holds), then the next rarest while the
// rows they hold together stay within MaxRankedRows, in the terms' order.
// A term no row holds (a misspelling) is not the one that keeps the
// question's only other term out.
func Selective(terms []string, rows []int) []string {
	order := make([]int, len(terms))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int { return rows[a] - rows[b] })
	keep := make([]bool, len(terms))
	total := 0
	for _, i := range order {
		if total > 0 && total+rows[i] > MaxRankedRows {
			break
		}
		total += rows[i]
		keep[i] = true
	}
	var out []string
	for i, t := range terms {
		if keep[i] {
			out = append(out, t)
		}
	}
	return out
}

// Holds reports whether text holds phrase: every term of phrase (Terms,
// any number of them) is a word of text, by stem; a phrase with no term
// (stop words, one letter) is looked for as it is, case aside. It is how
// the evaluation asks whether a context holds an answer ("7 May 2023"
// is held by "on 7 May, 2023"), a proxy for what a model reading it could
// answer; it knows nothing of paraphrase.
func Holds(text, phrase string) bool {
	terms := Terms(phrase, len(phrase))
	if len(terms) == 0 {
		return strings.Contains(strings.ToLower(text), strings.ToLower(strings.TrimSpace(phrase)))
	}
	have := map[string]bool{}
	for _, w := range Tokens(text) {
		have[Stem(w)] = true
	}
	for _, t := range terms {
		if !have[Stem(t)] {
			return false
		}
	}
	return true
}
