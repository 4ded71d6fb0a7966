package recall

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/sgam-dev/sgam"
	"github.com/sgam-dev/sgam/recall/when"
	"github.com/sgam-dev/sgam/schema"
	"github.com/sgam-dev/sgam/words"
)

// gather does every store read of one recall, in the order the reads
// depend on each other: the tenant's schema (for the instants); the
// subjects the question or the session names, and then their state
// first (the attributes, the state and history, the facts related
// through references); the evidence's candidates (search, vectors, the
// episodes of the period the question names, the conversation around
// them), unless the facts answer with their sources' words; when no
// subject was named, the subjects of the best evidence and their state;
// the records and episodes the quotes of the facts come from. Where what to read next depends on a ranking
// (the subjects of the best evidence, the relations of the facts first
// in order, the facts the budget can show) it calls the pure rank,
// selection and render steps. The store's batched reads are used where it
// has them (Subjects, SubjectsNamed, SubjectsFrom, Around); it has none
// for State, History, Attributes, Relation, Extractions and Episode,
// which are read once per subject, key, attribute or episode.
type gather struct {
	r   *Recaller
	ctx context.Context
	q   Query
	w   weights
	// out's header is filled as it is read: the instants, the subjects,
	// the attributes, how evidence was searched and the warnings.
	out *Context

	at sgam.At
	sc *tenantSchema
	// episodes are those read so far, by id: the quotes' episodes are
	// often among the evidence's candidates.
	episodes  map[string]*sgam.Episode
	states    map[string][]sgam.Fact
	relations map[string]relation
	// ungoverned: the store said no schema serves the tenant.
	ungoverned bool
	// turn is the recall's place among those computing at once, given up
	// while the embeddings server answers.
	turn *turn
}

// relation is what Schemas.Relation says of an attribute.
type relation struct{ ref, governed bool }

func newGather(r *Recaller, ctx context.Context, q Query, out *Context, t *turn) *gather {
	return &gather{r: r, ctx: ctx, q: q, w: defaultWeights, out: out, turn: t,
		episodes: map[string]*sgam.Episode{}, states: map[string][]sgam.Fact{}, relations: map[string]relation{}}
}

// read reads what the recall of g.q at now needs, and returns it ranked:
// what render shows.
func (g *gather) read(now time.Time) (answer, error) {
	var a answer
	sc, err := g.r.schema(g.ctx, g.q.Tenant)
	if err != nil {
		return a, err
	}
	g.sc = sc
	found := when.Parse(g.q.Question, now)
	instants(g.out, g.q, found, sc, now)
	g.at = sgam.At{AsOf: g.out.AsOf, KnownAt: g.out.KnownAt}

	// When the subjects in play do not come from the evidence, their
	// state is read first: under auto, if the facts answer and each line
	// quotes its source, no episode would be cited (supporting), so
	// nothing is searched, and no question embedded.
	if g.out.Subjects, err = g.named(); err != nil {
		return a, err
	}
	stateFirst, quoted := len(g.out.Subjects) > 0, false
	if stateFirst {
		if err := g.known(&a, found.Past); err != nil {
			return a, err
		}
		if g.q.Evidence == EvidenceAuto && answered(g.out.Subjects, g.out.Attributes, a.current, a.absent, g.sc) {
			if err := g.quotes(&a); err != nil {
				return a, err
			}
			quoted = true
			if len(unquoted(a)) == 0 {
				return a, g.markStale(&a, found.Past)
			}
		}
	}
	if g.q.EvidenceLimit != None && g.q.Question != "" {
		period := found.Period
		if period.IsZero() {
			period = found.Around // "early June", "between May 1 and May 3"
		}
		p, err := g.pool(period)
		if err != nil {
			return a, err
		}
		a.evidence = rankEvidence(p, words.Terms(g.q.Question, words.MaxTerms), g.q.EvidenceLimit, g.w)
	}
	if !stateFirst {
		if g.out.Subjects, err = g.fromEvidence(a.evidence); err != nil {
			return a, err
		}
		if err := g.known(&a, found.Past); err != nil {
			return a, err
		}
	}
	if !quoted {
		if err := g.quotes(&a); err != nil {
			return a, err
		}
	}
	if g.q.Evidence == EvidenceAuto {
		// A fact's source is cited however weakly its words match.
		if answered(g.out.Subjects, g.out.Attributes, a.current, a.absent, g.sc) {
			a.evidence = supporting(a.evidence, a)
		} else {
			a.evidence = aboveBar(a.evidence, g.w.bar)
		}
	}
	return a, g.markStale(&a, found.Past)
}

