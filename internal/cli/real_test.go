package cli_test

import (
	"bufio"
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"
	"unicode"

	"github.com/stretchr/testify/require"

	"github.com/sgam-dev/sgam"
	"github.com/sgam-dev/sgam/internal/cli"
	"github.com/sgam-dev/sgam/internal/llamatest"
	"github.com/sgam-dev/sgam/recall"
)

// These tests run the command line against llama.cpp's llama-server with
// real models (package llamatest; they skip without its setup). They
// assert what sgam guarantees whatever a model answers, never what a
// 135M-parameter model happens to extract.

// realTripTypes are the declared attributes of testdata/real/trip.schema.yaml
// and their types, with the built-in alias.
var realTripTypes = map[string]string{
	"destination": "string", "departure_date": "date", "travellers": "integer",
	"hotel_budget": "number", "vegetarian": "boolean", "alias": "string",
}

// TestRealConversation: a ten-turn conversation (a user planning a trip,
// correcting the departure date once) through schema apply, ingest with
// the real instruct model, and recall. Whatever the model answers: every
// episode's extraction ends with exactly one record, which the summary
// counts; every stored fact is the tenant's, cites episodes of the
// conversation that hold its quote, and has a declared attribute and a
// value of its type; check passes; another tenant sees nothing; recall
// presents as current only the values current at its instants and cites
// only the conversation's episodes.
func TestRealConversation(t *testing.T) {
	// Two slots, worked by two workers: a small model decodes two answers
	// at once in little more time than one, and no request waits for a
	// slot while its timeout runs.
	chat := llamatest.Chat(t, "-np", "2")
	realConversation(t, chat.URL, chat.Model)
}

