package schema

import (
	"encoding/json"
	"errors"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sgam-dev/sgam"
	"github.com/sgam-dev/sgam/words"
)

// TestAliasIsBuiltIn: every schema has the attribute alias, a set of
// names in their stored form, without declaring it; one that declares it
// gives it settings of its own but cannot make it something else.
func TestAliasIsBuiltIn(t *testing.T) {
	s := mustParse(t, "attributes:\n  city: {memory: profile, type: string}\n")
	a, ok := s.Attribute(sgam.AliasAttribute)
	require.True(t, ok)
	require.Equal(t, Many, a.Cardinality)
	require.Equal(t, []string{"city", "alias"}, names(s.All()))
	require.Len(t, s.Attributes, 1, "the file's own attributes are the file's")
	b, ok := Builtin(sgam.AliasAttribute)
	require.True(t, ok)
	require.Same(t, a, b)
	_, ok = Builtin("city")
	require.False(t, ok)

	for in, want := range map[string]string{
		`"Mira Chen"`:     `"mira chen"`,
		`"  Dr. Lind's "`: `"dr lind"`,
		`"ZOË"`:           `"zoë"`,
	} {
		v, err := a.Value([]byte(in))
		require.NoError(t, err, in)
		require.Equal(t, want, string(v), in)
	}
	for in, rule := range map[string]string{
		`42`:              `type`,
		`"..."`:           `name`,
		`"a b c d e f g"`: `name`,
		`["Mira"]`:        `type`,
	} {
		_, err := a.Value([]byte(in))
		var se *sgam.Error
		require.True(t, errors.As(err, &se), in)
		require.Equal(t, rule, se.Rule, in)
		require.Equal(t, "value", se.Field, in)
	}

	own := mustParse(t, "attributes:\n  alias: {memory: profile, type: string, cardinality: many, sensitive: true, description: names}\n")
	a, ok = own.Attribute(sgam.AliasAttribute)
	require.True(t, ok)
	require.True(t, a.Sensitive)
	require.Equal(t, []string{"alias"}, names(own.All()))
	v, err := a.Value([]byte(`"Mira  CHEN"`))
	require.NoError(t, err)
	require.Equal(t, `"mira chen"`, string(v), "a declared alias keeps the stored form")

	for _, src := range []string{
		"attributes:\n  alias: {memory: profile, type: string}\n",
		"attributes:\n  alias: {memory: profile, type: integer, cardinality: many}\n",
		"attributes:\n  name: {memory: profile, type: string, aliases: [alias]}\n",
	} {
		_, err := Parse([]byte(src))
		require.ErrorContains(t, err, "alias", src)
	}
}

func TestAliasMember(t *testing.T) {
	m, ok := AliasMember("mira chen")
	require.True(t, ok)
	require.Equal(t, `"mira chen"`, m)
	for _, name := range []string{"zoë ørsted", "東京 タワー", "o brien 2", "ǅemal"} {
		m, ok := AliasMember(words.Name(name))
		require.True(t, ok, name)
		b, _ := json.Marshal(words.Name(name))
		c, err := sgam.CanonicalValue("value", b, sgam.MaxMemberBytes)
		require.NoError(t, err)
		require.Equal(t, string(c), m, "the member is the canonical JSON of %q", name)
	}
	for _, bad := range []string{"", "Mira Chen", "mira  chen", "mira."} {
		_, ok := AliasMember(bad)
		require.False(t, ok, bad)
	}
}

func names(as []*Attribute) []string {
	out := make([]string, len(as))
	for i, a := range as {
		out[i] = a.Name
	}
	return out
}
