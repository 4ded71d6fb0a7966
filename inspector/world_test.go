package inspector_test

import (
	"context"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sgam-dev/sgam"
	"github.com/sgam-dev/sgam/extract"
	"github.com/sgam-dev/sgam/llm"
	"github.com/sgam-dev/sgam/llm/llmtest"
	"github.com/sgam-dev/sgam/server"
	"github.com/sgam-dev/sgam/store/sqlite"
)

const acmeSchema = `name: travel
attributes:
  passport_deadline:
    memory: task
    type: date
    description: When the passport must be renewed.
  date_of_birth:
    memory: profile
    type: date
    sensitive: true
`

// world is a server with the passport story in tenant acme (told,
// corrected, a letter extracted late, a date of birth held for review)
// and a little in tenant beta, and a key of every role.
type world struct {
	t     *testing.T
	url   string
	store *sqlite.Store
	clock *sgam.ManualClock
	keys  map[string]string // acme-read, acme-write, acme-admin, beta-admin
}

func at(t testing.TB, s string) time.Time {
	v, err := time.Parse(time.RFC3339, s)
	require.NoError(t, err)
	return v.UTC()
}

func newWorld(t *testing.T, dev bool) *world {
	ctx := context.Background()
	clock := &sgam.ManualClock{}
	clock.Set(at(t, "2026-05-01T00:00:00Z"))
	s, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "ui.db"), sqlite.Options{Clock: clock})
	require.NoError(t, err)
	t.Cleanup(func() { s.Close() })
	w := &world{t: t, store: s, clock: clock, keys: map[string]string{}}
	for _, k := range []struct {
		name, tenant string
		role         sgam.Role
	}{{"acme-read", "acme", sgam.RoleRead}, {"acme-write", "acme", sgam.RoleWrite}, {"acme-admin", "acme", sgam.RoleAdmin}, {"beta-admin", "beta", sgam.RoleAdmin}} {
		token, _, err := s.CreateKey(ctx, k.tenant, k.role, k.name)
		require.NoError(t, err)
		w.keys[k.name] = token
	}
	_, err = s.ApplySchema(ctx, "acme", []byte(acmeSchema), false)
	require.NoError(t, err)

	fake := llmtest.New(t, "fake", llmtest.ByEpisode(map[string]llmtest.Reply{
		"Mira: my passport renewal deadline is July 15.": {Updates: []llmtest.Update{{Evidence: "deadline is July 15", Subject: "mira",
			Attribute: "passport_deadline", Change: "new", Value: llmtest.S("2026-07-15")}}},
		"Mira: correction, the deadline is June 30, not July 15.": {Updates: []llmtest.Update{
			{Evidence: "the deadline is June 30", Subject: "mira", Attribute: "passport_deadline", CurrentValue: llmtest.S("2026-07-15"), Change: "update", Value: llmtest.S("2026-06-30")},
			{Evidence: "Mira renews in Oslo", Subject: "mira", Attribute: "passport_deadline", Change: "update", Value: llmtest.S("2026-06-29")}}},
		"Consulate letter to Mira, extracted late: renew by August 1.": {Updates: []llmtest.Update{{Evidence: "renew by August 1", Subject: "mira",
			Attribute: "passport_deadline", Change: "update", Value: llmtest.S("2026-08-01")}}},
		"Mira: my date of birth is 1990-04-01.": {Updates: []llmtest.Update{{Evidence: "my date of birth is 1990-04-01", Subject: "mira",
			Attribute: "date_of_birth", Change: "new", Value: llmtest.S("1990-04-01")}}},
	}))
	model, err := llm.New(llm.Config{BaseURL: fake.URL, Model: "fake"})
	require.NoError(t, err)
	x := extract.New(s, model).WithClock(clock)
	for _, e := range []struct{ id, occurred, recorded, content string }{
		{"e1", "2026-06-01T09:00:00Z", "2026-06-01T09:00:00Z", "Mira: my passport renewal deadline is July 15."},
		{"e2", "2026-06-03T10:00:00Z", "2026-06-03T10:00:00Z", "Mira: correction, the deadline is June 30, not July 15."},
		{"e0", "2026-05-30T08:00:00Z", "2026-06-05T12:00:00Z", "Consulate letter to Mira, extracted late: renew by August 1."},
		{"e3", "2026-06-06T09:00:00Z", "2026-06-06T09:00:00Z", "Mira: my date of birth is 1990-04-01."},
	} {
		clock.Set(at(t, e.recorded))
		_, err := s.AddEpisode(ctx, sgam.Episode{Tenant: "acme", ID: e.id, Session: "chat-1", Content: e.content, OccurredAt: at(t, e.occurred)})
		require.NoError(t, err)
		_, err = x.Extract(ctx, "acme", e.id, extract.Options{})
		require.NoError(t, err)
	}
	clock.Set(at(t, "2026-06-07T09:00:00Z"))
	_, err = s.AddEpisode(ctx, sgam.Episode{Tenant: "beta", ID: "b1", Content: "Beta's own note about <script>alert(1)</script>"})
	require.NoError(t, err)
	_, err = s.Assert(ctx, sgam.Assertion{Key: sgam.Key{Tenant: "beta", Subject: "<script>x</script>", Attribute: "note"},
		Value: []byte(`"<b>bold</b>"`), ValidFrom: at(t, "2026-06-07T09:00:00Z"), Source: "b1"})
	require.NoError(t, err)
	clock.Set(at(t, "2026-06-10T12:00:00Z"))

	srv, err := server.New(server.Config{Store: s, Clock: clock, Dev: dev, DevTenant: "acme"})
	require.NoError(t, err)
	ts := httptest.NewServer(srv)
	t.Cleanup(ts.Close)
	w.url = ts.URL
	return w
}

// client is a browser without script: a cookie jar, no redirects
// followed unless asked.
type client struct {
	t   *testing.T
	w   *world
	hc  *http.Client
	jar *cookiejar.Jar
}

func (w *world) client() *client {
	jar, _ := cookiejar.New(nil)
	return &client{t: w.t, w: w, jar: jar, hc: &http.Client{Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}}
}

// signIn signs in with the named key.
func (w *world) signIn(name string) *client {
	c := w.client()
	code, _ := c.post("/ui/signin", url.Values{"key": {w.keys[name]}, "next": {"/ui/"}})
	require.Equal(w.t, http.StatusSeeOther, code)
	return c
}

func (c *client) get(path string) (int, string) {
	c.t.Helper()
	resp, err := c.hc.Get(c.w.url + path)
	require.NoError(c.t, err)
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func (c *client) post(path string, form url.Values) (int, string) {
	c.t.Helper()
	resp, err := c.hc.PostForm(c.w.url+path, form)
	require.NoError(c.t, err)
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode == http.StatusSeeOther {
		return resp.StatusCode, resp.Header.Get("Location")
	}
	return resp.StatusCode, string(b)
}

var csrfField = regexp.MustCompile(`name="csrf" value="([^"]+)"`)

// csrf is the token of the forms of a page.
func (c *client) csrf(path string) string {
	c.t.Helper()
	code, body := c.get(path)
	require.Equal(c.t, http.StatusOK, code, body)
	m := csrfField.FindStringSubmatch(body)
	require.NotNil(c.t, m, "no form with a token on %s", path)
	return m[1]
}

func contains(t *testing.T, body string, want ...string) {
	t.Helper()
	for _, w := range want {
		require.True(t, strings.Contains(body, w), "the page lacks %q", w)
	}
}
