package bench

import (
	"context"
	"database/sql"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/sgam-dev/sgam"
	"github.com/sgam-dev/sgam/internal/workload"
	"github.com/sgam-dev/sgam/recall"
	"github.com/sgam-dev/sgam/store"
)

// RecallOptions select what `sgam bench recall` measures.
type RecallOptions struct {
	// DSN is the store to measure: a postgres:// URL (an empty database
	// or schema), or empty for a fresh SQLite file in Dir.
	DSN string
	Dir string
	// Episodes are captured (synthetic messages, words drawn from a Zipf
	// distribution over 20,000 words, each naming one of 1,000 subjects),
	// then Facts are written citing them (the reference workload: fact i
	// writes subject i % 1000 from episode i/10).
	Episodes, Facts int
	// Questions are recalled one after the other, with lexical evidence
	// on (the default 5 episodes, the default budget).
	Questions int
	// Capture is the episodes captured, one after the other, into a fresh
	// store with the full-text index and into one without it, alternating
	// in rounds: the index's cost on capture (0: skip).
	Capture int
	// Seeded says the store holds the data of an earlier run of the same
	// sizes (a PostgreSQL database, whose loading is slow): nothing is
	// written again.
	Seeded   bool
	Progress Progress
}

// RecallResult is one run of the recall benchmark.
type RecallResult struct {
	Store     string `json:"store"`
	Episodes  int    `json:"episodes"`
	Facts     int    `json:"facts"`
	Questions int    `json:"questions"`
	// Latency is of the questions asked right after the load; Settled of
	// as many asked again once the store had settled (SQLite: merged its
	// full-text index; PostgreSQL: vacuumed), which took Settle.
	Latency
	Settle  time.Duration `json:"settle_ns,omitempty"`
	Settled *Latency      `json:"settled,omitempty"`
	// Facts and evidence episodes per answer, and its tokens, on average.
	FactsPerAnswer    float64 `json:"facts_per_answer"`
	EvidencePerAnswer float64 `json:"evidence_per_answer"`
	TokensPerAnswer   float64 `json:"tokens_per_answer"`
	// CaptureIndexed and CapturePlain are the mean time of one episode's
	// capture with the full-text index and without it; Ratio the first
	// over the second.
	CaptureIndexed time.Duration `json:"capture_indexed_ns,omitempty"`
	CapturePlain   time.Duration `json:"capture_plain_ns,omitempty"`
	CaptureRatio   float64       `json:"capture_ratio,omitempty"`
}

// Latency is the mean, p50 and p99 of a run of questions.
type Latency struct {
	Mean time.Duration `json:"mean_ns"`
	P50  time.Duration `json:"p50_ns"`
	P99  time.Duration `json:"p99_ns"`
}

// askAll asks n questions one after the other and returns their latency;
// with res, it adds what the answers held on average.
func askAll(ctx context.Context, r *recall.Recaller, c *corpus, sample map[int]sgam.Episode, n int, res *RecallResult, progress Progress, phase string) (Latency, error) {
	times := make([]time.Duration, 0, n)
	var facts, evidence, tokens int
	for i := range n {
		start := time.Now()
		ans, err := ask(ctx, r, c, sample)
		times = append(times, time.Since(start))
		if err != nil {
			return Latency{}, err
		}
		facts, evidence, tokens = facts+len(ans.Facts), evidence+len(ans.Evidence), tokens+ans.Tokens
		if (i+1)%100 == 0 || i == n-1 {
			progress(phase, i+1, n)
		}
	}
	var sum time.Duration
	for _, t := range times {
		sum += t
	}
	slices.Sort(times)
	if res != nil {
		res.FactsPerAnswer, res.EvidencePerAnswer, res.TokensPerAnswer = float64(facts)/float64(n), float64(evidence)/float64(n), float64(tokens)/float64(n)
	}
	return Latency{Mean: sum / time.Duration(n), P50: times[n/2], P99: times[min(n-1, n*99/100)]}, nil
}

