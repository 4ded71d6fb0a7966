package recall

import (
	"sync"

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
	ids, _, err := enc.Encode(text)
	if err != nil {
		return conservative(text)
	}
	return len(ids)
}

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
