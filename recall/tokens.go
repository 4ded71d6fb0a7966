package recall

import (
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/tiktoken-go/tokenizer"
)

// Tokens counts the tokens of text as OpenAI's o200k_base encoding does
// (GPT-4o and later; tiktoken-compatible, its tables embedded in the
// binary, so counting needs no network). Other models' tokenizers differ
// by a few percent on English; a budget is a bound on this count. The
// encoding is loaded on first use (about 30 ms).
func Tokens(text string) int {
	enc := encoding()
	if enc == nil {
		return conservative(text)
	}
	if !utf8.ValidString(text) {
		// The tokenizer first replaces what is not UTF-8; pieces cuts
		// only valid text.
		n, err := enc.Count(text)
		if err != nil {
			return conservative(text)
		}
		return n
	}
	// Cut by hand (pieces), each piece counted once for all texts.
	var buf [64]string
	cut := buf[:0]
	pieces(text, func(p string) { cut = append(cut, p) })
	total := 0
	var missing []string
	pieceCache.mu.RLock()
	for _, p := range cut {
		if n, ok := pieceCache.m[p]; ok {
			total += n
		} else {
			missing = append(missing, p)
		}
	}
	pieceCache.mu.RUnlock()
	if len(missing) == 0 {
		return total
	}
	counted := make([]int, len(missing))
	for i, p := range missing {
		n, err := enc.Count(p)
		if err != nil {
			n = conservative(p)
		}
		counted[i] = n
		total += n
	}
	pieceCache.mu.Lock()
	if len(pieceCache.m)+len(missing) > maxCachedPieces {
		clear(pieceCache.m)
	}
	for i, p := range missing {
		if len(p) <= maxCachedPieceBytes {
			pieceCache.m[strings.Clone(p)] = counted[i]
		}
	}
	pieceCache.mu.Unlock()
	return total
}

// pieceCache holds the tokens of the pieces counted lately: words recur
// across texts far more than lines do. Like the stems of package words,
// it holds pieces of text alone (no tenant, no episode), in this
// process's memory only: a forgotten episode's words may stay in it
// until it is next emptied.
var pieceCache = struct {
	mu sync.RWMutex
	m  map[string]int
}{m: map[string]int{}}

// The cache holds at most maxCachedPieces pieces of at most
// maxCachedPieceBytes each: a longer piece (a long run of letters of one
// script, or of symbols) is rare and seldom seen twice, and would let the
// cache grow with the text it is given.
const (
	maxCachedPieces     = 1 << 16
	maxCachedPieceBytes = 64
)

// lineTokens counts a rendered line with its newline, remembering the
// latest lines counted: the same fact or episode is cited by many
// answers, and counting is the dearest step of a recall. The encoder's
// pieces never span a newline followed by a line that starts with a
// letter or a symbol (every rendered line does), so a block's tokens are
// the sum of its lines'.
func lineTokens(line string) int {
	lineCache.mu.Lock()
	n, ok := lineCache.m[line]
	lineCache.mu.Unlock()
	if ok {
		return n
	}
	n = Tokens(line + "\n")
	if len(line) > maxCachedLineBytes {
		return n // a fact's long value: the cache stays bounded in bytes
	}
	lineCache.mu.Lock()
	if len(lineCache.m) >= maxCachedLines {
		clear(lineCache.m)
	}
	lineCache.m[line] = n
	lineCache.mu.Unlock()
	return n
}

const (
	maxCachedLines     = 1 << 14
	maxCachedLineBytes = 1024
)

var lineCache = struct {
	mu sync.Mutex
	m  map[string]int
}{m: map[string]int{}}

// TokenEncoding names the encoding Tokens counts with.
const TokenEncoding = "o200k_base"

var encoding = sync.OnceValue(func() tokenizer.Codec {
	enc, err := tokenizer.Get(tokenizer.O200kBase)
	if err != nil {
		return nil
	}
	return enc
})

// conservative over-counts: no BPE token of o200k_base is shorter than
// one byte, so a byte is never less than a token.
func conservative(text string) int { return len(text) }