// realConversation is TestRealConversation with the model server at url:
// the small model writes no fact (its answers loop until max_tokens), so
// the checks of facts were proved by running this with llmtest's fake
// answering each turn's fact.
func realConversation(t *testing.T, url, model string) {
	t.Setenv("SGAM_LLM_BASE_URL", url)
	t.Setenv("SGAM_LLM_MODEL", model)
	// An answer of one update takes the small model about 115 tokens: 160
	// hold it, and cut off within seconds the run of updates it loops into
	// (a cut answer fails its attempt, as one that reaches max_tokens must).
	t.Setenv("SGAM_LLM_MAX_TOKENS", "160")
	t.Setenv("SGAM_LLM_TIMEOUT", "90s")
	t.Setenv("SGAM_LLM_ATTEMPTS", "2")
	t.Setenv("SGAM_EMBED_BASE_URL", "")
	t.Setenv("SGAM_EMBED_MODEL", "")
	const tenant, other = "noa-co", "globex"
	db := filepath.Join(t.TempDir(), "t.db")
	run := func(args ...string) result {
		t.Helper()
		return sgamRun(t, "", append([]string{"--db", db, "--tenant", tenant}, args...)...)
	}
	runOther := func(args ...string) result {
		t.Helper()
		return sgamRun(t, "", append([]string{"--db", db, "--tenant", other}, args...)...)
	}

	r := run("schema", "apply", filepath.Join("testdata", "real", "trip.schema.yaml"))
	require.Equal(t, 0, r.code, r.stderr)
	conversation := readRealEpisodes(t, filepath.Join("testdata", "real", "trip.jsonl"))
	require.Len(t, conversation, 10)
	// Another tenant's own episode, which shares words with the questions.
	r = sgamRun(t, `{"episode_id":"g1","content":"Globex: our office trip goes to Lisbon in September, hotel budget 90 euros."}`,
		"--db", db, "--tenant", other, "ingest", "-", "--no-extract")
	require.Equal(t, 0, r.code, r.stderr)

	// As many workers as the server has slots. One attempt per job: one
	// record per episode, whatever fails.
	start := time.Now()
	r = run("--json", "ingest", filepath.Join("testdata", "real", "trip.jsonl"), "--workers", "2", "--max-attempts", "1")
	t.Logf("ingest took %s: %s%s", time.Since(start).Round(time.Millisecond), r.stdout, r.stderr)
	var ing struct {
		Captured   int `json:"captured"`
		Queued     int `json:"queued"`
		BadLines   int `json:"bad_lines"`
		Extraction struct {
			Episodes int            `json:"episodes"`
			Ended    int            `json:"ended"`
			Failed   int            `json:"failed"`
			Facts    int            `json:"facts_written"`
			Pending  int            `json:"pending"`
			Rejected map[string]int `json:"rejected"`
			Calls    int            `json:"model_calls"`
			Tokens   int            `json:"tokens"`
		} `json:"extraction"`
	}
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &ing), r.stdout)
	require.Equal(t, 10, ing.Captured)
	require.Equal(t, 10, ing.Queued)
	require.Zero(t, ing.BadLines)
	sum := ing.Extraction
	require.Equal(t, 10, sum.Episodes)
	require.Equal(t, 10, sum.Ended, "every episode's extraction ended")
	if sum.Failed == 0 {
		require.Equal(t, 0, r.code, r.stderr)
	} else {
		// A model that fails is reported, not hidden: exit 1, and how to retry.
		require.Equal(t, cli.ExitFailure, r.code, r.stderr)
		require.Contains(t, r.stderr, "extractions failed after their retries")
	}

	// One record per episode, ended, by the model asked; the summary is
	// their sum.
	records := map[string]sgam.Extraction{}
	var failed, written, pending, calls, tokens int
	rejected := map[string]int{}
	for id, ep := range conversation {
		r := run("--json", "episode", "show", id)
		require.Equal(t, 0, r.code, r.stderr)
		var shown struct {
			sgam.Episode
			Extractions []sgam.Extraction `json:"extractions"`
		}
		require.NoError(t, json.Unmarshal([]byte(r.stdout), &shown))
		require.Equal(t, ep.Content, shown.Content)
		require.Equal(t, tenant, shown.Tenant)
		require.Len(t, shown.Extractions, 1, "%s: one extraction record", id)
		rec := shown.Extractions[0]
		records[id] = rec
		require.Equal(t, tenant, rec.Tenant)
		require.Equal(t, id, rec.EpisodeID)
		require.Equal(t, model, rec.Model)
		require.Contains(t, []string{sgam.ExtractionDone, sgam.ExtractionRejected, sgam.ExtractionFailed}, rec.Status)
		require.GreaterOrEqual(t, rec.Calls, 1, "%s: the model was asked", id)
		require.Greater(t, rec.TokensIn, 0, "%s", id)
		if rec.Status == sgam.ExtractionFailed {
			failed++
			require.NotEmpty(t, rec.Error, "%s: a failure says why", id)
			require.True(t, rec.GaveUp, "%s: the job's one attempt", id)
			require.Empty(t, rec.Accepted, "%s: a failed extraction writes nothing", id)
		}
		for _, c := range rec.Accepted {
			switch c.Outcome {
			case sgam.OutcomeWritten:
				written++
			case sgam.OutcomePending:
				pending++
			}
		}
		for _, rj := range rec.Rejected {
			rejected[rj.Reason]++
		}
		calls += rec.Calls
		tokens += rec.TokensIn + rec.TokensOut
		t.Logf("%s %s: %d accepted, %d rejected, %d tokens out; %s", id, rec.Status, len(rec.Accepted), len(rec.Rejected), rec.TokensOut, rec.Error)
	}
	require.Equal(t, failed, sum.Failed)
	require.Equal(t, written, sum.Facts)
	require.Equal(t, pending, sum.Pending)
	require.Equal(t, calls, sum.Calls)
	require.Equal(t, tokens, sum.Tokens)
	for reason, n := range rejected {
		require.Equal(t, n, sum.Rejected[reason], reason)
	}

	// Every fact row of the store (export: every tenant's): the tenant's,
	// from the conversation, grounded in its source's words, of a declared
	// attribute and a valid value.
	r = sgamRun(t, "", "--db", db, "export")
	require.Equal(t, 0, r.code, r.stderr)
	facts := exportedFacts(t, r.stdout)
	t.Logf("%d fact rows stored", len(facts))
	type key struct{ subject, attribute string }
	keys := map[key]bool{}
	for _, f := range facts {
		require.Equal(t, tenant, f.Tenant, "fact %d", f.ID)
		require.Contains(t, realTripTypes, f.Attribute, "fact %d: a declared attribute", f.ID)
		if !f.Tombstone {
			requireRealValue(t, realTripTypes[f.Attribute], f.Value, "fact %d", f.ID)
		}
		keys[key{f.Subject, f.Attribute}] = true
		require.NotEmpty(t, f.Sources, "fact %d", f.ID)
		for _, src := range f.Sources {
			ep, ok := conversation[src]
			require.True(t, ok, "fact %d cites %s, not an episode of the conversation", f.ID, src)
			// The record of the source holds the candidate, and its quote
			// is the episode's words.
			found := false
			for _, c := range records[src].Accepted {
				if c.Subject != f.Subject || c.Attribute != f.Attribute {
					continue
				}
				if !f.Tombstone && !bytes.Equal(c.Value, f.Value) && !bytes.Equal(c.Value, f.Member) {
					continue
				}
				require.True(t, quoteIn(c.Evidence, ep.Content), "fact %d: quote %q not in %s: %q", f.ID, c.Evidence, src, ep.Content)
				found = true
			}
			require.True(t, found, "fact %d (%s.%s = %s): no accepted candidate of %s states it", f.ID, f.Subject, f.Attribute, f.Value, src)
		}
	}
	r = sgamRun(t, "", "--db", db, "check")
	require.Equal(t, 0, r.code, r.stdout+r.stderr)

	// The other tenant sees nothing of it: not an episode, not a value.
	for id := range conversation {
		r := runOther("episode", "show", id)
		require.Equal(t, cli.ExitFailure, r.code, "%s: %s", id, r.stdout)
	}
	for _, k := range append([]key{{"noa", "departure_date"}, {"noa", "destination"}}, mapKeys(keys)...) {
		r := runOther("get", k.subject, k.attribute)
		require.Equal(t, 0, r.code, r.stderr)
		require.Equal(t, "(no value)\n", r.stdout, "%s.%s", k.subject, k.attribute)
		r = runOther("--json", "history", k.subject, k.attribute)
		require.Equal(t, 0, r.code, r.stderr)
		var hist []sgam.Fact
		require.NoError(t, json.Unmarshal([]byte(r.stdout), &hist))
		require.Empty(t, hist, "%s.%s", k.subject, k.attribute)
	}

	questions := []struct {
		q    string
		args []string
	}{
		{"When does Noa leave for Lisbon?", nil},
		{"How many travellers go on the trip?", nil},
		{"What is the hotel budget per night?", nil},
		{"Is Noa vegetarian?", []string{"--subject", "noa"}},
	}
	ids := mapKeys(conversation)
	for _, q := range questions {
		ctx := realRecall(t, db, tenant, q.q, q.args...)
		t.Logf("%s: %d facts, %d evidence episodes", q.q, len(ctx.Facts), len(ctx.Evidence))
		require.Equal(t, "lexical", ctx.Search, q.q)
		require.NotEmpty(t, ctx.Evidence, "%s: the conversation's words are found", q.q)
		for _, ev := range ctx.Evidence {
			require.Contains(t, ids, ev.EpisodeID, "%s: cites only the conversation", q.q)
		}
		requireCitesOnly(t, ctx.Rendered, ids, q.q)
		for _, f := range slices.Concat(ctx.Facts, ctx.Related) {
			require.Equal(t, tenant, f.Tenant, q.q)
			for _, src := range f.Sources {
				require.Contains(t, ids, src, q.q)
			}
			if f.Quote != "" {
				require.True(t, slices.ContainsFunc(f.Sources, func(src string) bool { return quoteIn(f.Quote, conversation[src].Content) }),
					"%s: fact %d's quote %q is none of its sources' words", q.q, f.ID, f.Quote)
			}
			if f.Status == recall.Current {
				requireCurrent(t, db, tenant, f.Fact, ctx.AsOf, ctx.KnownAt)
			}
		}
		// The block as printed is the JSON's, cited the same way.
		r := run(append([]string{"recall", q.q}, q.args...)...)
		require.Equal(t, 0, r.code, r.stderr)
		require.True(t, strings.HasPrefix(r.stdout, "Question: "+q.q+"\n"), r.stdout)
		requireCitesOnly(t, r.stdout, ids, q.q)

		// The other tenant's recall finds its own episode only.
		octx := realRecall(t, db, other, q.q, q.args...)
		require.Empty(t, octx.Facts, q.q)
		require.Empty(t, octx.Related, q.q)
		for _, ev := range octx.Evidence {
			require.Equal(t, "g1", ev.EpisodeID, q.q)
		}
		requireCitesOnly(t, octx.Rendered, []string{"g1"}, q.q)
	}
}

