package inspector

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io/fs"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/sgam-dev/sgam"
	"github.com/sgam-dev/sgam/recall"
	"github.com/sgam-dev/sgam/schema"
)

func (in *Inspector) routes() {
	static, _ := fs.Sub(staticFiles, "static")
	in.mux.Handle("GET "+Prefix+"static/", http.StripPrefix(Prefix+"static/", http.FileServerFS(static)))
	in.mux.HandleFunc("GET "+Prefix+"signin", in.signinPage)
	in.mux.HandleFunc("POST "+Prefix+"signin", in.signin)
	in.handle("POST "+Prefix+"signout", sgam.RoleRead, "Sign out", func(w http.ResponseWriter, r *http.Request, c Caller) (page, error) {
		http.SetCookie(w, &http.Cookie{Name: cookieName, Value: "", Path: Prefix, MaxAge: -1, HttpOnly: true, SameSite: http.SameSiteStrictMode, Secure: secure(r)})
		return in.redirect(w, r, c, Prefix+"signin", "")
	})
	in.handle("GET "+Prefix+"{$}", sgam.RoleRead, "Overview", in.overview)
	in.handle("GET "+Prefix+"subjects", sgam.RoleRead, "Subject", func(w http.ResponseWriter, r *http.Request, c Caller) (page, error) {
		s := strings.TrimSpace(r.URL.Query().Get("subject"))
		if s == "" {
			return in.redirect(w, r, c, Prefix, "")
		}
		return in.redirect(w, r, c, Prefix+"subjects/"+url.PathEscape(s), "")
	})
	in.handle("GET "+Prefix+"subjects/{subject}", sgam.RoleRead, "Subject", in.subject)
	in.handle("GET "+Prefix+"episodes/{id}", sgam.RoleRead, "Episode", in.episode)
	in.handle("POST "+Prefix+"episodes/{id}/reextract", sgam.RoleWrite, "Episode", in.reextract)
	in.handle("GET "+Prefix+"recall", sgam.RoleRead, "Recall", in.recall)
	in.handle("GET "+Prefix+"pending", sgam.RoleRead, "Pending", in.pending)
	in.handle("POST "+Prefix+"pending/{id}/confirm", sgam.RoleWrite, "Pending", in.confirm)
	in.handle("POST "+Prefix+"pending/{id}/dismiss", sgam.RoleWrite, "Pending", func(w http.ResponseWriter, r *http.Request, c Caller) (page, error) {
		if err := in.cfg.Store.Dismiss(r.Context(), c.Tenant, r.PathValue("id")); err != nil {
			return page{}, err
		}
		return in.redirect(w, r, c, Prefix+"pending", "dismissed "+r.PathValue("id"))
	})
	in.handle("GET "+Prefix+"forget", sgam.RoleAdmin, "Forget", in.forgetForm)
	in.handle("POST "+Prefix+"forget/preview", sgam.RoleAdmin, "Forget", in.forgetPreview)
	in.handle("POST "+Prefix+"forget", sgam.RoleAdmin, "Forget", in.forget)
	in.handle("GET "+Prefix+"schema", sgam.RoleRead, "Schema", in.schema)
}

// --- sign-in

func (in *Inspector) signinPage(w http.ResponseWriter, r *http.Request) {
	if in.cfg.Dev {
		http.Redirect(w, r, Prefix, http.StatusSeeOther)
		return
	}
	in.render(w, r, Caller{}, "Sign in", page{name: "signin", data: map[string]string{"Next": safeNext(r.URL.Query().Get("next"))}})
}

func (in *Inspector) signin(w http.ResponseWriter, r *http.Request) {
	r.Body = http.MaxBytesReader(w, r.Body, 8<<10)
	if !sameOrigin(r) {
		in.fail(w, r, Caller{}, sgam.Errorf(sgam.Forbidden, "origin", "the form was posted from another site"))
		return
	}
	if err := r.ParseForm(); err != nil || in.cfg.Dev {
		http.Redirect(w, r, Prefix, http.StatusSeeOther)
		return
	}
	key := strings.TrimSpace(r.PostForm.Get("key"))
	next := safeNext(r.PostForm.Get("next"))
	if _, err := in.cfg.Authenticate(r.Context(), key); err != nil {
		in.render(w, r, Caller{}, "Sign in", page{name: "signin", status: http.StatusUnauthorized,
			data: map[string]string{"Next": next, "Error": "That key is not valid (unknown, revoked or mistyped)."}})
		return
	}
	http.SetCookie(w, &http.Cookie{Name: cookieName, Value: key, Path: Prefix, HttpOnly: true, SameSite: http.SameSiteStrictMode,
		Secure: secure(r), MaxAge: 12 * 3600})
	http.Redirect(w, r, next, http.StatusSeeOther)
}

