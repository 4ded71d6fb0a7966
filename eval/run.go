package eval

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/sgam-dev/sgam"
	"github.com/sgam-dev/sgam/extract"
	"github.com/sgam-dev/sgam/llm"
	"github.com/sgam-dev/sgam/recall"
	"github.com/sgam-dev/sgam/store"
	"github.com/sgam-dev/sgam/words"
)

// Modes of a run: how the model's answers are had.
const (
	Replay = "replay" // from the scenario's cassette: no model, no network
	Record = "record" // from a live model, kept in a new cassette
	Rekey  = "rekey"  // from the cassette's own answers, by episode, kept with new digests
	Live   = "live"   // from a live model, not kept
	NoLLM  = "none"   // the scenario extracts nothing
)

// Options configure a run.
type Options struct {
	// Model is the live model of Record and Live runs.
	Model llm.Model
	// Mode is Replay (the default), Record, Rekey or Live.
	Mode string
	// DB, when set, is the SQLite file (new) or postgres:// database the
	// scenario is run on, kept for inspection; a store with anything of
	// the scenario's tenants (or a default schema) is refused. By default
	// a temporary SQLite file, deleted after.
	DB string
	// Progress, when set, is told the steps done of total.
	Progress func(done, total int)
	// wrapRecall, when set, stands between the run and recall: for tests
	// of the metrics, a recall that gets things wrong.
	wrapRecall func(sgam.Store, recaller) recaller
}

// recaller is what a run asks its questions of.
type recaller interface {
	Recall(ctx context.Context, q recall.Query) (*recall.Context, error)
}

// Report is the outcome of one scenario.
type Report struct {
	Name     string        `json:"name"`
	Path     string        `json:"path"`
	Mode     string        `json:"mode"`
	Steps    int           `json:"steps"`
	Metrics  *Metrics      `json:"metrics"`
	Bounds   []Bound       `json:"thresholds"`
	Findings []Finding     `json:"findings"`
	Elapsed  time.Duration `json:"elapsed_ns"`
	// Cassette is the cassette replayed or written.
	Cassette string `json:"cassette,omitempty"`
}

// OK reports whether every threshold of the scenario holds.
func (r *Report) OK() bool {
	for _, b := range r.Bounds {
		if !b.OK {
			return false
		}
	}
	return true
}

// Finding is an expectation that did not hold, or a model proposal that
// the gold does not have: with its step, the stage, and what was expected
// against what was found.
type Finding struct {
	Step    int    `json:"step"` // 0-based index in steps
	Line    int    `json:"line"`
	Stage   string `json:"stage"` // extract, write, check, recall, stale, leak, forget
	Message string `json:"message"`
}

// Stages of a finding and of the time metrics.
const (
	StageCapture    = "capture"
	StageExtraction = "extract"
	StageWrite      = "write"
	StageCheck      = "check"
	StageRecall     = "recall"
	StageStale      = "stale"
	StageLeak       = "leak"
	StageForget     = "forget"
	StageSchema     = "schema"
)

// Run replays a scenario on a new store and scores it. An error is one
// that stops the run: a store that cannot be opened, a cassette without
// an answer for a prompt; what the memory got wrong is in the report.
func Run(ctx context.Context, sc *Scenario, opts Options) (*Report, error) {
	start := time.Now()
	rep := &Report{Name: sc.Name, Path: sc.Path, Mode: opts.Mode, Steps: len(sc.Steps), Metrics: newMetrics()}
	if rep.Mode == "" {
		rep.Mode = Replay
	}
	model, finish, err := modelFor(sc, rep, opts)
	if err != nil {
		return nil, err
	}
	dsn := opts.DB
	if dsn == "" {
		dir, err := os.MkdirTemp("", "sgam-eval-")
		if err != nil {
			return nil, err
		}
		defer os.RemoveAll(dir)
		dsn = filepath.Join(dir, "eval.db")
	}
	clock := &sgam.ManualClock{}
	clock.Set(sc.Start.Time)
	s, err := store.Open(ctx, dsn, store.Options{Clock: clock})
	if err != nil {
		return nil, err
	}
	defer s.Close()
	if opts.DB != "" {
		if err := empty(ctx, s, sc); err != nil {
			return nil, fmt.Errorf("--db %s: %w", opts.DB, err)
		}
	}
	r := &runner{sc: sc, s: s, clock: clock, rep: rep, m: rep.Metrics,
		x: extract.New(s, model).WithClock(clock), rc: recall.New(s).WithClock(clock),
		gold: map[[2]string][]Gold{}}
	if opts.wrapRecall != nil {
		r.rc = opts.wrapRecall(s, r.rc)
	}
	for _, name := range sortedTenants(sc) {
		t := sc.Tenants[name]
		if t.Schema != "" {
			if _, err := s.ApplySchema(ctx, name, []byte(t.Schema), false); err != nil {
				return nil, fmt.Errorf("tenants.%s.schema: %w", name, err)
			}
		}
		if t.Budget > 0 {
			if err := s.SetBudget(ctx, name, t.Budget); err != nil {
				return nil, fmt.Errorf("tenants.%s.budget: %w", name, err)
			}
		}
	}
	for i, st := range sc.Steps {
		switch {
		case st.At != nil && st.At.Before(clock.Now()):
			return nil, fmt.Errorf("%s: steps[%d] (line %d): at %s moves the clock back from %s: transaction time only goes forward",
				sc.Path, i, st.Line, sgam.FormatTime(st.At.Time), sgam.FormatTime(clock.Now()))
		case st.At != nil:
			clock.Set(st.At.Time)
		case st.Kind == StepEpisode && st.Episode.OccurredAt != nil && st.Episode.OccurredAt.After(clock.Now()):
			// An episode is recorded when it occurs, unless at says later.
			clock.Set(st.Episode.OccurredAt.Time)
		}
		r.step, r.line = i, st.Line
		if err := r.run(ctx, st); err != nil {
			return nil, fmt.Errorf("%s: steps[%d] (line %d): %w", sc.Path, i, st.Line, err)
		}
		clock.Set(clock.Now().Add(sc.tick))
		if opts.Progress != nil {
			opts.Progress(i+1, len(sc.Steps))
		}
	}
	if err := finish(); err != nil {
		return nil, err
	}
	rep.Metrics.Finish()
	rep.Bounds = sc.Thresholds.Check(rep.Metrics)
	rep.Elapsed = time.Since(start)
	return rep, nil
}