// TestRealEmbeddings: episodes captured without extraction get vectors of
// the real sentence-embedding model from the worker; recall then searches
// by vector too and finds an episode by its meaning alone; forgetting the
// episode drops its vector; another tenant's recall never sees it; and a
// change of model embeds every episode again under the new name, dropping
// the old vectors.
func TestRealEmbeddings(t *testing.T) {
	emb := llamatest.Embed(t)
	// The workers run only where an extraction model is configured
	// (docs/recall.md); nothing here is queued for extraction, so it is
	// never asked.
	t.Setenv("SGAM_LLM_BASE_URL", emb.URL)
	t.Setenv("SGAM_LLM_MODEL", "never-asked")
	t.Setenv("SGAM_EMBED_BASE_URL", emb.URL)
	t.Setenv("SGAM_EMBED_MODEL", emb.Model)
	const tenant, other = "pets", "neighbours"
	db := filepath.Join(t.TempDir(), "t.db")

	// MiniLM ranks the kitten first for the pet question and the flight
	// for the journey question (by far: 0.48 and 0.54 against at most
	// 0.15), and neither question shares a word with any episode.
	const (
		petQ     = "What pet joined this household recently?"
		journeyQ = "Which aircraft journey ran late?"
	)
	lines := []string{
		`{"episode_id":"kitten","content":"We adopted a tabby kitten from the shelter on Saturday.","occurred_at":"2026-05-02T10:00:00Z"}`,
		`{"episode_id":"taxes","content":"The quarterly tax forms are due at the end of the month.","occurred_at":"2026-05-03T10:00:00Z"}`,
		`{"episode_id":"tyres","content":"My car needs new tyres before winter.","occurred_at":"2026-05-04T10:00:00Z"}`,
		`{"episode_id":"dinner","content":"We booked a table at the Italian restaurant for Friday.","occurred_at":"2026-05-05T10:00:00Z"}`,
		`{"episode_id":"printer","content":"The printer on floor three is jammed again.","occurred_at":"2026-05-06T10:00:00Z"}`,
		`{"episode_id":"flight","content":"Our flight to Tokyo was delayed by four hours.","occurred_at":"2026-05-07T10:00:00Z"}`,
		`{"episode_id":"dentist","content":"The dentist moved my appointment to Tuesday morning.","occurred_at":"2026-05-08T10:00:00Z"}`,
	}
	var contents []string
	for _, l := range lines {
		var e struct{ Content string }
		require.NoError(t, json.Unmarshal([]byte(l), &e))
		contents = append(contents, e.Content)
	}
	for _, q := range []string{petQ, journeyQ} {
		for _, c := range contents {
			require.Empty(t, sharedWords(q, c), "%q and %q", q, c)
		}
	}
	r := sgamRun(t, strings.Join(lines, "\n"), "--db", db, "--tenant", tenant, "ingest", "-", "--no-extract")
	require.Equal(t, 0, r.code, r.stderr)
	require.Contains(t, r.stderr, "captured 7 episodes (7 new, 0 already there), 0 queued")
	r = sgamRun(t, `{"episode_id":"n1","content":"The hedge along the fence needs trimming.","occurred_at":"2026-05-02T11:00:00Z"}`,
		"--db", db, "--tenant", other, "ingest", "-", "--no-extract")
	require.Equal(t, 0, r.code, r.stderr)
	all := map[string]int{tenant: 7, other: 1}

	// Before the workers embed anything, recall says it searched by words.
	ctx := realRecall(t, db, tenant, petQ)
	require.Equal(t, "lexical", ctx.Search)
	require.NotEmpty(t, ctx.Warnings)
	require.Contains(t, ctx.Warnings[0], "no episode of this tenant has a vector of model "+emb.Model)
	require.False(t, slices.ContainsFunc(ctx.Evidence, func(e recall.Evidence) bool { return e.EpisodeID == "kitten" }),
		"the question shares no word with the kitten: %+v", ctx.Evidence)

	start := time.Now()
	runWorkerUntil(t, db, func(v []storedVector) bool { return maps.Equal(countVectors(v, emb.Model), all) })
	t.Logf("embedding 8 episodes took %s", time.Since(start).Round(time.Millisecond))
	for _, v := range storedVectors(t, db) {
		require.Equal(t, llamatest.EmbedDims, v.dims, "%+v", v)
	}

	// By meaning: the nearest first, with no word in common.
	for _, c := range []struct{ q, want string }{{petQ, "kitten"}, {journeyQ, "flight"}} {
		ctx := realRecall(t, db, tenant, c.q)
		require.Equal(t, "lexical+vector ("+llamatest.EmbedModel+")", ctx.Search)
		require.Empty(t, ctx.Warnings)
		require.NotEmpty(t, ctx.Evidence, c.q)
		require.Equal(t, c.want, ctx.Evidence[0].EpisodeID, "%s: %+v", c.q, ctx.Evidence)
		// Another tenant's vectors answer from its own episodes only.
		octx := realRecall(t, db, other, c.q)
		require.Equal(t, "lexical+vector ("+llamatest.EmbedModel+")", octx.Search)
		for _, ev := range octx.Evidence {
			require.Equal(t, "n1", ev.EpisodeID, c.q)
		}
	}

	// Forgetting the kitten deletes its vector; recall no longer finds it.
	r = sgamRun(t, "", "--db", db, "--tenant", tenant, "forget", "--episode", "kitten")
	require.Equal(t, 0, r.code, r.stderr)
	for _, v := range storedVectors(t, db) {
		require.False(t, v.tenant == tenant && v.episode == "kitten", "%+v", v)
	}
	all[tenant]--
	require.Equal(t, all, countVectors(storedVectors(t, db), emb.Model))
	ctx = realRecall(t, db, tenant, petQ)
	require.Equal(t, "lexical+vector ("+llamatest.EmbedModel+")", ctx.Search)
	for _, ev := range ctx.Evidence {
		require.NotEqual(t, "kitten", ev.EpisodeID)
	}
	require.NotContains(t, ctx.Rendered, "kitten")

	// Another model (the server answers any name): every episode is
	// embedded again under it, and the old model's vectors go.
	const renamed = "other-embedder"
	t.Setenv("SGAM_EMBED_MODEL", renamed)
	ctx = realRecall(t, db, tenant, journeyQ)
	require.Equal(t, "lexical", ctx.Search, "nothing is embedded under %s yet", renamed)
	start = time.Now()
	runWorkerUntil(t, db, func(v []storedVector) bool {
		return maps.Equal(countVectors(v, renamed), all) && len(countVectors(v, emb.Model)) == 0
	})
	t.Logf("embedding again under %s took %s", renamed, time.Since(start).Round(time.Millisecond))
	ctx = realRecall(t, db, tenant, journeyQ)
	require.Equal(t, "lexical+vector ("+renamed+")", ctx.Search)
	require.Equal(t, "flight", ctx.Evidence[0].EpisodeID, "%+v", ctx.Evidence)
	r = sgamRun(t, "", "--db", db, "check")
	require.Equal(t, 0, r.code, r.stdout+r.stderr)
}

