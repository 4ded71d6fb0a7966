package cli

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"
)

// TestEscaperSplits: however a text is cut into writes (a C1 control's
// two bytes in two of them, say), what reaches the writer underneath is
// the same as for one write, and a text with nothing to escape reaches
// it as it is.
func TestEscaperSplits(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		alphabet := []byte{'a', ' ', '\n', '\t', 0x1b, 0x07, 0x7f, 0xc2, 0x9b, 0x80, 0xa0, 0xc3, 0xa9}
		text := rapid.SliceOf(rapid.SampledFrom(alphabet)).Draw(t, "text")
		var whole bytes.Buffer
		e := &escaper{w: &whole}
		n, err := e.Write(text)
		require.NoError(t, err)
		require.Equal(t, len(text), n)

		var cut bytes.Buffer
		e = &escaper{w: &cut}
		for rest := text; len(rest) > 0; {
			k := rapid.IntRange(1, len(rest)).Draw(t, "cut")
			_, err := e.Write(rest[:k])
			require.NoError(t, err)
			rest = rest[k:]
		}
		if e.held != nil {
			// A 0xC2 at the very end is held for a next write that never
			// came; the one write held it too.
			require.Equal(t, []byte{0xc2}, e.held)
		}
		require.Equal(t, whole.String(), cut.String())
		if plain(text) {
			require.Equal(t, string(text), whole.String())
		}
		require.NotContains(t, whole.String(), "\x1b")
		require.NotContains(t, whole.String(), "\u009b")
	})
}