// secure reports whether the browser reached r over TLS: this server's,
// or a proxy's in front of it that says so. The cookie holds the API key,
// so it is Secure whenever the browser speaks HTTPS.
func secure(r *http.Request) bool {
	return r.TLS != nil || strings.EqualFold(r.Header.Get("X-Forwarded-Proto"), "https")
}

// safeNext keeps a redirect target inside the inspector.
func safeNext(next string) string {
	if !strings.HasPrefix(next, Prefix) || strings.HasPrefix(next, "//") || strings.Contains(next, "\\") {
		return Prefix
	}
	return next
}

// --- overview

type overviewData struct {
	Stats    sgam.TenantStats
	Budget   sgam.Budget
	Receipts []sgam.Receipt
	Episodes []sgam.Episode
}

func (in *Inspector) overview(w http.ResponseWriter, r *http.Request, c Caller) (page, error) {
	ctx := r.Context()
	st, err := in.cfg.Store.Stats(ctx, c.Tenant)
	if err != nil {
		return page{}, err
	}
	b, err := in.cfg.Store.Budget(ctx, c.Tenant)
	if err != nil {
		return page{}, err
	}
	d := overviewData{Stats: st, Budget: b}
	if c.Role.Allows(sgam.RoleAdmin) { // receipts are the operator's, as GET /v1/receipts
		rcs, err := in.cfg.Store.Receipts(ctx, c.Tenant)
		if err != nil {
			return page{}, err
		}
		slices.Reverse(rcs)
		d.Receipts = rcs[:min(len(rcs), 10)]
	}
	eps, err := in.cfg.Store.Episodes(ctx, sgam.EpisodeQuery{Tenant: c.Tenant, Limit: 10, Latest: true})
	if err != nil {
		return page{}, err
	}
	slices.Reverse(eps)
	d.Episodes = eps
	return page{name: "overview", data: d}, nil
}

// --- subject

type subjectData struct {
	Subject string
	// KnownAt is the transaction time the page shows ("" : now); Instants
	// the instants a row was recorded or retracted at, to pick from.
	KnownAt  string
	Instants []instant
	Current  []sgam.Fact
	Timeline []timeline
}

type instant struct {
	At       string
	Label    string
	Selected bool
}

func (in *Inspector) subject(w http.ResponseWriter, r *http.Request, c Caller) (page, error) {
	ctx := r.Context()
	subject := r.PathValue("subject")
	if err := sgam.CheckSubject(subject); err != nil {
		return page{}, err
	}
	now := in.cfg.Clock.Now()
	d := subjectData{Subject: subject}
	knownAt := now
	if k := r.URL.Query().Get("known_at"); k != "" {
		t, err := sgam.ParseTime("known_at", k)
		if err != nil {
			return page{}, err
		}
		knownAt, d.KnownAt = t, sgam.FormatTime(t)
	}
	current, err := in.cfg.Store.State(ctx, c.Tenant, subject, sgam.At{AsOf: now, KnownAt: knownAt})
	if err != nil {
		return page{}, err
	}
	d.Current = current
	// The instants the subject's beliefs changed at, named by the
	// episodes whose rows were recorded then.
	seen := map[time.Time][]string{}
	hist, err := in.history(ctx, c.Tenant, subject)
	if err != nil {
		return page{}, err
	}
	if len(hist) == 0 {
		return page{}, sgam.Errorf(sgam.NotFound, "subject", "no such subject")
	}
	for _, h := range hist {
		for _, f := range h.rows {
			names := seen[f.RecordedAt]
			for _, src := range f.Sources[:min(len(f.Sources), 1)] {
				if !slices.Contains(names, src) {
					names = append(names, src)
				}
			}
			seen[f.RecordedAt] = names
			if f.RetractedAt != nil {
				seen[*f.RetractedAt] = seen[*f.RetractedAt]
			}
		}
		d.Timeline = append(d.Timeline, drawTimeline(h.attribute, h.rows, now, knownAt))
	}
	var ts []time.Time
	for t := range seen {
		ts = append(ts, t)
	}
	slices.SortFunc(ts, func(a, b time.Time) int { return a.Compare(b) })
	for _, t := range ts {
		label := "a row retracted"
		if names := seen[t]; len(names) > 0 {
			slices.Sort(names)
			label = strings.Join(names, ", ") + " recorded"
		}
		d.Instants = append(d.Instants, instant{At: sgam.FormatTime(t), Label: label, Selected: d.KnownAt == sgam.FormatTime(t)})
	}
	return page{name: "subject", data: d}, nil
}

