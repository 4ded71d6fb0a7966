package recall

import (
	"encoding/json"
	"strings"

	"github.com/sgam-dev/sgam"
	"github.com/sgam-dev/sgam/words"
)

// A fact's quote is what its source episode (its first source) says for
// it: the evidence the extraction of that episode quoted for this fact,
// else the part of the episode's content that best matches the attribute
// and the value. gather reads the records and the episode; these pick.

const maxQuoteBytes = 200

// recordedQuote is the evidence the latest of recs (an episode's
// extraction records, oldest first) quoted for f: for its fact id, or for
// its subject, attribute and value.
func recordedQuote(f sgam.Fact, recs []sgam.Extraction) (string, bool) {
	for i := len(recs) - 1; i >= 0; i-- {
		for _, a := range recs[i].Accepted {
			if a.Evidence != "" && (a.FactID == f.ID || a.Subject == f.Subject && a.Attribute == f.Attribute && sameJSON(a.Value, f.Value)) {
				return words.Truncate(words.OneLine(a.Evidence), maxQuoteBytes), true
			}
		}
	}
	return "", false
}

// contentQuote is the part of an episode's content that best matches f's
// attribute and value.
func contentQuote(f sgam.Fact, content string) string {
	var text string
	if json.Unmarshal(f.Value, &text) != nil {
		text = string(f.Value)
	}
	terms := words.Terms(wordSeparators.Replace(f.Attribute)+" "+text, words.MaxTerms)
	return words.Snippet(content, terms, maxQuoteBytes)
}

// wordSeparators reads the word separators of an attribute's name as
// spaces.
var wordSeparators = strings.NewReplacer("_", " ", "-", " ")

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
