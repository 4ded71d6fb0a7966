package postgres_test

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/sgam-dev/sgam"
	"github.com/sgam-dev/sgam/internal/pgtest"
	"github.com/sgam-dev/sgam/store/postgres"
)

// TestForgetLeavesNoContent: after Forget and Compact, no row of any sgam
// table, read as text with every tenant in scope, holds a forgotten value,
// episode content or subject name, and the audit holds none of them.
func TestForgetLeavesNoContent(t *testing.T) {
	ctx := t.Context()
	url := pgtest.URL(t)
	s, err := postgres.Open(ctx, url, postgres.Options{})
	require.NoError(t, err)
	defer s.Close()

	const (
		subject     = "subject-qv7w3"
		valueMark   = "value-marker-k2j9x"
		contentMark = "content-marker-p5r8z"
		episodeMark = "episode-marker-h4m6t"
		keptMark    = "kept-marker-b3n7c"
	)
	add := func(id, content string) {
		_, err := s.AddEpisode(ctx, sgam.Episode{Tenant: "acme", ID: id, Content: content})
		require.NoError(t, err)
	}
	assert := func(subject, attr, value, source string, at time.Time) {
		v, _ := json.Marshal(value)
		_, err := s.Assert(ctx, sgam.Assertion{Key: sgam.Key{Tenant: "acme", Subject: subject, Attribute: attr}, Value: v, ValidFrom: at, Source: source})
		require.NoError(t, err)
	}
	t0 := time.Now().Add(-24 * time.Hour).UTC()
	add("e1", "the user said "+contentMark)
	add("e2", "the tool said "+episodeMark)
	add("e3", "the user said "+keptMark)
	for i := range 5 {
		assert(subject, "note", valueMark, "e1", t0.Add(time.Duration(i)*time.Minute))
		assert("other", "note", keptMark, "e3", t0.Add(time.Duration(i)*time.Minute))
	}
	assert("other", "city", "Rome", "e2", t0)
	assert("other", "city", "Paris", "e3", t0.Add(time.Hour))

	rc, err := s.Forget(ctx, sgam.ForgetRequest{Tenant: "acme", Subject: subject})
	require.NoError(t, err)
	require.Equal(t, []string{"e1"}, rc.EpisodeIDs)
	_, err = s.Forget(ctx, sgam.ForgetRequest{Tenant: "acme", Episode: "e2"})
	require.NoError(t, err)
	require.NoError(t, s.Compact(ctx))

	conn, err := pgx.Connect(ctx, url)
	require.NoError(t, err)
	defer conn.Close(ctx)
	_, err = conn.Exec(ctx, `SELECT set_config('sgam.scope', 'all', false)`)
	require.NoError(t, err)
	var kept int
	for _, table := range []string{"episodes", "facts", "evidence", "search_terms", "pending", "audit", "schemas", "sgam_meta"} {
		rows, err := conn.Query(ctx, `SELECT t::text FROM `+table+` t`)
		require.NoError(t, err)
		texts, err := pgx.CollectRows(rows, pgx.RowTo[string])
		require.NoError(t, err)
		for _, text := range texts {
			for _, mark := range []string{subject, valueMark, contentMark, episodeMark} {
				require.NotContains(t, text, mark, "table %s", table)
			}
			if strings.Contains(text, keptMark) {
				kept++
			}
		}
	}
	require.Positive(t, kept, "what was not forgotten is still there")

	receipts, err := s.Receipts(ctx, "acme")
	require.NoError(t, err)
	require.Len(t, receipts, 2)
	v, err := s.Check(ctx)
	require.NoError(t, err)
	require.Empty(t, v)
}
