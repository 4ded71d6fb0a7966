package when

import (
	"strings"
	"time"

	"github.com/sgam-dev/sgam/words"
)

// Mentions reports whether a text says when something happened or will:
// a relative day ("yesterday", "tomorrow", "last week", "this weekend",
// "next month", "last Friday", "two years ago"), a weekday, a month or a
// season (by its full name: "sat" and "sun" are words too), a year, or a
// length of time ("for 3 years"). Recall favours such episodes when the
// question asks when.
func Mentions(text string) bool {
	ts := words.Tokens(text)
	for i, t := range ts {
		switch {
		case timeWords[t]:
			return true
		case fullName(t) || seasons[t]:
			if m, ok := months[t]; ok && m == time.May && !strings.Contains(text, "May") {
				continue // "you may like it"
			}
			return true
		case len(t) == 4 && (strings.HasPrefix(t, "19") || strings.HasPrefix(t, "20")) && digits(t):
			return true
		case timeUnits[t] && i > 0:
			p := ts[i-1]
			if deictic[p] || counts[p] || digits(p) {
				return true
			}
		}
	}
	return false
}

// AsksWhen reports whether a question asks for a time: "when", "how
// long", "what year" (or date, month, day, time, week).
func AsksWhen(question string) bool {
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

// fullName reports whether t is the full name of a month or a weekday.
func fullName(t string) bool {
	if m, ok := months[t]; ok {
		return strings.ToLower(m.String()) == t
	}
	if d, ok := weekdays[t]; ok {
		return strings.ToLower(d.String()) == t
	}
	return false
}

var (
	timeWords  = set(strings.Fields("yesterday today tonight tomorrow ago weekend weekends recently lately")...)
	seasons    = set(strings.Fields("summer winter spring autumn")...)
	timeUnits  = set(strings.Fields("day days week weeks month months year years night morning evening afternoon decade decades")...)
	deictic    = set(strings.Fields("last this next past that previous coming")...)
	askedUnits = set(strings.Fields("year date month day time week")...)
	counts     = set(strings.Fields("a an one two three four five six seven eight nine ten few couple several")...)
)