// readRealEpisodes reads the episodes of a JSONL file by id.
func readRealEpisodes(t *testing.T, path string) map[string]sgam.Episode {
	t.Helper()
	f, err := os.Open(path)
	require.NoError(t, err)
	defer f.Close()
	out := map[string]sgam.Episode{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var e sgam.Episode
		require.NoError(t, json.Unmarshal(sc.Bytes(), &e))
		out[e.ID] = e
	}
	require.NoError(t, sc.Err())
	return out
}

// exportedFact is a fact line of `sgam export`.
type exportedFact struct {
	sgam.Fact
	Source   string `json:"source"`
	Evidence []struct {
		EpisodeID string `json:"episode_id"`
	} `json:"evidence"`
}

// exportedFacts reads the fact rows of an export, with their sources.
func exportedFacts(t *testing.T, export string) []exportedFact {
	t.Helper()
	var out []exportedFact
	for _, line := range strings.Split(strings.TrimSpace(export), "\n") {
		var typ struct{ Type string }
		require.NoError(t, json.Unmarshal([]byte(line), &typ), line)
		if typ.Type != "fact" {
			continue
		}
		var f exportedFact
		require.NoError(t, json.Unmarshal([]byte(line), &f), line)
		f.Sources = []string{f.Source}
		for _, e := range f.Evidence {
			f.Sources = append(f.Sources, e.EpisodeID)
		}
		out = append(out, f)
	}
	return out
}