// attributeRows are every row of one attribute of a subject.
type attributeRows struct {
	attribute string
	rows      []sgam.Fact
}

// history is every row of a subject, attribute by attribute: what the
// subject page draws and what forgetting it deletes. None: no subject.
func (in *Inspector) history(ctx context.Context, tenant, subject string) ([]attributeRows, error) {
	attrs, err := in.cfg.Store.Attributes(ctx, tenant, subject)
	if err != nil {
		return nil, err
	}
	out := make([]attributeRows, 0, len(attrs))
	for _, a := range attrs {
		rows, err := in.cfg.Store.History(ctx, sgam.Key{Tenant: tenant, Subject: subject, Attribute: a})
		if err != nil {
			return nil, err
		}
		out = append(out, attributeRows{attribute: a, rows: rows})
	}
	return out, nil
}

// supportedBy is every row, believed or retracted, that an episode is a
// source of: rows of the subjects its facts are about.
func (in *Inspector) supportedBy(ctx context.Context, tenant, episode string) ([]sgam.Fact, error) {
	subjects, err := in.cfg.Store.SubjectsFrom(ctx, tenant, []string{episode}, time.Time{})
	if err != nil {
		return nil, err
	}
	var out []sgam.Fact
	for _, s := range subjects {
		hist, err := in.history(ctx, tenant, s)
		if err != nil {
			return nil, err
		}
		for _, h := range hist {
			for _, f := range h.rows {
				if slices.Contains(f.Sources, episode) {
					out = append(out, f)
				}
			}
		}
	}
	return out, nil
}

// --- episode

type episodeData struct {
	Episode     sgam.Episode
	Facts       []sgam.Fact
	Extractions []extractionView
}

type extractionView struct {
	sgam.Extraction
	Rejected []rejectionView
}

type rejectionView struct {
	sgam.Rejection
	Update string
}

func (in *Inspector) episode(w http.ResponseWriter, r *http.Request, c Caller) (page, error) {
	ctx := r.Context()
	ep, err := in.cfg.Store.Episode(ctx, c.Tenant, r.PathValue("id"))
	if err != nil {
		return page{}, err
	}
	d := episodeData{Episode: ep}
	rows, err := in.supportedBy(ctx, c.Tenant, ep.ID)
	if err != nil {
		return page{}, err
	}
	for _, f := range rows {
		if f.RetractedAt == nil { // the believed ones
			d.Facts = append(d.Facts, f)
		}
	}
	recs, err := in.cfg.Store.Extractions(ctx, c.Tenant, ep.ID)
	if err != nil {
		return page{}, err
	}
	for i := len(recs) - 1; i >= 0; i-- { // newest first
		x := extractionView{Extraction: recs[i]}
		for _, rj := range recs[i].Rejected {
			x.Rejected = append(x.Rejected, rejectionView{Rejection: rj, Update: indent(rj.Update)})
		}
		d.Extractions = append(d.Extractions, x)
	}
	return page{name: "episode", data: d}, nil
}

func indent(raw []byte) string {
	var b bytes.Buffer
	if json.Indent(&b, raw, "", "  ") != nil {
		return string(raw)
	}
	return b.String()
}

