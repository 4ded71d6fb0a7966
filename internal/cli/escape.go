package cli

import (
	"fmt"
	"io"
)

// escaper writes what the CLI prints with every control character but
// line feed and tab escaped (\u001b): episodes, values and quotes are
// anyone's text, and printed raw, ESC ] 0 ; … BEL would set the
// terminal's title and ESC [ 2 J clear its screen. C1 controls (U+0080 to
// U+009F), which terminals read as ESC-sequences too, are escaped in the
// same form, which inside a JSON string is the same character: JSON output
// stays the same JSON.
type escaper struct {
	w    io.Writer
	held []byte // a 0xC2 that may begin a C1 control the next write ends
}

func (e *escaper) Write(p []byte) (int, error) {
	if e.held == nil && plain(p) {
		// Most writes (every log line of sgam serve) have nothing to
		// escape: written as they are, with no copy.
		if _, err := e.w.Write(p); err != nil {
			return 0, err
		}
		return len(p), nil
	}
	buf := make([]byte, 0, len(e.held)+len(p))
	in := append(e.held, p...)
	e.held = nil
	for i := 0; i < len(in); i++ {
		c := in[i]
		switch {
		case c == '\n' || c == '\t':
			buf = append(buf, c)
		case c < 0x20 || c == 0x7f:
			buf = fmt.Appendf(buf, `\u%04x`, c)
		case c == 0xc2 && i+1 == len(in):
			e.held = []byte{c}
		case c == 0xc2 && in[i+1] >= 0x80 && in[i+1] <= 0x9f:
			buf = fmt.Appendf(buf, `\u%04x`, in[i+1])
			i++
		default:
			buf = append(buf, c)
		}
	}
	if _, err := e.w.Write(buf); err != nil {
		return 0, err
	}
	return len(p), nil
}

// plain reports whether p holds nothing Write escapes or holds back: no
// control character but line feed and tab, and no 0xC2 (the first byte
// of every C1 control).
func plain(p []byte) bool {
	for _, c := range p {
		if (c < 0x20 && c != '\n' && c != '\t') || c == 0x7f || c == 0xc2 {
			return false
		}
	}
	return true
}

// Unwrap returns the writer underneath (a terminal, say).
func (e *escaper) Unwrap() io.Writer { return e.w }

// raw returns the writer under w's escaper: for what is not text to
// display (a protocol's bytes, a progress bar's carriage returns).
func raw(w io.Writer) io.Writer {
	if e, ok := w.(*escaper); ok {
		return e.w
	}
	return w
}
