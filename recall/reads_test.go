package recall_test

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sgam-dev/sgam"
	"github.com/sgam-dev/sgam/recall"
)

// counting is a store that counts the reads recall makes of it: by
// method, and the reads of each episode's records and content.
type counting struct {
	recall.Store
	mu      sync.Mutex
	reads   map[string]int
	byEp    map[string]int // "Extractions e1", "Episode e1"
	byAttr  map[string]int // Relation, by attribute
	subject map[string]int // State, by subject
}

func newCounting(s recall.Store) *counting {
	return &counting{Store: s, reads: map[string]int{}, byEp: map[string]int{}, byAttr: map[string]int{}, subject: map[string]int{}}
}

func (c *counting) count(method string, to map[string]int, key string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.reads[method]++
	if to != nil {
		to[key]++
	}
}

func (c *counting) total() int {
	n := 0
	for _, v := range c.reads {
		n += v
	}
	return n
}

func (c *counting) String() string {
	var parts []string
	for _, m := range slices.Sorted(maps.Keys(c.reads)) {
		parts = append(parts, fmt.Sprintf("%s %d", m, c.reads[m]))
	}
	return fmt.Sprintf("%d reads: %s", c.total(), strings.Join(parts, ", "))
}

func (c *counting) Schema(ctx context.Context, tenant string) (sgam.SchemaVersion, error) {
	c.count("Schema", nil, "")
	return c.Store.Schema(ctx, tenant)
}

func (c *counting) Relation(ctx context.Context, tenant, attribute string) (bool, bool, error) {
	c.count("Relation", c.byAttr, attribute)
	return c.Store.Relation(ctx, tenant, attribute)
}

func (c *counting) SearchEpisodes(ctx context.Context, q sgam.SearchQuery) ([]sgam.EpisodeHit, error) {
	c.count("SearchEpisodes", nil, "")
	return c.Store.SearchEpisodes(ctx, q)
}

func (c *counting) Around(ctx context.Context, tenant string, at []sgam.Episode, n int, knownAt time.Time) (map[string]sgam.Window, error) {
	c.count("Around", nil, "")
	return c.Store.Around(ctx, tenant, at, n, knownAt)
}

func (c *counting) Episodes(ctx context.Context, q sgam.EpisodeQuery) ([]sgam.Episode, error) {
	c.count("Episodes", nil, "")
	return c.Store.Episodes(ctx, q)
}

func (c *counting) Episode(ctx context.Context, tenant, id string) (sgam.Episode, error) {
	c.count("Episode", c.byEp, "Episode "+id)
	return c.Store.Episode(ctx, tenant, id)
}

func (c *counting) Extractions(ctx context.Context, tenant, id string) ([]sgam.Extraction, error) {
	c.count("Extractions", c.byEp, "Extractions "+id)
	return c.Store.Extractions(ctx, tenant, id)
}

func (c *counting) Subjects(ctx context.Context, tenant string, ids []string) ([]string, error) {
	c.count("Subjects", nil, "")
	return c.Store.Subjects(ctx, tenant, ids)
}

func (c *counting) SubjectsNamed(ctx context.Context, tenant string, names []string, at sgam.At) ([]sgam.NamedSubject, error) {
	c.count("SubjectsNamed", nil, "")
	return c.Store.SubjectsNamed(ctx, tenant, names, at)
}

func (c *counting) SubjectsFrom(ctx context.Context, tenant string, episodes []string, knownAt time.Time) ([]string, error) {
	c.count("SubjectsFrom", nil, "")
	return c.Store.SubjectsFrom(ctx, tenant, episodes, knownAt)
}

func (c *counting) Attributes(ctx context.Context, tenant, subject string) ([]string, error) {
	c.count("Attributes", nil, "")
	return c.Store.Attributes(ctx, tenant, subject)
}

func (c *counting) State(ctx context.Context, tenant, subject string, at sgam.At) ([]sgam.Fact, error) {
	c.count("State", c.subject, subject)
	return c.Store.State(ctx, tenant, subject, at)
}