func (in *Inspector) reextract(w http.ResponseWriter, r *http.Request, c Caller) (page, error) {
	id := r.PathValue("id")
	if err := in.cfg.Store.QueueExtraction(r.Context(), c.Tenant, []string{id}, true); err != nil {
		return page{}, err
	}
	return in.redirect(w, r, c, Prefix+"episodes/"+url.PathEscape(id), "queued for extraction again: a worker of sgam serve or sgam worker takes it")
}

// --- recall

type recallData struct {
	Question string
	Context  *recall.Context
}

func (in *Inspector) recall(w http.ResponseWriter, r *http.Request, c Caller) (page, error) {
	q := strings.TrimSpace(r.URL.Query().Get("q"))
	d := recallData{Question: q}
	if q != "" {
		out, err := in.cfg.Recaller.Recall(r.Context(), recall.Query{Tenant: c.Tenant, Question: q})
		if err != nil {
			return page{}, err
		}
		d.Context = out
	}
	return page{name: "recall", data: d}, nil
}

// --- pending

func (in *Inspector) pending(w http.ResponseWriter, r *http.Request, c Caller) (page, error) {
	cs, err := in.cfg.Store.Pending(r.Context(), sgam.PendingQuery{Tenant: c.Tenant, Limit: 1000})
	if err != nil {
		return page{}, err
	}
	var review, signals []sgam.Candidate
	for _, x := range cs {
		if x.Reason == sgam.ReasonRecurrence {
			signals = append(signals, x)
		} else {
			review = append(review, x)
		}
	}
	return page{name: "pending", data: map[string]any{"Review": review, "Signals": signals}}, nil
}

// confirm confirms a candidate with the episode named in the form, or one
// the inspector captures to say who confirmed it here.
func (in *Inspector) confirm(w http.ResponseWriter, r *http.Request, c Caller) (page, error) {
	ctx := r.Context()
	id := r.PathValue("id")
	episode := strings.TrimSpace(r.PostForm.Get("episode_id"))
	if episode == "" {
		cand, err := in.candidate(r, c, id)
		if err != nil {
			return page{}, err
		}
		ep, err := in.cfg.Store.AddEpisode(ctx, sgam.Episode{Tenant: c.Tenant, ID: "confirm-" + id, Kind: "event",
			Content: fmt.Sprintf("Confirmed in the sgam inspector by key %s: %s.%s = %s (pending %s).", c.KeyID, cand.Subject, cand.Attribute, valueText(cand.Value), id)})
		if err != nil {
			return page{}, err
		}
		episode = ep.ID
	}
	res, err := in.cfg.Store.Confirm(ctx, c.Tenant, id, episode)
	if err != nil {
		return page{}, err
	}
	msg := "confirmed " + id
	if res.Fact != nil {
		msg += fmt.Sprintf(": fact %d", res.Fact.ID)
	}
	return in.redirect(w, r, c, Prefix+"pending", msg)
}

func (in *Inspector) candidate(r *http.Request, c Caller, id string) (sgam.Candidate, error) {
	cs, err := in.cfg.Store.Pending(r.Context(), sgam.PendingQuery{Tenant: c.Tenant, Limit: 10_000})
	if err != nil {
		return sgam.Candidate{}, err
	}
	for _, x := range cs {
		if x.ID == id {
			return x, nil
		}
	}
	return sgam.Candidate{}, sgam.Errorf(sgam.NotFound, "pending_id", "no such candidate")
}

// --- forget

type forgetData struct {
	Subject, Episode string
	// The preview: what the forget deletes.
	Preview  bool
	Content  string      // the episode's
	Facts    []sgam.Fact // rows that go
	Kept     []sgam.Fact // rows that stay, supported by other episodes too
	Receipt  *sgam.Receipt
	Problem  string
	Receipts []sgam.Receipt
}

func (in *Inspector) forgetForm(w http.ResponseWriter, r *http.Request, c Caller) (page, error) {
	rcs, err := in.cfg.Store.Receipts(r.Context(), c.Tenant)
	if err != nil {
		return page{}, err
	}
	slices.Reverse(rcs)
	return page{name: "forget", data: forgetData{Subject: r.URL.Query().Get("subject"), Episode: r.URL.Query().Get("episode"), Receipts: rcs[:min(len(rcs), 10)]}}, nil
}