// known reads the facts of the subjects in play: the attributes the read
// is narrowed to, the values and absences at the instants (and the past
// ones, past), and the facts related through references; not yet their
// quotes.
func (g *gather) known(a *answer, past bool) error {
	var err error
	if g.out.Attributes, err = g.attributes(g.out.Subjects); err != nil {
		return err
	}
	if a.current, a.past, err = g.facts(g.out.Subjects, g.out.Attributes, past); err != nil {
		return err
	}
	if a.absent, err = g.absences(g.out.Subjects, g.out.Attributes, a.current); err != nil {
		return err
	}
	if g.q.Hops != None {
		if a.related, err = g.related(a.current, g.out.Subjects); err != nil {
			return err
		}
	}
	return nil
}

// tenantSchema is the parsed schema in force for a tenant (nil parsed:
// none), with the instant of its latest version that declares migrations.
type tenantSchema struct {
	parsed     *schema.Schema
	version    int
	migratedAt time.Time
}

func (r *Recaller) schema(ctx context.Context, tenant string) (*tenantSchema, error) {
	sv, err := r.store.Schema(ctx, tenant)
	if err != nil || sv.Version == 0 {
		return &tenantSchema{}, err
	}
	s, err := r.schemas.Parsed(sv)
	if err != nil {
		return nil, fmt.Errorf("recall: %w", err)
	}
	ts := &tenantSchema{parsed: s, version: sv.Version}
	if len(s.Migrations) > 0 {
		ts.migratedAt = sv.AppliedAt
	}
	return ts, nil
}

// pool reads the evidence's candidates: the index's best episodes for the
// question (fused with the vectors' nearest, with an embedder), the
// episodes that occurred in the period the question names when it is
// short (weights.periodDays), and the conversation around the best of
// them, in one read.
func (g *gather) pool(period when.Period) (pool, error) {
	depth := g.w.searchDepth(g.q.EvidenceLimit)
	g.out.Search = "lexical"
	hits, err := g.r.store.SearchEpisodes(g.ctx, sgam.SearchQuery{Tenant: g.q.Tenant, Text: g.q.Question, Limit: depth, KnownAt: g.at.KnownAt, NoSnippet: true})
	if err != nil {
		return pool{}, err
	}
	p := pool{hits: hits, period: period, asksWhen: when.AsksWhen(g.q.Question)}
	if g.r.embed != nil && g.r.vectors != nil {
		near, err := g.nearest(depth)
		if err != nil {
			return pool{}, err
		}
		if len(near) > 0 {
			p.hits = fuse(hits, near, depth, g.w)
			g.out.Search = "lexical+vector (" + g.r.embed.Model() + ")"
		}
	}
	if !period.IsZero() && period.End.Sub(period.Start) <= time.Duration(g.w.periodDays)*24*time.Hour {
		if p.hits, err = g.inPeriod(p.hits, period); err != nil {
			return pool{}, err
		}
	}
	if expanded := g.w.expand(p.hits); len(expanded) > 0 {
		at := make([]sgam.Episode, len(expanded))
		for i, j := range expanded {
			at[i] = p.hits[j].Episode
		}
		if p.windows, err = g.r.store.Around(g.ctx, g.q.Tenant, at, around, g.at.KnownAt); err != nil {
			return pool{}, err
		}
	}
	// The pool's episodes are kept where they are (no copies of them):
	// nothing moves or changes them after this.
	for i := range p.hits {
		g.episodes[p.hits[i].Episode.ID] = &p.hits[i].Episode
	}
	for _, w := range p.windows {
		for i := range w.Before {
			g.episodes[w.Before[i].ID] = &w.Before[i]
		}
		for i := range w.After {
			g.episodes[w.After[i].ID] = &w.After[i]
		}
	}
	return p, nil
}