func (c *counting) History(ctx context.Context, key sgam.Key) ([]sgam.Fact, error) {
	c.count("History", nil, "")
	return c.Store.History(ctx, key)
}

// profile tells, in tenant, of Mira's profile: three facts from one
// episode, one from another, and where she works, which has a city.
func (w *world) profile(tenant string) {
	w.say(tenant, "p1", "2026-06-01T09:00:00Z", "2026-06-01T09:00:00Z", "Mira: I live in Bergen, I work at Initrode and I drink green tea.", "mira", "city", `"Bergen"`)
	for attr, v := range map[string]string{"employer": `"initrode"`, "drink": `"green tea"`} {
		_, err := w.store.Assert(w.ctx, sgam.Assertion{Key: sgam.Key{Tenant: tenant, Subject: "mira", Attribute: attr},
			Value: []byte(v), ValidFrom: ts(w.t, "2026-06-01T09:00:00Z"), Source: "p1"})
		require.NoError(w.t, err)
	}
	w.say(tenant, "p2", "2026-06-02T09:00:00Z", "2026-06-02T09:00:00Z", "Mira: my best friend is Bob.", "mira", "friend", `"bob"`)
	w.say(tenant, "p3", "2026-06-03T09:00:00Z", "2026-06-03T09:00:00Z", "Initrode is based in Oslo.", "initrode", "city", `"Oslo"`)
	w.say(tenant, "p4", "2026-06-04T09:00:00Z", "2026-06-04T09:00:00Z", "Bob has a cat.", "bob", "pet", `"cat"`)
	w.clock.Set(ts(w.t, "2026-12-01T15:04:05Z"))
}

// TestReads: recall reads each episode's records once, and its content at
// most once, none of an episode it read as evidence already; each
// subject's state once; and asks the schemas at most once per attribute
// whether it is a relation. The counts of a typical question are logged.
func TestReads(t *testing.T) {
	w := newWorld(t)
	w.passport("acme")
	w.profile("acme")
	for _, q := range []recall.Query{
		{Tenant: "acme", Question: "When is Mira's passport deadline?"},
		{Tenant: "acme", Question: "What was Mira's passport deadline on June 2, 2026?"},
		{Tenant: "acme", Question: "What do we know about Mira?", EvidenceLimit: 10},
		{Tenant: "acme", Question: "What do we know about Mira?", TokenBudget: 200},
	} {
		c := newCounting(w.store)
		got, err := recall.New(c).WithClock(w.clock).Recall(w.ctx, q)
		require.NoError(t, err)
		t.Logf("%q (budget %d): %d facts, %d related, %d evidence; %s", q.Question, got.Budget, len(got.Facts), len(got.Related), len(got.Evidence), c)
		cited := map[string]bool{}
		for _, e := range got.Evidence {
			cited[e.EpisodeID] = true
		}
		for what, n := range c.byEp {
			require.Equal(t, 1, n, what)
			if id, ok := strings.CutPrefix(what, "Episode "); ok {
				require.False(t, cited[id], "%s was read as evidence already", id)
			}
		}
		for attr, n := range c.byAttr {
			require.Equal(t, 1, n, attr)
		}
		for s, n := range c.subject {
			require.Equal(t, 1, n, s)
		}
	}

	// Quotes are read only for the facts the budget can show.
	c := newCounting(w.store)
	tight, err := recall.New(c).WithClock(w.clock).Recall(w.ctx, recall.Query{Tenant: "acme", Question: "What do we know about Mira?", TokenBudget: 130, EvidenceLimit: recall.None})
	require.NoError(t, err)
	require.Positive(t, tight.Omitted.Facts+tight.Omitted.Related)
	require.LessOrEqual(t, c.reads["Extractions"], len(tight.Facts)+len(tight.Related)+1)
}