// settle waits until the SQLite store whose WAL is wal is idle and done
// merging: its checkpointer truncates the WAL only then (or two minutes).
func settle(ctx context.Context, wal string) error {
	deadline := time.Now().Add(2 * time.Minute)
	for time.Now().Before(deadline) {
		if fi, err := os.Stat(wal); err == nil && fi.Size() == 0 || os.IsNotExist(err) {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
	return fmt.Errorf("the store did not settle (merge its index and truncate its WAL) within two minutes")
}

// vacuum runs VACUUM (ANALYZE) on the PostgreSQL database at dsn (the
// tables its role owns; the others are skipped with a warning).
func vacuum(ctx context.Context, dsn string) error {
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		return fmt.Errorf("settle: %w", err)
	}
	defer conn.Close(context.Background())
	if _, err := conn.Exec(ctx, `VACUUM (ANALYZE)`); err != nil {
		return fmt.Errorf("settle: vacuum: %w", err)
	}
	return nil
}

// corpus generates the benchmark's texts: pseudo-words, Zipf-distributed
// as words of real text are, so that some terms of a question are common
// and some rare.
type corpus struct {
	words []string
	zipf  *rand.Zipf
	r     *rand.Rand
}

func newCorpus(seed uint64) *corpus {
	r := rand.New(rand.NewPCG(seed, 7))
	syl := []string{"ka", "lo", "mi", "ren", "sa", "to", "vu", "ne", "bri", "dal", "fen", "gor", "hul", "jin", "ple", "quo", "st", "tra", "wex", "zo"}
	seen := map[string]bool{}
	var ws []string
	for len(ws) < 20000 {
		n := 2 + r.IntN(3)
		var b strings.Builder
		for range n {
			b.WriteString(syl[r.IntN(len(syl))])
		}
		if w := b.String(); !seen[w] {
			seen[w] = true
			ws = append(ws, w)
		}
	}
	return &corpus{words: ws, zipf: rand.NewZipf(r, 1.07, 2, uint64(len(ws)-1)), r: r}
}

func (c *corpus) word() string { return c.words[c.zipf.Uint64()] }

// episode j: subject j % 1000 says 10 to 30 words.
func (c *corpus) episode(tenant string, j int) sgam.Episode {
	n := 10 + c.r.IntN(21)
	ws := make([]string, n)
	for i := range ws {
		ws[i] = c.word()
	}
	return sgam.Episode{Tenant: tenant, ID: fmt.Sprintf("e%d", j), Session: fmt.Sprintf("sess%d", j%500), Kind: sgam.KindMessage,
		Content:    fmt.Sprintf("s%d: %s.", j%workload.Subjects, strings.Join(ws, " ")),
		OccurredAt: workload.Base.Add(time.Duration(j) * time.Second)}
}

// question about subject k, with words of one of its episodes and one
// common word, as a user's question shares some words with what was said.
func (c *corpus) question(k int, from sgam.Episode) string {
	ws := strings.Fields(strings.TrimSuffix(from.Content, "."))[1:]
	a, b := ws[c.r.IntN(len(ws))], ws[c.r.IntN(len(ws))]
	return fmt.Sprintf("What did s%d say about %s and %s, and the %s?", k, a, b, c.word())
}

// Recall runs the recall benchmark.
func Recall(ctx context.Context, opts RecallOptions) (RecallResult, error) {
	res := RecallResult{Store: "sqlite", Episodes: opts.Episodes, Facts: opts.Facts, Questions: opts.Questions}
	progress := opts.Progress
	if progress == nil {
		progress = func(string, int, int) {}
	}
	dsn := opts.DSN
	if dsn == "" {
		dsn = filepath.Join(opts.Dir, "recall.db")
	} else {
		res.Store = "postgres"
	}
	s, err := store.Open(ctx, dsn, store.Options{})
	if err != nil {
		return res, err
	}
	defer s.Close()
	c, sample, err := seedRecallInto(ctx, s, opts.Episodes, opts.Facts, opts.Seeded, progress)
	if err != nil {
		return res, err
	}
	r := recall.New(s)
	if res.Latency, err = askAll(ctx, r, c, sample, opts.Questions, &res, progress, "questions"); err != nil {
		return res, err
	}
	// The questions above ran right after the load; as many again once the
	// store has settled. SQLite's idle store merges its full-text index's
	// segments (store/sqlite's checkpointer) and then truncates its WAL;
	// on PostgreSQL, autovacuum's work after a load (the visibility map,
	// which lets a search count its terms from the index alone, and the
	// planner's statistics) is done at once by VACUUM (ANALYZE).
	start := time.Now()
	if opts.DSN == "" {
		err = settle(ctx, dsn+"-wal")
	} else {
		err = vacuum(ctx, dsn)
	}
	if err != nil {
		return res, err
	}
	res.Settle = time.Since(start)
	settled, err := askAll(ctx, r, c, sample, opts.Questions, nil, progress, "questions, settled")
	if err != nil {
		return res, err
	}
	res.Settled = &settled
	if opts.Capture > 0 {
		if err := captureCost(ctx, opts, &res, progress); err != nil {
			return res, err
		}
	}
	return res, nil
}

// seedRecall captures episodes (and 1,000 of a second tenant with the
// same words) and writes facts citing them, returning the corpus and an
// episode of each subject to ask about.
func seedRecall(ctx context.Context, s sgam.Store, episodes, facts int, progress Progress) (*corpus, map[int]sgam.Episode, error) {
	return seedRecallInto(ctx, s, episodes, facts, false, progress)
}

// seedRecallInto is seedRecall; with seeded, the store holds the data of
// an earlier run of the same sizes, and only the corpus is made again
// (the same draws, nothing written).
func seedRecallInto(ctx context.Context, s sgam.Store, episodes, facts int, seeded bool, progress Progress) (*corpus, map[int]sgam.Episode, error) {
	c := newCorpus(1)
	sample := map[int]sgam.Episode{} // an episode of each subject, for its questions
	batch := make([]sgam.Episode, 0, 1000)
	flush := func() error {
		if seeded {
			batch = batch[:0]
			return nil
		}
		// Concurrent captures are committed together (group commit): the
		// fast way to load.
		errs := make(chan error, len(batch))
		for _, e := range batch {
			go func() { _, err := s.AddEpisode(ctx, e); errs <- err }()
		}
		for range batch {
			if err := <-errs; err != nil {
				return err
			}
		}
		batch = batch[:0]
		return nil
	}
	for j := range episodes {
		e := c.episode(workload.Tenant, j)
		if _, ok := sample[j%workload.Subjects]; !ok || c.r.IntN(50) == 0 {
			sample[j%workload.Subjects] = e
		}
		batch = append(batch, e)
		if len(batch) == cap(batch) || j == episodes-1 {
			if err := flush(); err != nil {
				return nil, nil, err
			}
			progress("episodes", j+1, episodes)
		}
	}
	// A second tenant with the same words, which recall must never cite.
	for j := range 1000 {
		e := c.episode("globex", j)
		batch = append(batch, e)
	}
	if err := flush(); err != nil {
		return nil, nil, err
	}
	for i := 0; i < facts && !seeded; i += 1000 {
		as := workload.Batch(i, min(1000, facts-i))
		for k := range as {
			as[k].Source = fmt.Sprintf("e%d", (i+k)/10%max(episodes, 1))
		}
		if _, err := s.AssertMany(ctx, as); err != nil {
			return nil, nil, err
		}
		progress("facts", min(i+1000, facts), facts)
	}

	return c, sample, nil
}

// ask recalls one question about a random subject, and checks that it
// cites only the tenant's own episodes.
func ask(ctx context.Context, r *recall.Recaller, c *corpus, sample map[int]sgam.Episode) (*recall.Context, error) {
	k := c.r.IntN(workload.Subjects)
	q := c.question(k, sample[k])
	ans, err := r.Recall(ctx, recall.Query{Tenant: workload.Tenant, Question: q})
	if err != nil {
		return nil, fmt.Errorf("recall %q: %w", q, err)
	}
	for _, e := range ans.Evidence {
		if !strings.HasPrefix(e.EpisodeID, "e") {
			return nil, fmt.Errorf("recall %q cited %s", q, e.EpisodeID)
		}
	}
	return ans, nil
}

// captureCost captures opts.Capture episodes one after the other into a
// fresh store with the full-text index and into one without it (its
// triggers, or its generated column, dropped), alternating rounds of 250
// so that both see the same machine.
func captureCost(ctx context.Context, opts RecallOptions, res *RecallResult, progress Progress) error {
	open := func(name string, plain bool) (sgam.Store, error) {
		dsn := filepath.Join(opts.Dir, name+".db")
		if opts.DSN != "" {
			return nil, fmt.Errorf("the capture cost is measured on SQLite only")
		}
		s, err := store.Open(ctx, dsn, store.Options{})
		if err != nil || !plain {
			return s, err
		}
		db, err := sql.Open("sqlite", dsn)
		if err != nil {
			s.Close()
			return nil, err
		}
		defer db.Close()
		if _, err := db.ExecContext(ctx, `DROP TRIGGER episodes_search_insert; DROP TRIGGER episodes_search_update; DROP TRIGGER episodes_search_delete`); err != nil {
			s.Close()
			return nil, err
		}
		return s, nil
	}
	indexed, err := open("capture-indexed", false)
	if err != nil {
		return err
	}
	defer indexed.Close()
	plain, err := open("capture-plain", true)
	if err != nil {
		return err
	}
	defer plain.Close()
	c := newCorpus(2)
	var took [2]time.Duration
	const round = 250
	for done := 0; done < opts.Capture; done += round {
		n := min(round, opts.Capture-done)
		eps := make([]sgam.Episode, n)
		for i := range eps {
			eps[i] = c.episode(workload.Tenant, done+i)
		}
		for which, s := range []sgam.Store{indexed, plain} {
			start := time.Now()
			for _, e := range eps {
				if _, err := s.AddEpisode(ctx, e); err != nil {
					return err
				}
			}
			took[which] += time.Since(start)
		}
		progress("capture", done+n, opts.Capture)
	}
	res.CaptureIndexed = took[0] / time.Duration(opts.Capture)
	res.CapturePlain = took[1] / time.Duration(opts.Capture)
	res.CaptureRatio = float64(took[0]) / float64(took[1])
	return nil
}
