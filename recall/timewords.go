package recall

import (
	"strings"

	"github.com/sgam-dev/sgam/words"
)

// mentionsTime reports whether a text says when something happened or
// will: a relative day ("yesterday", "tomorrow", "last week", "this
// weekend", "next month", "last Friday", "two years ago"), a weekday, a
// month or a season, a year, or a length of time ("for 3 years").
func mentionsTime(text string) bool {
	ts := words.Tokens(text)
	for i, t := range ts {
		switch {
		case timeWords[t]:
			return true
		case weekdayNames[t] || seasonNames[t]:
			return true
		case monthNames[t]:
			if t != "may" || strings.Contains(text, "May") {
				return true
			}
		case len(t) == 4 && (strings.HasPrefix(t, "19") || strings.HasPrefix(t, "20")) && isDigits(t):
			return true
		case timeUnits[t] && i > 0:
			p := ts[i-1]
			if deictic[p] || counts[p] || isDigits(p) {
				return true
			}
		}
	}
	return false
}

var (
	timeWords    = wordSet("yesterday today tonight tomorrow ago weekend weekends recently lately")
	weekdayNames = wordSet("monday tuesday wednesday thursday friday saturday sunday")
	seasonNames  = wordSet("summer winter spring autumn")
	monthNames   = wordSet("january february march april may june july august september october november december")
	timeUnits    = wordSet("day days week weeks month months year years night morning evening afternoon decade decades")
	deictic      = wordSet("last this next past that previous coming")
	askedUnits   = wordSet("year date month day time week")
	counts       = wordSet("a an one two three four five six seven eight nine ten few couple several")
)

// asksWhen reports whether a question asks for a time: "when", "how
// long", "what year" (or date, month, day, time, week).
func asksWhen(question string) bool {
	ts := words.Tokens(question)
	for i, t := range ts {
		next := ""
		if i+1 < len(ts) {
			next = ts[i+1]
		}
		switch t {
		case "when":
			return true
		case "how":
			if next == "long" {
				return true
			}
		case "what", "which":
			if askedUnits[next] {
				return true
			}
		}
	}
	return false
}

func wordSet(s string) map[string]bool {
	m := map[string]bool{}
	for _, w := range strings.Fields(s) {
		m[w] = true
	}
	return m
}

func isDigits(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return s != ""
}