// requireRealValue fails unless v is a canonical value of type typ.
func requireRealValue(t *testing.T, typ string, v json.RawMessage, msgAndArgs ...any) {
	t.Helper()
	var x any
	require.NoError(t, json.Unmarshal(v, &x), msgAndArgs...)
	switch typ {
	case "string":
		require.IsType(t, "", x, msgAndArgs...)
	case "date":
		s, ok := x.(string)
		require.True(t, ok, msgAndArgs...)
		_, err := time.Parse(time.DateOnly, s)
		require.NoError(t, err, msgAndArgs...)
	case "integer":
		n, ok := x.(float64)
		require.True(t, ok && n == float64(int64(n)), msgAndArgs...)
	case "number":
		require.IsType(t, float64(0), x, msgAndArgs...)
	case "boolean":
		require.IsType(t, true, x, msgAndArgs...)
	default:
		t.Fatalf("no type %s", typ)
	}
}

// quoteIn says whether quote occurs in content, compared as grounding
// compares (docs/extraction.md): ignoring case, runs of white space,
// typographic quotes and dashes.
func quoteIn(quote, content string) bool {
	norm := func(s string) string {
		s = strings.NewReplacer("‘", "'", "’", "'", "“", `"`, "”", `"`, "–", "-", "—", "-", "−", "-").Replace(strings.ToLower(s))
		return strings.Join(strings.Fields(s), " ")
	}
	q := norm(quote)
	return q != "" && strings.Contains(norm(content), q)
}

