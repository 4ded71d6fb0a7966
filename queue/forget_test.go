package queue_test

import (
	"bytes"
	"context"
	"database/sql"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sgam-dev/sgam"
	"github.com/sgam-dev/sgam/extract"
	"github.com/sgam-dev/sgam/internal/pgtest"
	"github.com/sgam-dev/sgam/llm"
	"github.com/sgam-dev/sgam/llm/llmtest"
	"github.com/sgam-dev/sgam/queue"
	"github.com/sgam-dev/sgam/store/postgres"
	"github.com/sgam-dev/sgam/store/sqlite"
)

// Markers of what a forget must remove from every copy: the forgotten
// episode's id (River's job rows name it), the value only it said (the
// prompt of a later episode of another session showed it), and a word of
// its content (a failed attempt's server message quoted it).
const (
	goneID    = "ep-gone-x7k2q"
	goneValue = "zanzibar-v9m4w"
	goneWord  = "quokka-w3p8r"
	keptID    = "ep-kept-b5n1c"
)

// forgetStory extracts, through the queue, an episode that alone says
// mira's city (its first attempt failing with a server message that
// quotes it) and, in another session, a later one whose prompt shows that
// city; then forgets the first and compacts.
func forgetStory(t *testing.T, st queue.Store, open func(x *extract.Extractor) *queue.Queue, forget func(sgam.ForgetRequest), compact func()) {
	t.Helper()
	ctx := context.Background()
	first := "mira lives in " + goneValue + ". " + goneWord
	fake := llmtest.New(t, "m", func(c llmtest.Call) llmtest.Reply {
		if c.Episode() == first {
			return llmtest.Reply{Updates: []llmtest.Update{{Evidence: "mira lives in " + goneValue, Subject: "mira", Attribute: "city", Change: "new", Value: llmtest.S(goneValue)}}}
		}
		return llmtest.Reply{Updates: []llmtest.Update{}}
	})
	fake.Fault(llmtest.Reply{Status: 503})
	fake.ErrorMessage = "upstream failed on input: " + first
	client, err := llm.New(llm.Config{BaseURL: fake.URL, Model: "m", MaxAttempts: 1})
	require.NoError(t, err)
	q := open(extract.New(st, client))
	require.NoError(t, q.Start(ctx))
	refs := []queue.Ref{{Tenant: "acme", EpisodeID: goneID}, {Tenant: "acme", EpisodeID: keptID}}
	// One after the other: the second's prompt shows what the first wrote.
	for i, e := range []sgam.Episode{
		{Tenant: "acme", ID: goneID, Session: "s1", Content: first, Subjects: []string{"mira"}},
		{Tenant: "acme", ID: keptID, Session: "s2", Content: "mira says hello.", Subjects: []string{"mira"}},
	} {
		_, _, err := st.AddEpisodeToExtract(ctx, e, 0)
		require.NoError(t, err)
		wctx, cancel := context.WithTimeout(ctx, time.Minute)
		_, err = queue.Wait(wctx, st, refs[i:i+1], time.Time{}, 20*time.Millisecond, nil)
		cancel()
		require.NoError(t, err)
	}
	require.NoError(t, q.Stop(ctx))
	recs, err := st.Extractions(ctx, "acme", keptID)
	require.NoError(t, err)
	require.Len(t, recs, 1)
	require.Contains(t, recs[0].Prompt, goneValue, "the later prompt showed the city")

	forget(sgam.ForgetRequest{Tenant: "acme", Episode: goneID})
	recs, err = st.Extractions(ctx, "acme", keptID)
	require.NoError(t, err)
	require.Empty(t, recs, "the record that showed the city went with it")
	compact()
}

// TestForgetReachesEveryCopySQLite: after forget and compact, nothing of
// the forgotten episode is in a byte of the ledger's file or of the
// queue's beside it (River keeps job rows, which name the episode, for a
// day or a week), and the other episode's job is still there.
func TestForgetReachesEveryCopySQLite(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "f.db")
	st, err := sqlite.Open(ctx, path, sqlite.Options{})
	require.NoError(t, err)
	defer st.Close()
	_, err = st.ApplyDefaultSchema(ctx, []byte(schemaFile), false)
	require.NoError(t, err)
	forgetStory(t, st, func(x *extract.Extractor) *queue.Queue {
		q, err := queue.OpenSQLite(ctx, path, st, x, queue.Config{Workers: 1, PollInterval: 20 * time.Millisecond})
		require.NoError(t, err)
		return q
	}, func(r sgam.ForgetRequest) {
		_, err := st.Forget(ctx, r)
		require.NoError(t, err)
	}, func() { require.NoError(t, st.Compact(ctx)) })

	var all []byte
	for _, p := range []string{path, path + "-wal", queue.SQLitePath(path), queue.SQLitePath(path) + "-wal"} {
		b, err := os.ReadFile(p)
		if os.IsNotExist(err) {
			continue
		}
		require.NoError(t, err)
		all = append(all, b...)
	}
	// The ledger keeps the receipt of the forget, which names the episode
	// (docs/lifecycle.md); nothing else.
	for _, mark := range []string{goneValue, goneWord} {
		require.False(t, bytes.Contains(all, []byte(mark)), "%s is still in the files", mark)
	}
	queueBytes, err := os.ReadFile(queue.SQLitePath(path))
	require.NoError(t, err)
	require.False(t, bytes.Contains(queueBytes, []byte(goneID)), "the queue's job rows of the episode are gone")
	require.True(t, bytes.Contains(queueBytes, []byte(keptID)), "the other episode's job row is kept")
}