// inPeriod returns the hits followed by the episodes that occurred in the
// period (the first periodRead of them, recorded by the read's known_at)
// that are not among them, with score 0: rankEvidence ranks them by their
// words, their period and their conversation.
func (g *gather) inPeriod(hits []sgam.EpisodeHit, period when.Period) ([]sgam.EpisodeHit, error) {
	// A period at an edge of the instants a store keeps (years 0001 to
	// 9999: "3 days before 0001-01-02", "in December 9999") runs to that
	// edge: a zero bound is none. One beyond them holds no episode.
	if period.Start.After(sgam.MaxTime()) || !period.End.After(sgam.MinTime()) {
		return hits, nil
	}
	since, before := period.Start, period.End.Add(time.Microsecond)
	if !since.After(sgam.MinTime()) {
		since = time.Time{}
	}
	if before.After(sgam.MaxTime()) {
		before = time.Time{}
	}
	eps, err := g.r.store.Episodes(g.ctx, sgam.EpisodeQuery{Tenant: g.q.Tenant, Since: since, Before: before, Limit: g.w.periodRead})
	if err != nil {
		return nil, err
	}
	have := make(map[string]bool, len(hits))
	for _, h := range hits {
		have[h.Episode.ID] = true
	}
	for _, e := range eps {
		if !have[e.ID] && !e.RecordedAt.After(g.at.KnownAt) {
			hits = append(hits, sgam.EpisodeHit{Episode: e})
		}
	}
	return hits, nil
}