func (in *Inspector) forgetPreview(w http.ResponseWriter, r *http.Request, c Caller) (page, error) {
	ctx := r.Context()
	d := forgetData{Subject: strings.TrimSpace(r.PostForm.Get("subject")), Episode: strings.TrimSpace(r.PostForm.Get("episode"))}
	if _, _, err := (sgam.ForgetRequest{Tenant: c.Tenant, Subject: d.Subject, Episode: d.Episode}).Check(); err != nil {
		d.Problem = sgam.ErrorMessage(err)
		return page{name: "forget", data: d, status: http.StatusBadRequest}, nil
	}
	d.Preview = true
	if d.Subject != "" {
		hist, err := in.history(ctx, c.Tenant, d.Subject)
		if err != nil {
			return page{}, err
		}
		if len(hist) == 0 {
			return page{}, sgam.Errorf(sgam.NotFound, "subject", "no such subject")
		}
		for _, h := range hist {
			d.Facts = append(d.Facts, h.rows...)
		}
		return page{name: "forget", data: d}, nil
	}
	ep, err := in.cfg.Store.Episode(ctx, c.Tenant, d.Episode)
	if err != nil {
		return page{}, err
	}
	d.Content = ep.Content
	rows, err := in.supportedBy(ctx, c.Tenant, ep.ID)
	if err != nil {
		return page{}, err
	}
	for _, f := range rows {
		if len(f.Sources) == 1 {
			d.Facts = append(d.Facts, f)
		} else {
			d.Kept = append(d.Kept, f)
		}
	}
	return page{name: "forget", data: d}, nil
}

func (in *Inspector) forget(w http.ResponseWriter, r *http.Request, c Caller) (page, error) {
	if r.PostForm.Get("confirm") != "yes" {
		return page{}, sgam.Errorf(sgam.Invalid, "confirm", "the forget was not confirmed: preview it first")
	}
	actor := "key:" + c.KeyID
	if in.cfg.Dev {
		actor = "dev"
	}
	rc, err := in.cfg.Store.Forget(r.Context(), sgam.ForgetRequest{Tenant: c.Tenant, Actor: actor,
		Subject: strings.TrimSpace(r.PostForm.Get("subject")), Episode: strings.TrimSpace(r.PostForm.Get("episode"))})
	if err != nil {
		return page{}, err
	}
	return page{name: "forget", data: forgetData{Receipt: &rc}}, nil
}

// --- schema

type schemaData struct {
	Versions []sgam.SchemaVersion
	A, B     int
	Diff     []string
	Body     string // of B
}

func (in *Inspector) schema(w http.ResponseWriter, r *http.Request, c Caller) (page, error) {
	vs, err := in.cfg.Store.SchemaHistory(r.Context(), c.Tenant)
	if err != nil {
		return page{}, err
	}
	slices.Reverse(vs) // newest first
	d := schemaData{Versions: vs}
	if len(vs) == 0 {
		return page{name: "schema", data: d}, nil
	}
	version := func(field string, def int) (*sgam.SchemaVersion, error) {
		n := def
		if s := r.URL.Query().Get(field); s != "" {
			v, err := strconv.Atoi(s)
			if err != nil {
				return nil, sgam.Errorf(sgam.Invalid, field, "%q is not a version number", s)
			}
			n = v
		}
		for i := range vs {
			if vs[i].Version == n {
				return &vs[i], nil
			}
		}
		if n == 0 {
			return nil, nil // the empty schema
		}
		return nil, sgam.Errorf(sgam.NotFound, field, "no version %d", n)
	}
	prev := 0
	if len(vs) > 1 {
		prev = vs[1].Version
	}
	a, err := version("a", prev)
	if err != nil {
		return page{}, err
	}
	b, err := version("b", vs[0].Version)
	if err != nil {
		return page{}, err
	}
	parse := func(v *sgam.SchemaVersion) (*schema.Schema, error) {
		if v == nil {
			return nil, nil
		}
		return schema.Parse(v.Body)
	}
	sa, err := parse(a)
	if err != nil {
		return page{}, err
	}
	sb, err := parse(b)
	if err != nil {
		return page{}, err
	}
	if a != nil {
		d.A = a.Version
	}
	if b != nil {
		d.B = b.Version
		d.Body = indent(b.Body)
	}
	d.Diff = schema.Diff(sa, sb)
	return page{name: "schema", data: d}, nil
}
