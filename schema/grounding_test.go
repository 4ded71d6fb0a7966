package schema

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestInferredAndFuture: the two keys that govern what extraction accepts
// from a model parse, round-trip, show in a diff, and leave the canonical
// form (and so the hash) of a schema without them as it was.
func TestInferredAndFuture(t *testing.T) {
	t.Parallel()
	plain := mustParse(t, "attributes:\n  next_visit: {memory: task, type: date}\n")
	set := mustParse(t, "attributes:\n  next_visit: {memory: task, type: date, inferred: true, future: 90d}\n")
	a, _ := set.Attribute("next_visit")
	require.True(t, a.Inferred)
	require.Equal(t, 90*24*time.Hour, a.Future)
	require.Equal(t, `{"source_ranks":["user_confirmed","tool","event","message","inferred"],"attributes":{"next_visit":{"memory":"task","type":"date","cardinality":"one","conflict":"reject","sensitive":false}}}`,
		string(plain.Canonical()), "a schema without them keeps its canonical form and hash")
	require.Contains(t, string(set.Canonical()), `"sensitive":false,"inferred":true,"future":"90d"}`)
	requireRoundTrip(t, set)
	off := mustParse(t, "attributes:\n  next_visit: {memory: task, type: date, inferred: false}\n")
	require.Equal(t, plain.Hash(), off.Hash(), "inferred: false is the default")

	require.Equal(t, []string{"~ attribute next_visit: inferred false -> true", "~ attribute next_visit: future (default) -> 90d"}, Diff(plain, set))
	require.Equal(t, []string{"~ attribute next_visit: inferred true -> false", "~ attribute next_visit: future 90d -> (default)"}, Diff(set, plain))

	for file, want := range map[string]string{
		"attributes:\n  f: {memory: task, type: date, inferred: yes please}\n":                       `attributes.f.inferred: must be true or false, not the string "yes please"`,
		"attributes:\n  f: {memory: task, type: date, future: soon}\n":                               "attributes.f.future:",
		"attributes:\n  f: {memory: task, type: date, future: 0d}\n":                                 "attributes.f.future:",
		"attributes:\n  alias: {memory: profile, type: string, cardinality: many, inferred: true}\n": "attributes.alias.inferred: alias is built in: a name the model adds is always words of its quote",
	} {
		_, err := Parse([]byte(file))
		require.ErrorContains(t, err, want, file)
	}
}
