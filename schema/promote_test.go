package schema_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sgam-dev/sgam/schema"
)

func TestPromote(t *testing.T) {
	s, err := schema.Parse([]byte("attributes:\n  export_format: {memory: preference, type: string, promote: {after: 3, within: 30d}}\n"))
	require.NoError(t, err)
	a, _ := s.Attribute("export_format")
	require.Equal(t, &schema.Promote{After: 3, Within: 30 * 24 * time.Hour}, a.Promote)
	require.Contains(t, string(s.Canonical()), `"promote":{"after":3,"within":"30d"}`)
	plain, err := schema.Parse([]byte("attributes:\n  export_format: {memory: preference, type: string}\n"))
	require.NoError(t, err)
	require.NotContains(t, string(plain.Canonical()), "promote", "a schema without promote keeps its hash")
	require.Contains(t, schema.Diff(plain, s), "~ attribute export_format: promote none -> {after: 3, within: 30d}")

	for file, want := range map[string]string{
		"attributes:\n  f: {memory: preference, type: string, promote: {after: 1, within: 1d}}\n":                    "attributes.f.promote.after: must be between 2 and 100",
		"attributes:\n  f: {memory: preference, type: string, promote: {after: 3}}\n":                                "attributes.f.promote.within: is required",
		"attributes:\n  f: {memory: preference, type: string, promote: {within: 3d}}\n":                              "attributes.f.promote.after: is required",
		"attributes:\n  f: {memory: preference, type: string, promote: {after: x, within: 3d}}\n":                    "attributes.f.promote.after: must be a whole number",
		"attributes:\n  f: {memory: preference, type: string, promote: {after: 3, within: soon}}\n":                  "attributes.f.promote.within",
		"attributes:\n  f: {memory: preference, type: string, promote: {after: 3, within: 3d, every: 2}}\n":          `unknown key "every"`,
		"attributes:\n  f: {memory: preference, type: string, cardinality: many, promote: {after: 3, within: 3d}}\n": "applies to single-valued attributes",
	} {
		_, err := schema.Parse([]byte(file))
		require.ErrorContains(t, err, want, file)
	}
}