// TestRelatedAsksTheSchema: which attributes lead to related subjects is
// the tenant's schema's answer (Schemas.Relation, as Traverse asks): under
// a schema only a ref attribute does, though a string attribute's value
// names a known subject; without one, any attribute whose value is a
// known subject.
func TestRelatedAsksTheSchema(t *testing.T) {
	w := newWorld(t)
	_, err := w.store.ApplySchema(w.ctx, "shop", []byte(`attributes:
  city: {memory: profile, type: string}
  employer: {memory: profile, type: {ref: org}}
  drink: {memory: preference, type: string}
  friend: {memory: profile, type: string}
  pet: {memory: profile, type: string}
`), false)
	require.NoError(t, err)
	for _, tenant := range []string{"shop", "free"} {
		w.profile(tenant)
	}
	related := func(tenant string) []string {
		c := w.recall(recall.Query{Tenant: tenant, Question: "What do we know about Mira?", EvidenceLimit: recall.None, TokenBudget: recall.MaxBudget})
		var out []string
		for _, f := range c.Related {
			out = append(out, f.Subject+"."+f.Attribute)
		}
		return out
	}
	require.Equal(t, []string{"initrode.city"}, related("shop"), "friend is a string attribute: bob is not followed")
	require.Equal(t, []string{"initrode.city", "bob.pet"}, related("free"))
}

// TestAnsweredWithQuotesSearchesNothing: when the question names its
// subject and attribute and the facts answer it, each line quoting its
// source, no episode would be cited, so recall neither searches nor reads
// any conversation, and says so by an empty search; the facts are the
// ones a search would have given. A fact with no quote (its source is no
// episode) still brings the search. A second tenant with the same words
// is never cited.
func TestAnsweredWithQuotesSearchesNothing(t *testing.T) {
	w := newWorld(t)
	w.passport("acme")
	w.say("globex", "g1", "2026-06-03T10:00:00Z", "2026-06-03T10:00:00Z", "Mira: correction, the deadline is June 30, not July 15.", "mira", "passport_deadline", `"2026-06-30"`)
	w.clock.Set(ts(t, "2026-12-01T15:04:05Z"))
	q := recall.Query{Tenant: "acme", Question: "When is Mira's passport deadline?"}
	c := newCounting(w.store)
	got, err := recall.New(c).WithClock(w.clock).Recall(w.ctx, q)
	require.NoError(t, err)
	require.Zero(t, c.reads["SearchEpisodes"]+c.reads["Around"]+c.reads["Episodes"], c.String())
	require.Empty(t, got.Search)
	require.Empty(t, got.Evidence)
	require.Equal(t, []string{`"2026-06-30"@e2`}, values(got, recall.Current))
	require.NotEmpty(t, got.Facts[0].Quote)
	always := q
	always.Evidence = recall.EvidenceAlways
	searched := w.recall(always)
	require.Equal(t, "lexical", searched.Search)
	require.Equal(t, got.Facts, searched.Facts)
	require.NotEmpty(t, searched.Evidence)
	for _, e := range searched.Evidence {
		require.Contains(t, []string{"e0", "e1", "e2"}, e.EpisodeID)
	}

	// A value from a source that is no episode (an import) has no quote:
	// the search runs, though it finds nothing that source supports.
	_, err = w.store.Assert(w.ctx, sgam.Assertion{Key: sgam.Key{Tenant: "acme", Subject: "mira", Attribute: "drink"},
		Value: []byte(`"green tea"`), ValidFrom: ts(t, "2026-06-04T09:00:00Z"), Source: "crm-import"})
	require.NoError(t, err)
	c = newCounting(w.store)
	got, err = recall.New(c).WithClock(w.clock).Recall(w.ctx, recall.Query{Tenant: "acme", Question: "What does Mira drink?"})
	require.NoError(t, err)
	require.Equal(t, 1, c.reads["SearchEpisodes"], c.String())
	require.Equal(t, []string{`"green tea"@crm-import`}, values(got, recall.Current))
	require.Empty(t, got.Facts[0].Quote)
	require.Equal(t, "lexical", got.Search)
	require.Empty(t, got.Evidence)
}