// TestForgetReachesEveryCopyPostgres: the same on PostgreSQL, where
// River's tables share the ledger's database: a dump of it after forget
// and compact holds nothing of the forgotten episode.
func TestForgetReachesEveryCopyPostgres(t *testing.T) {
	ctx := context.Background()
	url := pgtest.URL(t)
	st, err := postgres.Open(ctx, url, postgres.Options{})
	require.NoError(t, err)
	defer st.Close()
	_, err = st.ApplyDefaultSchema(ctx, []byte(schemaFile), false)
	require.NoError(t, err)
	forgetStory(t, st, func(x *extract.Extractor) *queue.Queue {
		q, err := queue.OpenPostgres(ctx, url, st, x, queue.Config{Workers: 1, PollInterval: 20 * time.Millisecond})
		require.NoError(t, err)
		return q
	}, func(r sgam.ForgetRequest) {
		_, err := st.Forget(ctx, r)
		require.NoError(t, err)
	}, func() { require.NoError(t, st.Compact(ctx)) })
	dump := pgtest.Dump(t, url)
	require.Contains(t, dump, "river_job", "the dump holds the queue's tables")
	require.Contains(t, dump, keptID)
	for _, mark := range []string{goneValue, goneWord} {
		require.NotContains(t, dump, mark)
	}
	// The episode's id is left only in the receipt of the forget.
	for _, line := range strings.Split(dump, "\n") {
		if strings.Contains(line, goneID) {
			require.Contains(t, line, `"receipt_id":"fg_`, "only the receipt names it: %s", line)
		}
	}
}

// TestForgetKeepsOtherTenantsJobs: forgetting an episode deletes its job
// rows and no other tenant's, though the other's episode has the same id;
// and compact deletes the job rows of an episode forgotten while the
// queue's file could not be reached (here, while it was moved away).
func TestForgetKeepsOtherTenantsJobs(t *testing.T) {
	ctx := context.Background()
	st, path := openStore(t)
	fake := llmtest.New(t, "m", script)
	client, err := llm.New(llm.Config{BaseURL: fake.URL, Model: "m"})
	require.NoError(t, err)
	q, err := queue.OpenSQLite(ctx, path, st, extract.New(st, client), queue.Config{Workers: 1, PollInterval: 20 * time.Millisecond})
	require.NoError(t, err)
	require.NoError(t, q.Start(ctx))
	var refs []queue.Ref
	for _, tenant := range []string{"acme", "globex"} {
		for _, id := range []string{"e1", "e2"} {
			_, _, err := st.AddEpisodeToExtract(ctx, sgam.Episode{Tenant: tenant, ID: id, Content: "p1 lives in c1."}, 0)
			require.NoError(t, err)
			refs = append(refs, queue.Ref{Tenant: tenant, EpisodeID: id})
		}
	}
	wctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	_, err = queue.Wait(wctx, st, refs, time.Time{}, 20*time.Millisecond, nil)
	require.NoError(t, err)
	require.NoError(t, q.Stop(ctx))

	jobs := func() []string {
		t.Helper()
		db, err := sql.Open("sqlite", queue.SQLitePath(path))
		require.NoError(t, err)
		defer db.Close()
		rows, err := db.Query(`SELECT json_extract(args, '$.tenant') || '/' || json_extract(args, '$.episode_id') FROM river_job ORDER BY 1`)
		require.NoError(t, err)
		var out []string
		for rows.Next() {
			var s string
			require.NoError(t, rows.Scan(&s))
			out = append(out, s)
		}
		require.NoError(t, rows.Err())
		return out
	}
	require.Equal(t, []string{"acme/e1", "acme/e2", "globex/e1", "globex/e2"}, jobs())

	_, err = st.Forget(ctx, sgam.ForgetRequest{Tenant: "acme", Episode: "e1"})
	require.NoError(t, err)
	require.Equal(t, []string{"acme/e2", "globex/e1", "globex/e2"}, jobs(), "the forget deleted acme's e1 and no other")

	// Forgotten while the queue's file was away: compact finds the rows.
	away := queue.SQLitePath(path) + ".away"
	require.NoError(t, os.Rename(queue.SQLitePath(path), away))
	_, err = st.Forget(ctx, sgam.ForgetRequest{Tenant: "acme", Episode: "e2"})
	require.NoError(t, err)
	require.NoError(t, os.Rename(away, queue.SQLitePath(path)))
	require.Equal(t, []string{"acme/e2", "globex/e1", "globex/e2"}, jobs())
	require.NoError(t, st.Compact(ctx))
	require.Equal(t, []string{"globex/e1", "globex/e2"}, jobs(), "compact deleted the rows of the episode gone")
}