// sharedWords are the words (any, stop words too) a and b have in common.
func sharedWords(a, b string) []string {
	split := func(s string) []string {
		return strings.FieldsFunc(strings.ToLower(s), func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) })
	}
	var out []string
	bw := split(b)
	for _, w := range split(a) {
		if slices.Contains(bw, w) {
			out = append(out, w)
		}
	}
	return out
}

func mapKeys[K comparable, V any](m map[K]V) []K {
	out := make([]K, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	return out
}

// realRecall runs recall --json.
func realRecall(t *testing.T, db, tenant, question string, args ...string) recall.Context {
	t.Helper()
	r := sgamRun(t, "", append([]string{"--db", db, "--tenant", tenant, "--json", "recall", question}, args...)...)
	require.Equal(t, 0, r.code, r.stderr)
	var ctx recall.Context
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &ctx), r.stdout)
	return ctx
}

var (
	citedEpisode = regexp.MustCompile(`(?m)^- (\S+) \| \d{4}-\d\d-\d\dT`)
	citedSources = regexp.MustCompile(`\| sources ([^|\n]+)`)
)

// requireCitesOnly fails unless every episode the rendered block cites
// (as evidence, or as a fact's source) is one of ids.
func requireCitesOnly(t *testing.T, rendered string, ids []string, msg string) {
	t.Helper()
	for _, m := range citedEpisode.FindAllStringSubmatch(rendered, -1) {
		require.Contains(t, ids, m[1], "%s: %s", msg, rendered)
	}
	for _, m := range citedSources.FindAllStringSubmatch(rendered, -1) {
		for _, id := range strings.Split(strings.TrimSpace(m[1]), ", ") {
			require.Contains(t, ids, id, "%s: %s", msg, rendered)
		}
	}
}

