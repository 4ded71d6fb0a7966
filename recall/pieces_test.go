package recall

import (
	"encoding/json"
	"os"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/dlclark/regexp2/v2"
	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"
)

// o200kSplit is the tokenizer's own pre-tokenizer expression
// (tiktoken-go's codec.NewO200kBase), which pieces writes out by hand.
var o200kSplit = regexp2.MustCompile(`[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?|[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+`, regexp2.None)

func splitByExpression(t *testing.T, text string) []string {
	var out []string
	m, err := o200kSplit.FindStringMatch(text)
	require.NoError(t, err)
	for m != nil {
		out = append(out, m.String())
		m, err = o200kSplit.FindNextMatch(m)
		require.NoError(t, err)
	}
	return out
}

func splitByHand(text string) []string {
	var out []string
	pieces(text, func(p string) { out = append(out, p) })
	return out
}

// pieceText draws text from the characters the expression tells apart:
// letters of each case and of none, marks, numbers of each kind, spaces
// and line breaks of several kinds, symbols, apostrophes and the letters
// of contractions.
var pieceText = rapid.Custom(func(t *rapid.T) string {
	alphabet := []rune("aZsStTrReEvVlLmMdD'’ \t\r\n\u00a0\u2028\u3000/.,!?-_1234567890٣²Ⅻ½éÉǅʰ漢あ\u0301\u0903ﬁΣσ🙂\u200d\x0b\x85😀$€")
	rs := rapid.SliceOfN(rapid.SampledFrom(alphabet), 0, 40).Draw(t, "runes")
	return string(rs)
})

// TestPieces: the hand-written cut is the expression's, and Tokens counts
// as the tokenizer does, on random text and on every turn of the LoCoMo
// conversations.
func TestPieces(t *testing.T) {
	enc := encoding()
	require.NotNil(t, enc)
	rapid.Check(t, func(rt *rapid.T) {
		text := pieceText.Draw(rt, "text")
		n, err := enc.Count(text)
		require.NoError(rt, err)
		if got := Tokens(text); got != n {
			rt.Fatalf("%q: %d tokens by pieces, %d by the tokenizer", text, got, n)
		}
		want := splitByExpression(t, text)
		if got := splitByHand(text); !equalPieces(got, want) {
			rt.Fatalf("%q: cut into %q, the expression cuts %q", text, got, want)
		}
	})
	for _, text := range []string{"", "\n \n", "\t\n \nx", "I'm here, don't", "HELLO world", "ǅemal", "x\r\n\r\n  y", "a  \n b", "  ", "1234567", "hello  world  ", "'S'LL'Ve", "é\u0301\u0301a"} {
		require.Equal(t, splitByExpression(t, text), splitByHand(text), "%q", text)
	}
	raw, err := os.ReadFile("../../shared/data/locomo/locomo10.json")
	if err != nil {
		t.Skip("LoCoMo is not beside the repository:", err)
	}
	var convs []map[string]any
	require.NoError(t, json.Unmarshal(raw, &convs))
	var b strings.Builder
	for _, c := range convs {
		for k, v := range c["conversation"].(map[string]any) {
			turns, ok := v.([]any)
			if !ok || !strings.HasPrefix(k, "session_") {
				continue
			}
			for _, turn := range turns {
				text, _ := turn.(map[string]any)["text"].(string)
				n, err := enc.Count(text)
				require.NoError(t, err)
				require.Equal(t, n, Tokens(text), "%q", text)
				b.WriteString(text + "\n")
			}
		}
	}
	all := b.String()
	require.True(t, utf8.ValidString(all))
	require.Equal(t, splitByExpression(t, all), splitByHand(all))
}

func equalPieces(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// TestTokensOfLongPieces: a long piece is counted as the tokenizer counts
// it, and is not remembered (the cache stays bounded in bytes).
func TestTokensOfLongPieces(t *testing.T) {
	enc := encoding()
	require.NotNil(t, enc)
	for _, text := range []string{strings.Repeat("あ", 5000), strings.Repeat("!", 3000) + " x", strings.Repeat(" ", 4000) + "\n", strings.Repeat("ABCdef", 1000)} {
		n, err := enc.Count(text)
		require.NoError(t, err)
		require.Equal(t, n, Tokens(text))
		pieces(text, func(p string) {
			if len(p) > maxCachedPieceBytes {
				pieceCache.mu.RLock()
				_, kept := pieceCache.m[p]
				pieceCache.mu.RUnlock()
				require.False(t, kept, "a piece of %d bytes was remembered", len(p))
			}
		})
	}
}
