package queue_test

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sgam-dev/sgam"
	"github.com/sgam-dev/sgam/extract"
	"github.com/sgam-dev/sgam/llm"
	"github.com/sgam-dev/sgam/llm/llmtest"
	"github.com/sgam-dev/sgam/queue"
	"github.com/sgam-dev/sgam/store/sqlite"
)

const schemaFile = `
attributes:
  city: {memory: profile, type: string}
`

// script answers "<subject> lives in <city>." with that fact.
func script(c llmtest.Call) llmtest.Reply {
	var who, city string
	if _, err := fmt.Sscanf(c.Episode(), "%s lives in %s", &who, &city); err != nil {
		return llmtest.Reply{Updates: []llmtest.Update{}}
	}
	city = city[:len(city)-1]
	return llmtest.Reply{Updates: []llmtest.Update{{Evidence: "lives in " + city, Subject: who, Attribute: "city", Change: "new", Value: llmtest.S(city)}}}
}

func TestQueueSQLite(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "q.db")
	st, err := sqlite.Open(ctx, path, sqlite.Options{})
	require.NoError(t, err)
	defer st.Close()
	_, err = st.ApplyDefaultSchema(ctx, []byte(schemaFile), false)
	require.NoError(t, err)
	fake := llmtest.New(t, "m", script)
	model, err := llm.New(llm.Config{BaseURL: fake.URL, Model: "m"})
	require.NoError(t, err)
	q, err := queue.OpenSQLite(ctx, path, st, extract.New(st, model), queue.Config{Workers: 4, PollInterval: 50 * time.Millisecond})
	require.NoError(t, err)

	since := time.Now().Add(-time.Second)
	var refs []queue.Ref
	for i := range 100 {
		tenant := []string{"acme", "globex"}[i%2]
		e, queued, err := st.AddEpisodeToExtract(ctx, sgam.Episode{Tenant: tenant, ID: fmt.Sprintf("e%03d", i), Session: fmt.Sprintf("s%d", i%10),
			Content: fmt.Sprintf("p%03d lives in c%03d.", i, i)}, 0)
		require.NoError(t, err)
		require.True(t, queued)
		refs = append(refs, queue.Ref{Tenant: tenant, EpisodeID: e.ID})
	}
	st0, err := q.Status(ctx, "")
	require.NoError(t, err)
	require.Equal(t, 100, st0.Queued)
	require.NoError(t, q.Start(ctx))
	wctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	ended, err := queue.Wait(wctx, st, refs, since, 50*time.Millisecond, nil)
	require.NoError(t, err)
	require.NoError(t, q.Stop(ctx))
	for _, r := range refs {
		require.Equal(t, sgam.ExtractionDone, ended[r].Status, r)
	}
	require.Equal(t, 100, fake.CallCount(), "one call per episode")
	for i := range 100 {
		tenant := []string{"acme", "globex"}[i%2]
		f, err := st.Get(ctx, sgam.Key{Tenant: tenant, Subject: fmt.Sprintf("p%03d", i), Attribute: "city"}, sgam.At{})
		require.NoError(t, err)
		require.Equal(t, fmt.Sprintf(`"c%03d"`, i), string(f.Value))
		other, err := st.Get(ctx, sgam.Key{Tenant: []string{"globex", "acme"}[i%2], Subject: fmt.Sprintf("p%03d", i), Attribute: "city"}, sgam.At{})
		require.NoError(t, err)
		require.Nil(t, other)
	}
}
