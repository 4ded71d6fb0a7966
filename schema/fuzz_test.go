package schema

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// FuzzParse checks that Parse never panics on any input, and that every
// schema it accepts survives a round trip through Canonical unchanged.
func FuzzParse(f *testing.F) {
	f.Add(Example())
	f.Add([]byte(valueSchema))
	f.Add([]byte(migrateSchema))
	for _, c := range parseErrorCases {
		f.Add([]byte(c.src))
	}
	if s, err := Parse(Example()); err == nil {
		f.Add(s.Canonical())
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		t0 := time.Now()
		defer func() {
			if d := time.Since(t0); d > 10*time.Second {
				t.Fatalf("Parse took %v; it must stay fast on any input up to MaxFileBytes", d)
			}
		}()
		s, err := Parse(data)
		if err != nil {
			require.Nil(t, s)
			var pe *ParseError
			require.ErrorAs(t, err, &pe)
			require.NotEmpty(t, pe.Problems)
			return
		}
		requireRoundTrip(t, s)
	})
}

// FuzzValue checks that Value never panics and that what it accepts is
// canonical: validating the output again gives the same bytes.
func FuzzValue(f *testing.F) {
	s, err := Parse([]byte(valueSchema))
	require.NoError(f, err)
	for _, seed := range []string{`"Mira"`, `1`, `1.0e2`, `-0`, `true`, `"2026-06-30"`, `"2026-06-03T12:00:00+02:00"`,
		`"pro"`, `2.50`, `{"city":"Oslo","zip":"0150"}`, `{"city":"Oslo","tags":["a"],"a/b~c":3}`, `"caf\u00e9"`, `[1,{"a":null}]`} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, in string) {
		for _, a := range s.Attributes {
			out, err := a.Value(json.RawMessage(in))
			if err != nil {
				continue
			}
			again, err := a.Value(out)
			require.NoError(t, err, "%s: %s -> %s", a.Name, in, out)
			require.Equal(t, string(out), string(again), "%s: %s", a.Name, in)
		}
	})
}
