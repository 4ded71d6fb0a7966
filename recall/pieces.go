package recall

import (
	"unicode"
	"unicode/utf8"
)

// pieces calls yield with each piece o200k_base's pre-tokenizer cuts text
// into, in order: the pieces its regular expression matches one after
// the other,
//
//	[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?
//	|[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?
//	|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+
//
// written out by hand, as the backtracking matcher the tokenizer uses
// reads it: the first alternative that matches, each quantifier as long
// as the rest still matches, except where that matcher is found to do
// otherwise (newlines). Byte-pair encoding never merges across
// pieces, so a text's tokens are the sum of its pieces' (Tokens caches
// them by piece). The expression's matcher is most of the cost of
// counting, and allocates on every match. text must be valid UTF-8;
// TestPieces holds the cut to the tokenizer's own on varied text.
func pieces(text string, yield func(string)) {
	for i := 0; i < len(text); {
		n := piece(text[i:])
		yield(text[i : i+n])
		i += n
	}
}

// piece returns the length in bytes of the piece at the start of s (not
// empty): the first of the expression's alternatives that matches.
func piece(s string) int {
	if n := letters(s, true); n > 0 {
		return n
	}
	if n := letters(s, false); n > 0 {
		return n
	}
	for _, alt := range [...]func(string) int{numbers, symbols, newlines, spacesBeforeSpace, spaces} {
		if n := alt(s); n > 0 {
			return n
		}
	}
	// Not reached: every character is a letter or mark (the first two),
	// a number, whitespace, or another character (symbols).
	_, n := utf8.DecodeRuneInString(s)
	return n
}

// Character classes of the expression.
const (
	classUpper  = 1 << iota // [\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]
	classLower              // [\p{Ll}\p{Lm}\p{Lo}\p{M}]
	classNumber             // \p{N}
	classSpace              // \s (unicode.IsSpace, as the matcher has it)
	classPrefix             // [^\r\n\p{L}\p{N}]
	classSymbol             // [^\s\p{L}\p{N}]
)

// asciiClass is class for the first 128 code points.
var asciiClass = func() (t [utf8.RuneSelf]uint8) {
	for r := range rune(utf8.RuneSelf) {
		t[r] = slowClass(r)
	}
	return t
}()

func class(r rune) uint8 {
	if r < utf8.RuneSelf {
		return asciiClass[r]
	}
	return slowClass(r)
}

func slowClass(r rune) uint8 {
	var c uint8
	letter := unicode.IsLetter(r)
	number := unicode.IsNumber(r)
	space := unicode.IsSpace(r)
	mark := unicode.IsMark(r)
	if unicode.In(r, unicode.Lu, unicode.Lt, unicode.Lm, unicode.Lo) || mark {
		c |= classUpper
	}
	if unicode.In(r, unicode.Ll, unicode.Lm, unicode.Lo) || mark {
		c |= classLower
	}
	if number {
		c |= classNumber
	}
	if space {
		c |= classSpace
	}
	if r != '\r' && r != '\n' && !letter && !number {
		c |= classPrefix
	}
	if !space && !letter && !number {
		c |= classSymbol
	}
	return c
}

// classAt returns the class of the character at the start of s and its
// length (0, 0 at the end).
func classAt(s string) (uint8, int) {
	if s == "" {
		return 0, 0
	}
	if s[0] < utf8.RuneSelf {
		return asciiClass[s[0]], 1
	}
	r, n := utf8.DecodeRuneInString(s)
	return class(r), n
}

// run returns the length of the longest start of s whose characters are
// all of class c.
func run(s string, c uint8) int {
	i := 0
	for i < len(s) {
		k, n := classAt(s[i:])
		if k&c == 0 {
			break
		}
		i += n
	}
	return i
}

// letters is the first alternative (upperFirst: upper* lower+) or the
// second (upper+ lower*), each after an optional prefix character and
// before an optional contraction.
func letters(s string, upperFirst bool) int {
	c, n := classAt(s)
	if c&classPrefix != 0 {
		if m := word(s[n:], upperFirst); m > 0 {
			return n + m
		}
	}
	// Without the prefix (a mark is both a prefix and a letter).
	return word(s, upperFirst)
}

// word matches upper* lower+ (upperFirst) or upper+ lower* at the start
// of s, then an optional contraction; 0 when it does not match.
func word(s string, upperFirst bool) int {
	up := run(s, classUpper)
	end := 0
	if upperFirst {
		if low := run(s[up:], classLower); low > 0 {
			end = up + low
		} else {
			// upper* gives back characters until one of them starts
			// lower+: the last character of the upper run that is also
			// lower, which lower+ takes alone (the next is not lower).
			for i := 0; i < up; {
				c, n := classAt(s[i:])
				if c&classLower != 0 {
					end = i + n
				}
				i += n
			}
			if end == 0 {
				return 0
			}
		}
	} else {
		if up == 0 {
			return 0
		}
		end = up + run(s[up:], classLower)
	}
	return end + contraction(s[end:])
}

// contraction matches (?i:'s|'t|'re|'ve|'m|'ll|'d) at the start of s.
func contraction(s string) int {
	if len(s) < 2 || s[0] != '\'' {
		return 0
	}
	lower := func(i int) rune {
		r, _ := utf8.DecodeRuneInString(s[i:])
		return unicode.ToLower(r)
	}
	var want rune // the second letter of a two-letter contraction
	switch lower(1) {
	case 's', 't', 'm', 'd':
		_, n := utf8.DecodeRuneInString(s[1:])
		return 1 + n
	case 'r', 'v':
		want = 'e'
	case 'l':
		want = 'l'
	default:
		return 0
	}
	_, n := utf8.DecodeRuneInString(s[1:])
	if 1+n < len(s) && lower(1+n) == want {
		_, m := utf8.DecodeRuneInString(s[1+n:])
		return 1 + n + m
	}
	return 0
}

// numbers matches \p{N}{1,3}.
func numbers(s string) int {
	i := 0
	for k := 0; k < 3; k++ {
		c, n := classAt(s[i:])
		if c&classNumber == 0 {
			break
		}
		i += n
	}
	return i
}

// symbols matches " ?[^\s\p{L}\p{N}]+[\r\n/]*".
func symbols(s string) int {
	start := 0
	if s != "" && s[0] == ' ' {
		if run(s[1:], classSymbol) > 0 {
			start = 1
		}
	}
	n := run(s[start:], classSymbol)
	if n == 0 {
		return 0
	}
	end := start + n
	for end < len(s) && (s[end] == '\r' || s[end] == '\n' || s[end] == '/') {
		end++
	}
	return end
}

// newlines matches \s*[\r\n]+ as the tokenizer's matcher does: the
// whitespace up to the first line break, and the line breaks right after
// it (not, as a backtracking \s* would, up to the last one: "\n \n" is
// two pieces).
func newlines(s string) int {
	ws := run(s, classSpace)
	for i := 0; i < ws; i++ {
		if s[i] == '\r' || s[i] == '\n' {
			for i < ws && (s[i] == '\r' || s[i] == '\n') {
				i++
			}
			return i
		}
	}
	return 0
}

// spacesBeforeSpace matches \s+(?!\S): all the whitespace at the end of
// the text, else all of it but its last character.
func spacesBeforeSpace(s string) int {
	ws := run(s, classSpace)
	if ws == len(s) {
		return ws
	}
	// Give back the last character; at least one must remain.
	_, last := utf8.DecodeLastRuneInString(s[:ws])
	return max(0, ws-last)
}

// spaces matches \s+.
func spaces(s string) int { return run(s, classSpace) }