// modelFor is the model a run extracts with, and what to do when the run
// is over (write the cassette of a Record or Rekey run).
func modelFor(sc *Scenario, rep *Report, opts Options) (llm.Model, func() error, error) {
	none := func() error { return nil }
	extracts := slices.ContainsFunc(sc.Steps, func(st *Step) bool {
		return st.Kind == StepExtract || (st.Kind == StepEpisode && st.When == "now")
	})
	if !extracts {
		rep.Mode = NoLLM
		return nil, none, nil
	}
	path := CassettePath(sc.Path)
	rep.Cassette = path
	switch rep.Mode {
	case Replay:
		c, err := LoadCassette(path)
		if errors.Is(err, os.ErrNotExist) {
			return nil, nil, fmt.Errorf("%s extracts episodes, and has no cassette (%s) to replay: record one with `sgam eval run %s --record` and a model (SGAM_LLM_BASE_URL, SGAM_LLM_MODEL)", sc.Path, path, sc.Path)
		}
		if err != nil {
			return nil, nil, err
		}
		return newPlayer(c, path), none, nil
	case Live:
		rep.Cassette = ""
		if opts.Model == nil {
			return nil, nil, errors.New("a live run needs a model: set SGAM_LLM_BASE_URL and SGAM_LLM_MODEL")
		}
		return opts.Model, none, nil
	case Record:
		if opts.Model == nil {
			return nil, nil, fmt.Errorf("--record needs a model: set SGAM_LLM_BASE_URL and SGAM_LLM_MODEL (or --llm-base-url, --llm-model)")
		}
		rec := newRecorder(opts.Model)
		return rec, func() error { return rec.out.Save(path) }, nil
	case Rekey:
		c, err := LoadCassette(path)
		if err != nil {
			return nil, nil, fmt.Errorf("--rekey re-keys the answers of the scenario's cassette: %w", err)
		}
		k := newRekeyer(c, path)
		rec := newRecorder(k)
		return rec, func() error {
			if left := k.unused(); len(left) > 0 {
				return fmt.Errorf("%s: answers for %s were not asked for; remove them, or the scenario lost an extraction", path, strings.Join(left, ", "))
			}
			rec.out.Model, rec.out.Mode = c.Model, c.Mode
			return rec.out.Save(path)
		}, nil
	}
	return nil, nil, fmt.Errorf("mode %q: must be replay, record, rekey or live", rep.Mode)
}

// empty refuses a store that holds anything of the scenario's tenants, or
// a default schema: a scenario writes and forgets, and must not do it to
// real memory.
func empty(ctx context.Context, s sgam.Store, sc *Scenario) error {
	if d, err := s.DefaultSchema(ctx); err != nil {
		return err
	} else if d.Version > 0 {
		return errors.New("the store has a default schema: run a scenario on an empty database")
	}
	for _, t := range sortedTenants(sc) {
		st, err := s.Stats(ctx, t)
		if err != nil {
			return err
		}
		v, err := s.Schema(ctx, t)
		if err != nil {
			return err
		}
		if st.Episodes > 0 || st.Facts > 0 || st.Pending+st.Signals > 0 || v.Version > 0 {
			return fmt.Errorf("tenant %s has memory already (%d episodes, %d facts): run a scenario on an empty database", t, st.Episodes, st.Facts)
		}
	}
	return nil
}

