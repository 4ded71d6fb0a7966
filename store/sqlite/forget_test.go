package sqlite_test

import (
	"bytes"
	"database/sql"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sgam-dev/sgam"
	"github.com/sgam-dev/sgam/store/sqlite"
)

// fileBytes reads the database file and its write-ahead log, if any.
func fileBytes(t *testing.T, path string) []byte {
	t.Helper()
	var all []byte
	for _, p := range []string{path, path + "-wal"} {
		b, err := os.ReadFile(p)
		if os.IsNotExist(err) {
			continue
		}
		require.NoError(t, err)
		all = append(all, b...)
	}
	return all
}

// TestForgetErasesBytes: after Forget and Compact, forgotten values,
// episode contents and subject names are nowhere in the database's files,
// and the audit holds none of them.
func TestForgetErasesBytes(t *testing.T) {
	ctx := t.Context()
	path := filepath.Join(t.TempDir(), "sgam.db")
	s, err := sqlite.Open(ctx, path, sqlite.Options{})
	require.NoError(t, err)
	closed := false
	defer func() {
		if !closed {
			s.Close()
		}
	}()

	const (
		subject     = "subject-qv7w3"        // forgotten by subject
		valueMark   = "value-marker-k2j9x"   // a value of that subject
		contentMark = "content-marker-p5r8z" // content of an episode only it cites
		episodeMark = "episode-marker-h4m6t" // content of an episode forgotten by id
		keptMark    = "kept-marker-b3n7c"    // survives
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
	for i := range 50 { // enough rows for several pages, and history
		assert(subject, "note", valueMark, "e1", t0.Add(time.Duration(i)*time.Minute))
		assert("other", "note", keptMark, "e3", t0.Add(time.Duration(i)*time.Minute))
	}
	assert(subject, "city", "Oslo "+valueMark, "e1", t0)
	assert("other", "city", "Rome", "e2", t0)
	assert("other", "city", "Paris", "e3", t0.Add(time.Hour))

	before := fileBytes(t, path)
	require.True(t, bytes.Contains(before, []byte(valueMark)), "the test writes the marker at all")
	// The words of episodes are in the full-text index too (as terms:
	// "content-marker-p5r8z" is content, marker and p5r8z).
	for _, word := range []string{"p5r8z", "h4m6t"} {
		hits, err := s.SearchEpisodes(ctx, sgam.SearchQuery{Tenant: "acme", Text: word})
		require.NoError(t, err)
		require.Len(t, hits, 1, word)
	}

	rc, err := s.Forget(ctx, sgam.ForgetRequest{Tenant: "acme", Subject: subject})
	require.NoError(t, err)
	require.Equal(t, []string{"e1"}, rc.EpisodeIDs)
	rc2, err := s.Forget(ctx, sgam.ForgetRequest{Tenant: "acme", Episode: "e2"})
	require.NoError(t, err)
	require.Equal(t, 2, rc2.FactsDeleted, "Rome and its shortened copy")
	require.NoError(t, s.Compact(ctx))

	all := fileBytes(t, path)
	for _, mark := range []string{subject, valueMark, contentMark, episodeMark, "p5r8z", "h4m6t"} {
		require.False(t, bytes.Contains(all, []byte(mark)), "%s is still in the files", mark)
	}
	for _, word := range []string{"p5r8z", "h4m6t"} {
		hits, err := s.SearchEpisodes(ctx, sgam.SearchQuery{Tenant: "acme", Text: word})
		require.NoError(t, err)
		require.Empty(t, hits, word)
	}
	require.True(t, bytes.Contains(all, []byte(keptMark)), "what was not forgotten is still there")

	receipts, err := s.Receipts(ctx, "acme")
	require.NoError(t, err)
	require.Len(t, receipts, 2)
	js, err := json.Marshal(receipts)
	require.NoError(t, err)
	for _, mark := range []string{subject, valueMark, contentMark, episodeMark} {
		require.NotContains(t, string(js), mark)
	}
	v, err := s.Check(ctx)
	require.NoError(t, err)
	require.Empty(t, v)
	f, err := s.Get(ctx, sgam.Key{Tenant: "acme", Subject: "other", Attribute: "city"}, sgam.At{AsOf: t0.Add(time.Minute)})
	require.NoError(t, err)
	require.Nil(t, f, "Rome's window is empty: it was the first value")

	// Closing and reopening finds the same.
	closed = true
	require.NoError(t, s.Close())
	all = fileBytes(t, path)
	for _, mark := range []string{subject, valueMark, contentMark, episodeMark, "p5r8z", "h4m6t"} {
		require.False(t, bytes.Contains(all, []byte(mark)), "%s is in the files after close", mark)
	}
	// The index's terms, read through fts5vocab: the forgotten words are
	// not in it (a term can be stored prefix-compressed, so the bytes
	// alone would not prove it), the kept one is.
	db, err := sql.Open("sqlite", path)
	require.NoError(t, err)
	defer db.Close()
	_, err = db.Exec(`CREATE VIRTUAL TABLE temp.terms USING fts5vocab(main, search_fts, 'row')`)
	require.NoError(t, err)
	rows, err := db.Query(`SELECT term FROM temp.terms`)
	require.NoError(t, err)
	var terms []string
	for rows.Next() {
		var term string
		require.NoError(t, rows.Scan(&term))
		terms = append(terms, term)
	}
	require.NoError(t, rows.Err())
	require.NotContains(t, terms, "p5r8z")
	require.NotContains(t, terms, "h4m6t")
	require.Contains(t, terms, "b3n7c")
}

// TestExpireInBatches: a backlog larger than one expiry transaction is
// expired in several, each with its receipt, until nothing is left.
func TestExpireInBatches(t *testing.T) {
	ctx := t.Context()
	clock := &sgam.ManualClock{}
	day0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	clock.Set(day0)
	s, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "sgam.db"), sqlite.Options{Clock: clock})
	require.NoError(t, err)
	defer s.Close()
	_, err = s.ApplyDefaultSchema(ctx, []byte("retention: {session: 1d}\nattributes:\n  note: {memory: task, type: string}\n"), false)
	require.NoError(t, err)
	const n = 2050
	var as []sgam.Assertion
	for i := range n {
		id := fmt.Sprintf("e%05d", i)
		_, err := s.AddEpisode(ctx, sgam.Episode{Tenant: "acme", ID: id, Content: "x", Retention: "session"})
		require.NoError(t, err)
		as = append(as, sgam.Assertion{Key: sgam.Key{Tenant: "acme", Subject: fmt.Sprintf("s%d", i%7), Attribute: "note"},
			Value: []byte(fmt.Sprintf(`"v%d"`, i)), ValidFrom: day0.Add(time.Duration(i) * time.Minute), Source: id})
	}
	_, err = s.AssertMany(ctx, as)
	require.NoError(t, err)
	clock.Set(day0.Add(48 * time.Hour))
	rcs, err := s.Expire(ctx)
	require.NoError(t, err)
	require.Len(t, rcs, 3)
	total := 0
	for _, rc := range rcs {
		total += rc.EpisodesDeleted
		require.LessOrEqual(t, rc.EpisodesDeleted, 1000)
	}
	require.Equal(t, n, total)
	eps, err := s.Episodes(ctx, sgam.EpisodeQuery{Tenant: "acme"})
	require.NoError(t, err)
	require.Empty(t, eps)
	v, err := s.Check(ctx)
	require.NoError(t, err)
	require.Empty(t, v)
	receipts, err := s.Receipts(ctx, "acme")
	require.NoError(t, err)
	require.Len(t, receipts, 3)
}