// requireCurrent fails unless f is, by the key's history, the row that
// holds at asOf as believed at knownAt: recorded by then, not retracted
// by then, valid at asOf, and the latest such row of its key.
func requireCurrent(t *testing.T, db, tenant string, f sgam.Fact, asOf, knownAt time.Time) {
	t.Helper()
	r := sgamRun(t, "", "--db", db, "--tenant", tenant, "--json", "history", f.Subject, f.Attribute)
	require.Equal(t, 0, r.code, r.stderr)
	var hist []sgam.Fact
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &hist))
	holds := func(h sgam.Fact) bool {
		return !h.RecordedAt.After(knownAt) && (h.RetractedAt == nil || h.RetractedAt.After(knownAt)) &&
			!h.ValidFrom.After(asOf) && (h.ValidTo == nil || h.ValidTo.After(asOf))
	}
	var found bool
	for _, h := range hist {
		if h.ID == f.ID {
			found = true
			require.True(t, holds(h), "fact %d is presented as current but its history says %+v", f.ID, h)
		} else if bytes.Equal(h.Member, f.Member) {
			require.False(t, holds(h), "fact %d is presented as current but %d holds too: %+v", f.ID, h.ID, h)
		}
	}
	require.True(t, found, "fact %d is not in the history of %s.%s", f.ID, f.Subject, f.Attribute)
}

// storedVector is a row of the SQLite store's embeddings table.
type storedVector struct {
	tenant, model, episode string
	dims                   int
}

// storedVectors reads the embeddings table: what the store keeps.
func storedVectors(t *testing.T, db string) []storedVector {
	t.Helper()
	raw, err := sql.Open("sqlite", db+"?_pragma=busy_timeout(10000)&mode=ro")
	require.NoError(t, err)
	defer raw.Close()
	rows, err := raw.Query(`SELECT tenant, model, episode_id, dims FROM embeddings WHERE length(vector) = 4 * dims`)
	require.NoError(t, err)
	defer rows.Close()
	var out []storedVector
	for rows.Next() {
		var v storedVector
		require.NoError(t, rows.Scan(&v.tenant, &v.model, &v.episode, &v.dims))
		out = append(out, v)
	}
	require.NoError(t, rows.Err())
	return out
}

// countVectors counts the vectors of model by tenant.
func countVectors(vs []storedVector, model string) map[string]int {
	out := map[string]int{}
	for _, v := range vs {
		if v.model == model {
			out[v.tenant]++
		}
	}
	return out
}

// runWorkerUntil runs `sgam worker` in process until done holds of the
// stored vectors, then stops it as SIGINT would.
func runWorkerUntil(t *testing.T, db string, done func([]storedVector) bool) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var out, errb syncBuffer
	exit := make(chan int, 1)
	go func() {
		exit <- cli.Main(ctx, []string{"--db", db, "worker", "--workers", "1"}, strings.NewReader(""), &out, &errb)
	}()
	deadline := time.Now().Add(2 * time.Minute)
	for !done(storedVectors(t, db)) {
		select {
		case code := <-exit:
			t.Fatalf("the worker ended (exit %d) before the episodes were embedded: %s%s", code, out.String(), errb.String())
		default:
		}
		if time.Now().After(deadline) {
			cancel()
			<-exit
			t.Fatalf("the worker did not embed the episodes in time; stored %+v; its output: %s%s", storedVectors(t, db), out.String(), errb.String())
		}
		time.Sleep(100 * time.Millisecond)
	}
	cancel()
	require.Equal(t, 0, <-exit, "%s%s", out.String(), errb.String())
	require.NotContains(t, errb.String(), "level=WARN", "the worker warned")
	require.NotContains(t, errb.String(), "level=ERROR", "the worker failed")
}