func sortedTenants(sc *Scenario) []string {
	var names []string
	for n := range sc.Tenants {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

type runner struct {
	sc    *Scenario
	s     sgam.Store
	clock *sgam.ManualClock
	x     *extract.Extractor
	rc    recaller
	rep   *Report
	m     *Metrics
	step  int
	line  int
	// gold of the episodes captured, scored when they are extracted.
	gold map[[2]string][]Gold
}

func (r *runner) find(stage, format string, args ...any) {
	r.rep.Findings = append(r.rep.Findings, Finding{Step: r.step, Line: r.line, Stage: stage, Message: fmt.Sprintf(format, args...)})
}

func (r *runner) timed(stage string, f func() error) error {
	t := time.Now()
	err := f()
	r.m.Time[stage] += time.Since(t)
	return err
}

func (r *runner) run(ctx context.Context, st *Step) error {
	switch st.Kind {
	case StepEpisode:
		return r.episode(ctx, st)
	case StepExtract:
		for _, id := range st.Episodes {
			if err := r.extract(ctx, st.Tenant, id); err != nil {
				return err
			}
		}
	case StepSchema:
		return r.timed(StageSchema, func() error {
			if _, err := r.s.ApplySchema(ctx, st.Schema.Tenant, []byte(st.Schema.Text), false); err != nil {
				r.m.WriteErrors++
				r.find(StageWrite, "applying the schema of %s: %v", st.Schema.Tenant, err)
			}
			return nil
		})
	case StepMigrate:
		return r.timed(StageSchema, func() error {
			if _, err := r.s.Migrate(ctx, sgam.MigrateOptions{}); err != nil {
				r.m.WriteErrors++
				r.find(StageWrite, "migrating: %v", err)
			}
			return nil
		})
	case StepCheck:
		return r.timed(StageCheck, func() error { return r.check(ctx, st.Check) })
	case StepAsk:
		return r.timed(StageRecall, func() error { return r.ask(ctx, st.Ask) })
	case StepForget:
		return r.timed(StageForget, func() error { return r.forget(ctx, st.Forget) })
	case StepConfirm, StepDismiss:
		return r.timed(StageCheck, func() error { return r.review(ctx, st) })
	}
	return nil
}

func (r *runner) episode(ctx context.Context, st *Step) error {
	e := st.Episode
	ep := sgam.Episode{Tenant: e.Tenant, ID: e.EpisodeID, Session: e.Session, Kind: e.Kind, Content: e.Content, Subjects: e.Subjects,
		Metadata: e.Metadata, Retention: e.Retention, IdempotencyKey: e.IdempotencyKey}
	if e.OccurredAt != nil {
		ep.OccurredAt = e.OccurredAt.Time
	}
	err := r.timed(StageCapture, func() error {
		_, err := r.s.AddEpisode(ctx, ep)
		return err
	})
	if err != nil {
		r.m.WriteErrors++
		r.find(StageWrite, "capturing episode %s: %v", e.EpisodeID, err)
		return nil
	}
	if st.Gold != nil {
		r.gold[[2]string{e.Tenant, e.EpisodeID}] = st.Gold
	}
	if st.When == "now" {
		return r.extract(ctx, e.Tenant, e.EpisodeID)
	}
	return nil
}

// extract extracts one episode and scores what the model proposed.
func (r *runner) extract(ctx context.Context, tenant, id string) error {
	var res extract.Result
	err := r.timed(StageExtraction, func() error {
		var err error
		res, err = r.x.Extract(forEpisode(ctx, tenant, id), tenant, id, extract.Options{LastAttempt: true})
		return err
	})
	if errors.Is(err, ErrPromptChanged) {
		return err
	}
	rec := res.Record
	if !res.Skipped {
		r.m.Extracted++
		if !rec.Cached {
			r.m.Calls += rec.Calls
			r.m.TokensIn += rec.TokensIn
			r.m.TokensOut += rec.TokensOut
		}
	}
	gold, scored := r.gold[[2]string{tenant, id}]
	if err != nil {
		r.m.WriteErrors++
		r.find(StageWrite, "extracting episode %s: %v", id, err)
		if scored && !res.Skipped {
			// Nothing was proposed: every gold candidate is missed.
			ep, err := r.s.Episode(ctx, tenant, id)
			if err != nil {
				return err
			}
			r.score(id, ep.OccurredAt, nil, gold)
		}
		return nil
	}
	for _, rj := range rec.Rejected {
		r.m.Rejected[rj.Reason]++
	}
	if !scored || res.Skipped {
		return nil
	}
	ep, err := r.s.Episode(ctx, tenant, id)
	if err != nil {
		return err
	}
	r.score(id, ep.OccurredAt, proposals(rec), gold)
	return nil
}

// proposal is a candidate as the model proposed it.
type proposal struct {
	subject, attribute, change, value string
	validFrom                         time.Time // zero: the episode's occurred_at
}

func (p proposal) String() string {
	if p.change == "retract" && p.value == "" {
		return fmt.Sprintf("retract %s.%s", p.subject, p.attribute)
	}
	if p.change == "retract" {
		return fmt.Sprintf("retract %s.%s member %s", p.subject, p.attribute, p.value)
	}
	return fmt.Sprintf("%s.%s = %s", p.subject, p.attribute, p.value)
}

// proposals are the record's candidates, accepted and rejected, in the
// model's order: what the model proposed, whatever validation made of it.
func proposals(rec sgam.Extraction) []proposal {
	type indexed struct {
		i int
		p proposal
	}
	var all []indexed
	for _, a := range rec.Accepted {
		p := proposal{subject: a.Subject, attribute: a.Attribute, change: a.Change, validFrom: a.ValidFrom}
		if len(a.Value) > 0 {
			p.value = valueText(a.Value) // a retraction from a set names its member
		}
		all = append(all, indexed{a.Index, p})
	}
	for _, rj := range rec.Rejected {
		var u struct {
			Subject, Attribute, Change string
			Value                      *string
			ValidFrom                  *string `json:"valid_from"`
		}
		if json.Unmarshal(rj.Update, &u) != nil {
			u.Change = "malformed"
		}
		p := proposal{subject: u.Subject, attribute: u.Attribute, change: u.Change}
		if u.Value != nil {
			p.value = strings.TrimSpace(*u.Value)
		}
		if u.ValidFrom != nil {
			if t, err := ParseInstant("valid_from", *u.ValidFrom); err == nil {
				p.validFrom = t
			}
		}
		all = append(all, indexed{rj.Index, p})
	}
	slices.SortStableFunc(all, func(a, b indexed) int { return a.i - b.i })
	out := make([]proposal, len(all))
	for i, x := range all {
		out[i] = x.p
	}
	return out
}

// valueText is a value as the model writes it: a JSON string's text, any
// other value's JSON.
func valueText(v json.RawMessage) string {
	var s string
	if json.Unmarshal(v, &s) == nil {
		return strings.TrimSpace(s)
	}
	return strings.TrimSpace(string(v))
}

// sameValue compares a value as a proposal writes it with an expected one:
// the same text, or the same JSON (42 and 42.0, key order).
func sameValue(got string, want json.RawMessage) bool {
	w := valueText(want)
	if got == w {
		return true
	}
	var a, b any
	if json.Unmarshal([]byte(got), &a) != nil || json.Unmarshal([]byte(w), &b) != nil {
		return false
	}
	ca, _ := json.Marshal(a)
	cb, _ := json.Marshal(b)
	return string(ca) == string(cb)
}

// score matches proposals to the gold: the same subject, attribute and
// value (retractions: no value), and valid_from where the gold gives one.
// Each gold candidate is matched once; new and update are one kind.
func (r *runner) score(episode string, occurred time.Time, props []proposal, gold []Gold) {
	x := &r.m.Extraction
	x.Gold += len(gold)
	used := make([]bool, len(gold))
	for _, p := range props {
		x.Proposed++
		found := false
		for i, g := range gold {
			if used[i] || g.Subject != p.subject || g.Attribute != p.attribute || (g.Change == "retract") != (p.change == "retract") {
				continue
			}
			if (g.Change != "retract" || !isNull(g.Value)) && !sameValue(p.value, g.Value) {
				continue
			}
			if g.ValidFrom != nil {
				vf := p.validFrom
				if vf.IsZero() {
					vf = occurred
				}
				if !vf.Equal(g.ValidFrom.Time) {
					continue
				}
			}
			used[i], found = true, true
			x.Matched++
			break
		}
		if !found {
			r.find(StageExtraction, "episode %s: the model proposed %s, which the gold does not have", episode, p)
		}
	}
	for i, g := range gold {
		if !used[i] {
			p := proposal{subject: g.Subject, attribute: g.Attribute, change: g.Change, value: valueText(g.Value)}
			r.find(StageExtraction, "episode %s: the model did not propose %s", episode, p)
		}
	}
}

func (r *runner) at(asOf, knownAt *Instant) sgam.At {
	at := sgam.At{AsOf: r.clock.Now(), KnownAt: r.clock.Now()}
	if asOf != nil {
		at.AsOf = asOf.Time
	}
	if knownAt != nil {
		at.KnownAt = knownAt.Time
	}
	return at
}

func instantsText(at sgam.At) string {
	return "as_of " + sgam.FormatTime(at.AsOf) + ", known_at " + sgam.FormatTime(at.KnownAt)
}

func (r *runner) check(ctx context.Context, c *Check) error {
	at := r.at(c.AsOf, c.KnownAt)
	past := c.AsOf != nil || c.KnownAt != nil
	for _, v := range c.Values {
		key := sgam.Key{Tenant: c.Tenant, Subject: v.Subject, Attribute: v.Attribute}
		rows, err := r.s.Members(ctx, key, at)
		if err != nil {
			return fmt.Errorf("reading %s: %w", key, err)
		}
		var got []string
		var sources []string
		var held []sgam.Fact
		for _, f := range rows {
			if !f.Tombstone {
				got = append(got, valueText(f.Value))
				sources = append(sources, f.Sources...)
				held = append(held, f)
			}
		}
		want := []string{}
		switch {
		case len(v.Members) > 0:
			for _, m := range v.Members {
				want = append(want, valueText(m))
			}
		case !isNull(v.Value):
			want = append(want, valueText(v.Value))
		}
		ok := sameSet(got, want)
		if ok && v.Sources != nil && !sameStrings(sources, v.Sources) {
			ok = false
			r.find(StageCheck, "%s at %s: sources %s, want %s", key, instantsText(at), listText(sources), listText(v.Sources))
		} else if !ok {
			r.find(StageCheck, "%s at %s: %s, want %s%s", key, instantsText(at), listText(got), listText(want), rowsDiff(held, want))
		}
		r.m.Checkpoints.add(ok)
		if past {
			r.m.PointInTime.add(ok)
		}
	}
	if c.Pending != nil {
		cs, err := r.s.Pending(ctx, sgam.PendingQuery{Tenant: c.Tenant, Limit: 10_000})
		if err != nil {
			return err
		}
		var got, want []string
		for _, p := range cs {
			got = append(got, fmt.Sprintf("%s.%s = %s", p.Subject, p.Attribute, valueText(p.Value)))
		}
		for _, p := range *c.Pending {
			want = append(want, fmt.Sprintf("%s.%s = %s", p.Subject, p.Attribute, valueText(p.Value)))
		}
		ok := matchPending(cs, *c.Pending)
		if !ok {
			r.find(StageCheck, "pending of %s: %s, want %s", c.Tenant, listText(got), listText(want))
		}
		r.m.Checkpoints.add(ok)
	}
	byEpisode := map[string][]Rejection{}
	var order []string
	for _, rj := range c.Rejected {
		if _, ok := byEpisode[rj.Episode]; !ok {
			order = append(order, rj.Episode)
		}
		byEpisode[rj.Episode] = append(byEpisode[rj.Episode], rj)
	}
	for _, id := range order {
		recs, err := r.s.Extractions(ctx, c.Tenant, id)
		if err != nil {
			return fmt.Errorf("the extractions of %s: %w", id, err)
		}
		var got []Rejection
		if len(recs) > 0 {
			for _, rj := range recs[len(recs)-1].Rejected {
				var u struct{ Attribute string }
				_ = json.Unmarshal(rj.Update, &u)
				got = append(got, Rejection{Reason: rj.Reason, Attribute: u.Attribute})
			}
		}
		ok := matchRejections(got, byEpisode[id])
		if !ok {
			r.find(StageCheck, "rejections of episode %s: %s, want %s", id, rejectionsText(got), rejectionsText(byEpisode[id]))
		}
		r.m.Checkpoints.add(ok)
	}
	return nil
}

// matchPending reports whether the pending candidates are exactly the
// expected ones: the same subject and attribute, and the same value where
// the expectation gives one.
func matchPending(got []sgam.Candidate, want []Candidate) bool {
	if len(got) != len(want) {
		return false
	}
	left := slices.Clone(got)
	for _, w := range want {
		i := slices.IndexFunc(left, func(g sgam.Candidate) bool {
			return g.Subject == w.Subject && g.Attribute == w.Attribute && (isNull(w.Value) || sameValue(valueText(g.Value), w.Value))
		})
		if i < 0 {
			return false
		}
		left = slices.Delete(left, i, i+1)
	}
	return true
}

// matchRejections reports whether each expected rejection matches one
// that happened, and none is left over: the same reason, and the same
// attribute when the expectation names one.
func matchRejections(got, want []Rejection) bool {
	if len(got) != len(want) {
		return false
	}
	left := slices.Clone(got)
	for _, w := range want {
		i := slices.IndexFunc(left, func(g Rejection) bool {
			return g.Reason == w.Reason && (w.Attribute == "" || g.Attribute == w.Attribute)
		})
		if i < 0 {
			return false
		}
		left = slices.Delete(left, i, i+1)
	}
	return true
}

func rejectionsText(rs []Rejection) string {
	if len(rs) == 0 {
		return "none"
	}
	var parts []string
	for _, r := range rs {
		if r.Attribute == "" {
			parts = append(parts, r.Reason)
		} else {
			parts = append(parts, r.Reason+" of "+r.Attribute)
		}
	}
	return strings.Join(parts, ", ")
}

// sameSet compares the values a key holds with the expected ones.
func sameSet(got, want []string) bool {
	if len(got) != len(want) {
		return false
	}
	left := slices.Clone(want)
	for _, g := range got {
		i := slices.IndexFunc(left, func(w string) bool { return sameValue(g, json.RawMessage(quote(w))) })
		if i < 0 {
			return false
		}
		left = slices.Delete(left, i, i+1)
	}
	return true
}

func quote(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

func sameStrings(a, b []string) bool {
	a, b = slices.Clone(a), slices.Clone(b)
	slices.Sort(a)
	slices.Sort(b)
	return slices.Equal(a, b)
}

// rowsDiff says which rows a checkpoint found that it did not want (each
// with its fact id, window and sources) and which values it wanted that
// no row holds.
func rowsDiff(held []sgam.Fact, want []string) string {
	left := slices.Clone(want)
	var extra []string
	for _, f := range held {
		v := valueText(f.Value)
		if i := slices.IndexFunc(left, func(w string) bool { return sameValue(v, json.RawMessage(quote(w))) }); i >= 0 {
			left = slices.Delete(left, i, i+1)
			continue
		}
		to := "open"
		if f.ValidTo != nil {
			to = sgam.FormatTime(*f.ValidTo)
		}
		extra = append(extra, fmt.Sprintf("%s (fact %d, valid %s → %s, sources %s)", v, f.ID, sgam.FormatTime(f.ValidFrom), to, strings.Join(f.Sources, ", ")))
	}
	var out string
	if len(extra) > 0 {
		out += "; not wanted: " + strings.Join(extra, "; ")
	}
	if len(left) > 0 {
		out += "; missing: " + strings.Join(left, ", ")
	}
	return out
}

func listText(ss []string) string {
	if len(ss) == 0 {
		return "no value"
	}
	return strings.Join(ss, ", ")
}

func (r *runner) ask(ctx context.Context, a *Ask) error {
	q := recall.Query{Tenant: a.Tenant, Question: a.Question, Subjects: a.Subjects, Session: a.Session,
		TokenBudget: a.Budget, Evidence: a.Evidence, EvidenceLimit: a.EvidenceLimit}
	if a.AsOf != nil {
		q.AsOf = a.AsOf.Time
	}
	if a.KnownAt != nil {
		q.KnownAt = a.KnownAt.Time
	}
	k := a.EvidenceLimit
	if k == 0 {
		k = recall.DefaultEvidence
	}
	out, err := r.rc.Recall(ctx, q)
	if err != nil {
		r.m.Facts.Failed += len(a.Expect.Facts)
		r.m.Evidence.Failed += len(a.Expect.Evidence)
		for _, x := range []*Instant{a.Expect.AsOf, a.Expect.KnownAt} {
			if x != nil {
				r.m.PointInTime.Failed++
			}
		}
		for _, f := range a.Expect.Facts {
			if f.Status == recall.Past {
				r.m.PointInTime.Failed++
			}
		}
		if len(a.Expect.Evidence) > 0 {
			r.m.Evidence.question(0, len(a.Expect.Evidence))
		}
		r.find(StageRecall, "%q: recall failed: %v", a.Question, err)
		return nil
	}
	question := fmt.Sprintf("%q", a.Question)
	at := sgam.At{AsOf: out.AsOf, KnownAt: out.KnownAt}

	// The instants recall read at.
	for _, x := range []struct {
		name       string
		want       *Instant
		got, why   string
		gotInstant time.Time
	}{{"as_of", a.Expect.AsOf, sgam.FormatTime(out.AsOf), out.Instants.AsOf, out.AsOf},
		{"known_at", a.Expect.KnownAt, sgam.FormatTime(out.KnownAt), out.Instants.KnownAt, out.KnownAt}} {
		if x.want == nil {
			continue
		}
		ok := x.gotInstant.Equal(x.want.Time)
		if !ok {
			r.find(StageRecall, "%s: read at %s %s (%s), want %s", question, x.name, x.got, x.why, sgam.FormatTime(x.want.Time))
		}
		r.m.PointInTime.add(ok)
	}

	// The facts it must present.
	answered := len(a.Expect.Facts) > 0
	all := append(slices.Clone(out.Facts), out.Related...)
	for _, ef := range a.Expect.Facts {
		var found, wrongStatus *recall.Fact
		for i := range all {
			f := &all[i]
			if f.Subject != ef.Subject || f.Attribute != ef.Attribute || (!isNull(ef.Value) && !sameValue(valueText(f.Value), ef.Value)) {
				continue
			}
			if f.Status == ef.Status {
				found = f
				break
			}
			wrongStatus = f
		}
		want := fmt.Sprintf("%s.%s = %s (%s)", ef.Subject, ef.Attribute, valueText(ef.Value), ef.Status)
		switch {
		case found != nil:
		case wrongStatus != nil && ef.Status == recall.Past:
			// The stale count below finds it too when the ledger agrees;
			// a past value the question expects, presented as current, is
			// stale whatever the ledger holds.
			r.find(StageStale, "%s: presented %s as current, want it as past", question, want)
			if r.ledgerCurrent(ctx, a.Tenant, *wrongStatus, at) {
				r.m.Stale++
			}
		case wrongStatus != nil:
			r.find(StageRecall, "%s: presented %s as %s", question, want, wrongStatus.Status)
		default:
			r.find(StageRecall, "%s: the context lacks %s", question, want)
		}
		r.m.Facts.add(found != nil)
		answered = answered && found != nil
		if !isNull(ef.Value) {
			r.m.Context.AnswerInContext.add(words.Holds(out.Rendered, valueText(ef.Value)))
		}
		if ef.Status == recall.Past {
			r.m.PointInTime.add(found != nil)
		}
	}

	// Stale: every fact presented as current must be current in the
	// ledger at the context's instants.
	for _, f := range all {
		if f.Status != recall.Current || f.Tenant != a.Tenant {
			continue
		}
		if !r.ledgerCurrent(ctx, a.Tenant, f, at) {
			r.m.Stale++
			r.find(StageStale, "%s: presented %s.%s = %s (fact %d) as current; the ledger does not hold it at %s",
				question, f.Subject, f.Attribute, valueText(f.Value), f.ID, instantsText(at))
		}
	}

	// Evidence recall@k: an episode is cited as one of the first k
	// evidence episodes, or as a source of a fact the context presents
	// (its line names it, and quotes it when it can: recall's evidence
	// "auto" does not cite it twice).
	var cited []string
	for i, e := range out.Evidence {
		if i < k {
			cited = append(cited, e.EpisodeID)
		}
	}
	for _, f := range all {
		for _, id := range f.Sources {
			if !slices.Contains(cited, id) {
				cited = append(cited, id)
			}
		}
	}
	found := 0
	for _, id := range a.Expect.Evidence {
		ok := slices.Contains(cited, id)
		if ok {
			found++
		} else {
			r.find(StageRecall, "%s: did not cite episode %s among the first %d evidence episodes or the facts' sources (cited %s)", question, id, k, listText(cited))
		}
		r.m.Evidence.add(ok)
	}
	if len(a.Expect.Evidence) > 0 {
		r.m.Evidence.question(found, len(a.Expect.Evidence))
	}

	// What the context cost, beside the quota of evidence always.
	always := out
	if q.Evidence != recall.EvidenceAlways {
		q.Evidence = recall.EvidenceAlways
		if always, err = r.rc.Recall(ctx, q); err != nil {
			r.find(StageRecall, "%s: recall with evidence always failed: %v", question, err)
			always = out
		}
	}
	r.m.Context.question(out.Tokens, always.Tokens, answered)

	r.leaks(ctx, a, out)
	return nil
}

// ledgerCurrent reports whether the ledger holds f at the instants.
func (r *runner) ledgerCurrent(ctx context.Context, tenant string, f recall.Fact, at sgam.At) bool {
	rows, err := r.s.Members(ctx, sgam.Key{Tenant: tenant, Subject: f.Subject, Attribute: f.Attribute}, at)
	if err != nil {
		return false
	}
	return slices.ContainsFunc(rows, func(g sgam.Fact) bool { return g.ID == f.ID && !g.Tombstone })
}

// leaks counts what the context holds that is not the asker's.
func (r *runner) leaks(ctx context.Context, a *Ask, out *recall.Context) {
	question := fmt.Sprintf("%q", a.Question)
	leak := func(format string, args ...any) {
		r.m.Leaks++
		r.find(StageLeak, question+" (tenant "+a.Tenant+"): "+format, args...)
	}
	for _, f := range append(slices.Clone(out.Facts), out.Related...) {
		if f.Tenant != a.Tenant {
			leak("cites fact %d of tenant %s", f.ID, f.Tenant)
			continue
		}
		if _, err := r.s.Trace(ctx, a.Tenant, f.ID); sgam.ErrorCode(err) == sgam.NotFound {
			leak("cites fact %d, which is not the tenant's", f.ID)
		}
	}
	for _, e := range out.Evidence {
		ep, err := r.s.Episode(ctx, a.Tenant, e.EpisodeID)
		if err != nil {
			leak("cites episode %s, which is not the tenant's", e.EpisodeID)
			continue
		}
		// The same id in two tenants: the cited episode must be the
		// asker's by its time and session too.
		if !e.OccurredAt.Equal(ep.OccurredAt) || e.Session != ep.Session {
			leak("cites episode %s of %s in session %q, but the tenant's episode %s is of %s in %q",
				e.EpisodeID, sgam.FormatTime(e.OccurredAt), e.Session, ep.ID, sgam.FormatTime(ep.OccurredAt), ep.Session)
			continue
		}
		// A snippet is cut from the content with its spaces collapsed.
		content := words.OneLine(ep.Content)
		for _, part := range strings.Split(e.Snippet, "…") {
			if part = words.OneLine(part); part != "" && !strings.Contains(content, part) {
				leak("cites episode %s with a snippet that is not its content: %q", e.EpisodeID, part)
				break
			}
		}
	}
	// The block restates the question: what it says is the asker's own.
	rendered := strings.ReplaceAll(out.Rendered, words.OneLine(a.Question), "")
	for _, text := range a.Expect.Absent {
		if strings.Contains(rendered, text) {
			leak("the context says %q", text)
		}
	}
}

func (r *runner) forget(ctx context.Context, f *Forget) error {
	var content string
	if f.Episode != "" {
		if ep, err := r.s.Episode(ctx, f.Tenant, f.Episode); err == nil {
			content = ep.Content
		}
	}
	if _, err := r.s.Forget(ctx, sgam.ForgetRequest{Tenant: f.Tenant, Subject: f.Subject, Episode: f.Episode}); err != nil {
		r.m.WriteErrors++
		r.find(StageWrite, "forgetting: %v", err)
		return nil
	}
	gone := func(ok bool, format string, args ...any) {
		r.m.Forget.add(ok)
		if !ok {
			r.find(StageForget, format, args...)
		}
	}
	episodes := slices.Clone(f.Gone.Episodes)
	if f.Episode != "" && !slices.Contains(episodes, f.Episode) {
		episodes = append(episodes, f.Episode)
	}
	for _, id := range episodes {
		_, err := r.s.Episode(ctx, f.Tenant, id)
		gone(sgam.ErrorCode(err) == sgam.NotFound, "episode %s is still there after the forget", id)
		recs, err := r.s.Extractions(ctx, f.Tenant, id)
		gone(len(recs) == 0, "episode %s still has %d extraction records (err %v)", id, len(recs), err)
	}
	if content != "" {
		hits, err := r.s.SearchEpisodes(ctx, sgam.SearchQuery{Tenant: f.Tenant, Text: words.Truncate(content, 400), Limit: sgam.MaxSearchLimit, NoSnippet: true})
		if err != nil {
			return err
		}
		found := slices.ContainsFunc(hits, func(h sgam.EpisodeHit) bool { return h.Episode.ID == f.Episode })
		gone(!found, "search still finds episode %s", f.Episode)
	}
	subjects := slices.Clone(f.Gone.Subjects)
	if f.Subject != "" && !slices.Contains(subjects, f.Subject) {
		subjects = append(subjects, f.Subject)
	}
	for _, subj := range subjects {
		known, err := r.s.Subjects(ctx, f.Tenant, []string{subj})
		if err != nil {
			return err
		}
		gone(len(known) == 0, "subject %s still has facts", subj)
	}
	for _, w := range f.Gone.Words {
		hits, err := r.s.SearchEpisodes(ctx, sgam.SearchQuery{Tenant: f.Tenant, Text: w, Limit: sgam.MaxSearchLimit, NoSnippet: true})
		if err != nil {
			return err
		}
		var ids []string
		for _, h := range hits {
			if strings.Contains(strings.ToLower(h.Episode.Content), strings.ToLower(w)) {
				ids = append(ids, h.Episode.ID)
			}
		}
		gone(len(ids) == 0, "search still finds %q in %s", w, strings.Join(ids, ", "))
	}
	return nil
}

func (r *runner) review(ctx context.Context, st *Step) error {
	rv := st.Confirm
	if rv == nil {
		rv = st.Dismiss
	}
	cs, err := r.s.Pending(ctx, sgam.PendingQuery{Tenant: rv.Tenant, Subject: rv.Subject, Limit: 10_000})
	if err != nil {
		return err
	}
	i := slices.IndexFunc(cs, func(c sgam.Candidate) bool {
		return c.Attribute == rv.Attribute && (isNull(rv.Value) || sameValue(valueText(c.Value), rv.Value))
	})
	if i < 0 {
		r.m.Checkpoints.add(false)
		r.find(StageCheck, "no pending candidate %s.%s to %s", rv.Subject, rv.Attribute, st.Kind)
		return nil
	}
	if st.Kind == StepConfirm {
		_, err = r.s.Confirm(ctx, rv.Tenant, cs[i].ID, rv.Episode)
	} else {
		err = r.s.Dismiss(ctx, rv.Tenant, cs[i].ID)
	}
	if err != nil {
		r.m.WriteErrors++
		r.find(StageWrite, "%s %s: %v", st.Kind, cs[i].ID, err)
	}
	return nil
}