// nearest reads the episodes nearest to the question's vector. When the
// vectors cannot serve (the embedding endpoint fails, the stored vectors
// are of another dimension, none is stored yet) it returns none and says
// why in a warning: recall goes on lexically.
func (g *gather) nearest(depth int) ([]sgam.EpisodeHit, error) {
	model := g.r.embed.Model()
	g.turn.give()
	vecs, _, err := g.r.embed.Embed(g.ctx, []string{g.q.Question})
	if terr := g.turn.take(g.ctx); terr != nil {
		return nil, terr
	}
	if err != nil || len(vecs) != 1 {
		if g.ctx.Err() != nil {
			return nil, g.ctx.Err()
		}
		g.out.Warnings = append(g.out.Warnings, "the embedding endpoint failed, so the evidence is lexical only: "+errText(err))
		return nil, nil
	}
	near, err := g.r.vectors.NearestEpisodes(g.ctx, sgam.VectorQuery{Tenant: g.q.Tenant, Model: model, Vector: vecs[0], Limit: depth, KnownAt: g.at.KnownAt})
	if sgam.ErrorCode(err) == sgam.Invalid {
		// The model answers vectors of another dimension than those
		// stored under its name (it was changed): lexical until the
		// queue has embedded the episodes again.
		g.out.Warnings = append(g.out.Warnings, "the stored vectors do not fit the question's, so the evidence is lexical only: "+err.Error())
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	if len(near) == 0 {
		// Nothing of the tenant is embedded under this model (yet): the
		// workers embed episodes in the background.
		g.out.Warnings = append(g.out.Warnings, "no episode of this tenant has a vector of model "+model+
			" yet, so the evidence is lexical only: the workers of sgam serve and sgam worker embed the episodes")
	}
	return near, nil
}

// errText is an error's message for a warning (the llm package keeps keys
// out of its errors).
func errText(err error) string {
	if err == nil {
		return "no vector in the answer"
	}
	return err.Error()
}

// named returns the subjects in play that the evidence has no part in,
// at most MaxSubjects: the given ones; else the known subjects the
// question names (by id, then by one of their names) and those of the
// session's latest facts. When there are none, fromEvidence finds them.
func (g *gather) named() ([]string, error) {
	if len(g.q.Subjects) > 0 {
		out := []string{}
		for _, s := range g.q.Subjects {
			if !slices.Contains(out, s) { // named twice, asked once
				out = append(out, s)
			}
		}
		return out, nil
	}
	out := []string{}
	add := func(ids []string) {
		for _, id := range ids {
			if len(out) < MaxSubjects && !slices.Contains(out, id) {
				out = append(out, id)
			}
		}
	}
	named, err := g.r.store.Subjects(g.ctx, g.q.Tenant, words.Candidates(g.q.Question, sgam.MaxSubjectsLookup))
	if err != nil {
		return nil, err
	}
	add(named)
	byName, err := g.r.store.SubjectsNamed(g.ctx, g.q.Tenant, words.Names(g.q.Question, sgam.MaxNamesLookup), g.at)
	if err != nil {
		return nil, err
	}
	for _, n := range byName {
		add([]string{n.Subject})
	}
	if g.q.Session != "" && len(out) < MaxSubjects {
		recent, err := g.r.store.Episodes(g.ctx, sgam.EpisodeQuery{Tenant: g.q.Tenant, Session: g.q.Session, Latest: true, Limit: 4})
		if err != nil {
			return nil, err
		}
		if len(recent) > 0 {
			from, err := g.r.store.SubjectsFrom(g.ctx, g.q.Tenant, episodeIDs(recent), g.at.KnownAt)
			if err != nil {
				return nil, err
			}
			add(from)
		}
	}
	return out, nil
}

// fromEvidence returns the subjects of the facts the best evidence (its
// first three episodes) is the source of, at most MaxSubjects.
func (g *gather) fromEvidence(evidence []sgam.EpisodeHit) ([]string, error) {
	if len(evidence) == 0 {
		return []string{}, nil
	}
	top := make([]sgam.Episode, 0, 3)
	for _, h := range evidence[:min(3, len(evidence))] {
		top = append(top, h.Episode)
	}
	from, err := g.r.store.SubjectsFrom(g.ctx, g.q.Tenant, episodeIDs(top), g.at.KnownAt)
	if err != nil {
		return nil, err
	}
	out := []string{}
	for _, id := range from {
		if len(out) < MaxSubjects && !slices.Contains(out, id) {
			out = append(out, id)
		}
	}
	return out, nil
}

func episodeIDs(es []sgam.Episode) []string {
	ids := make([]string, len(es))
	for i, e := range es {
		ids[i] = e.ID
	}
	return ids
}

// attributes are the attributes the read is narrowed to, best match
// first: the given ones, else those the question names (the schema's, or,
// with no schema, those the subjects have rows of). None: every
// attribute.
func (g *gather) attributes(subjects []string) ([]string, error) {
	if len(g.q.Attributes) > 0 {
		return g.sc.given(g.q.Attributes), nil
	}
	asked := askedStems(g.q.Question)
	if len(asked) == 0 {
		return []string{}, nil
	}
	if g.sc.parsed != nil {
		return matchAttributes(asked, g.sc.declaredAttributes()), nil
	}
	// Every attribute the subjects ever had: a retracted value's attribute
	// is still one the question may name.
	var cands []namedAttribute
	seen := map[string]bool{}
	for _, s := range subjects {
		attrs, err := g.r.store.Attributes(g.ctx, g.q.Tenant, s)
		if err != nil {
			return nil, err
		}
		for _, a := range attrs {
			if !seen[a] {
				seen[a] = true
				cands = append(cands, namedAttribute{name: a, names: []string{a}})
			}
		}
	}
	return matchAttributes(asked, cands), nil
}

// facts reads the state of the subjects at the instants, narrowed to the
// attributes, and, with past set (the question is about the past or
// history), the histories of those attributes, for the values superseded
// before as_of; both in the order of the attributes' match.
func (g *gather) facts(subjects, attrs []string, past bool) (current, old []Fact, err error) {
	for _, s := range subjects {
		state, err := g.state(s)
		if err != nil {
			return nil, nil, err
		}
		shown := narrowed(state, attrs, g.sc)
		if current == nil {
			current = shown
		} else {
			current = append(current, shown...)
		}
		if !past {
			continue
		}
		for _, k := range historyKeys(g.q.Tenant, s, shown, attrs) {
			rows, err := g.r.store.History(g.ctx, k)
			if err != nil {
				return nil, nil, err
			}
			old = append(old, superseded(rows, g.at)...)
		}
	}
	byAttribute(current, attrs, g.sc)
	byAttribute(old, attrs, g.sc)
	return current, old, nil
}

// state is a subject's state at the read's instants, read once.
func (g *gather) state(subject string) ([]sgam.Fact, error) {
	if f, ok := g.states[subject]; ok {
		return f, nil
	}
	f, err := g.r.store.State(g.ctx, g.q.Tenant, subject, g.at)
	if err != nil {
		return nil, err
	}
	g.states[subject] = f
	return f, nil
}

// related follows relations from the facts in play, Hops deep: the state
// of each subject a relation leads to (at most MaxRelated of them, none in
// play already), each fact marked with the fact that led to it.
func (g *gather) related(from []Fact, inPlay []string) ([]Fact, error) {
	seen := map[string]bool{}
	for _, s := range inPlay {
		seen[s] = true
	}
	var out []Fact
	frontier := from
	for hop := 0; hop < g.q.Hops && len(frontier) > 0; hop++ {
		targets, err := g.targets(frontier)
		if err != nil {
			return nil, err
		}
		var next []Fact
		for i, f := range frontier {
			target := targets[i]
			if target == "" || seen[target] || len(seen) >= len(inPlay)+MaxRelated {
				continue
			}
			seen[target] = true
			state, err := g.state(target)
			if err != nil {
				return nil, err
			}
			for _, t := range state {
				next = append(next, Fact{Fact: t, Status: Current, Via: f.ID})
			}
		}
		out = append(out, next...)
		frontier = next
	}
	return out, nil
}

// targets are the subjects the facts lead to, "" for a fact that leads
// nowhere. A fact leads to the subject its value names when its attribute
// is a relation, as the store's schemas say (Schemas.Relation, as
// Traverse asks): under a schema, an attribute of type ref; where no
// schema serves the tenant, any attribute whose value is a known subject
// (asked of the store in one read).
func (g *gather) targets(facts []Fact) ([]string, error) {
	targets := make([]string, len(facts))
	var unsure []int // facts whose target must be a known subject
	for i, f := range facts {
		id, ok := subjectValue(f.Value)
		if !ok {
			continue
		}
		rel, err := g.relation(f.Attribute)
		if err != nil {
			return nil, err
		}
		if rel.governed && !rel.ref {
			continue
		}
		targets[i] = id
		if !rel.governed {
			unsure = append(unsure, i)
		}
	}
	if len(unsure) == 0 {
		return targets, nil
	}
	var ids []string
	for _, i := range unsure {
		if !slices.Contains(ids, targets[i]) {
			ids = append(ids, targets[i])
		}
	}
	known := map[string]bool{}
	for chunk := range slices.Chunk(ids, sgam.MaxSubjectsLookup) {
		found, err := g.r.store.Subjects(g.ctx, g.q.Tenant, chunk)
		if err != nil {
			return nil, err
		}
		for _, s := range found {
			known[s] = true
		}
	}
	for _, i := range unsure {
		if !known[targets[i]] {
			targets[i] = ""
		}
	}
	return targets, nil
}

// relation asks the store's schemas whether an attribute is a relation,
// once per attribute; an answer that no schema governs the tenant holds
// for every attribute.
func (g *gather) relation(attribute string) (relation, error) {
	if rel, ok := g.relations[attribute]; ok {
		return rel, nil
	}
	if g.ungoverned {
		return relation{}, nil
	}
	var rel relation
	var err error
	if rel.ref, rel.governed, err = g.r.store.Relation(g.ctx, g.q.Tenant, attribute); err != nil {
		return rel, err
	}
	g.relations[attribute], g.ungoverned = rel, !rel.governed
	return rel, nil
}

// quotes reads the sources of the facts the budget can show (render
// without quotes says which: a quote only lengthens a fact's line) and of
// the rows that left an asked key without a value, each episode's
// extraction records once, and the episode itself once when a fact's
// quote must come from its content, and sets each fact's quote.
func (g *gather) quotes(a *answer) error {
	records := map[string][]sgam.Extraction{}
	quote := func(f *Fact) error {
		if len(f.Sources) == 0 {
			return nil
		}
		src := f.Sources[0]
		recs, ok := records[src]
		if !ok {
			var err error
			recs, err = g.r.store.Extractions(g.ctx, g.q.Tenant, src)
			if err != nil && sgam.ErrorCode(err) != sgam.NotFound {
				return err
			}
			records[src] = recs
		}
		if q, ok := recordedQuote(f.Fact, recs); ok {
			f.Quote = q
			return nil
		}
		ep, ok := g.episodes[src]
		if !ok {
			read, err := g.r.store.Episode(g.ctx, g.q.Tenant, src)
			switch {
			case sgam.ErrorCode(err) == sgam.NotFound:
				read = sgam.Episode{} // forgotten: it quotes nothing
			case err != nil:
				return err
			}
			ep = &read
			g.episodes[src] = ep
		}
		f.Quote = contentQuote(f.Fact, ep.Content)
		return nil
	}
	n := reach(g.out, *a)
	for _, list := range [][]Fact{a.current, a.past, a.related} {
		for i := range list[:min(n, len(list))] {
			if err := quote(&list[i]); err != nil {
				return err
			}
		}
		n -= min(n, len(list))
	}
	for _, ab := range a.absent {
		if ab.end != nil {
			if err := quote(ab.end); err != nil {
				return err
			}
		}
	}
	return nil
}
