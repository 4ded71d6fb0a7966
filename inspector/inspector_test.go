package inspector_test

import (
	"flag"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sgam-dev/sgam/server"
)

var update = flag.Bool("update", false, "rewrite the golden files of the pages")

func TestSignIn(t *testing.T) {
	w := newWorld(t, false)
	c := w.client()
	code, loc := c.get("/ui/")
	require.Equal(t, http.StatusSeeOther, code)
	require.Contains(t, loc, "")
	code, body := c.post("/ui/signin", url.Values{"key": {"sgam_bogus"}, "next": {"/ui/"}})
	require.Equal(t, http.StatusUnauthorized, code)
	contains(t, body, "That key is not valid")

	resp, err := c.hc.PostForm(w.url+"/ui/signin", url.Values{"key": {w.keys["acme-read"]}, "next": {"/ui/pending"}})
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusSeeOther, resp.StatusCode)
	require.Equal(t, "/ui/pending", resp.Header.Get("Location"))
	ck := resp.Cookies()[0]
	require.True(t, ck.HttpOnly)
	require.Equal(t, http.SameSiteStrictMode, ck.SameSite)
	require.Equal(t, "/ui/", ck.Path)
	require.False(t, ck.Secure, "plain HTTP: Secure only with TLS")

	code, body = c.get("/ui/")
	require.Equal(t, http.StatusOK, code)
	contains(t, body, `tenant <b id="tenant">acme</b> · read key`, "<b>1</b> subjects")

	// A redirect target outside the inspector is refused.
	code, loc = c.post("/ui/signin", url.Values{"key": {w.keys["acme-read"]}, "next": {"//evil.example/"}})
	require.Equal(t, http.StatusSeeOther, code)
	require.Equal(t, "/ui/", loc)
}

func TestSubjectBothAxes(t *testing.T) {
	w := newWorld(t, false)
	c := w.signIn("acme-read")
	code, body := c.get("/ui/subjects/mira")
	require.Equal(t, http.StatusOK, code, body)
	tl := section(t, body, "passport_deadline")
	require.Equal(t, 3, strings.Count(tl, `class="bar believed`), "three believed rows")
	require.Equal(t, 1, strings.Count(tl, `class="bar retracted`), "the first row, open until the correction")
	require.Regexp(t, `data-attribute="passport_deadline"><td>passport_deadline</td><td class="value">2026-06-30</td>`, body)

	// As believed before e2 was recorded: July 15 is current.
	code, body = c.get("/ui/subjects/mira?known_at=2026-06-01T09:00:00Z")
	require.Equal(t, http.StatusOK, code)
	require.Regexp(t, `<td class="value">2026-07-15</td>`, body)
	tl = section(t, body, "passport_deadline")
	require.Equal(t, 1, strings.Count(tl, `class="bar believed`))
	require.Zero(t, strings.Count(tl, `class="bar retracted`))

	code, _ = c.get("/ui/subjects/mira?known_at=yesterday")
	require.Equal(t, http.StatusBadRequest, code)
	code, _ = c.get("/ui/subjects/nobody")
	require.Equal(t, http.StatusNotFound, code)
}

// section is the timeline of attribute on a subject page.
func section(t *testing.T, body, attribute string) string {
	t.Helper()
	i := strings.Index(body, `<section class="timeline" data-attribute="`+attribute+`"`)
	require.GreaterOrEqual(t, i, 0, "no timeline of %s", attribute)
	j := strings.Index(body[i:], "</section>")
	return body[i : i+j]
}

func TestTenantsAreWalls(t *testing.T) {
	w := newWorld(t, false)
	beta := w.signIn("beta-admin")
	for _, path := range []string{"/ui/episodes/e1", "/ui/subjects/mira", "/ui/episodes/e2"} {
		code, body := beta.get(path)
		require.Equal(t, http.StatusNotFound, code, path)
		require.NotContains(t, body, "July")
	}
	_, body := beta.get("/ui/")
	require.NotContains(t, body, "mira")
	_, body = beta.get("/ui/recall?q=" + url.QueryEscape("When is Mira's passport deadline?"))
	require.NotContains(t, body, "2026-06-30")
	_, body = beta.get("/ui/pending")
	require.NotContains(t, body, "1990-04-01")
	code, _ := beta.post("/ui/pending/x/dismiss", url.Values{"csrf": {beta.csrf("/ui/pending")}})
	require.Equal(t, http.StatusNotFound, code)
}

func TestRolesAndCSRF(t *testing.T) {
	w := newWorld(t, false)
	read := w.signIn("acme-read")
	_, body := read.get("/ui/subjects/mira")
	require.NotContains(t, body, "Forget")
	_, body = read.get("/ui/episodes/e1")
	require.NotContains(t, body, "Forget this")
	require.NotContains(t, body, "Extract again")
	_, body = read.get("/ui/pending")
	require.NotContains(t, body, "<button>Confirm</button>")
	code, _ := read.get("/ui/forget")
	require.Equal(t, http.StatusForbidden, code)
	// Posting the form by hand: 403, with or without a token.
	token := read.csrf("/ui/") // the sign-out form
	for _, path := range []string{"/ui/forget", "/ui/forget/preview"} {
		code, _ = read.post(path, url.Values{"csrf": {token}, "subject": {"mira"}, "confirm": {"yes"}})
		require.Equal(t, http.StatusForbidden, code, path)
	}
	code, _ = read.post("/ui/episodes/e1/reextract", url.Values{"csrf": {token}})
	require.Equal(t, http.StatusForbidden, code)

	admin := w.signIn("acme-admin")
	for _, forged := range []string{"", "forged", token} { // token: the read key's session, not this one
		code, body := admin.post("/ui/forget", url.Values{"csrf": {forged}, "subject": {"mira"}, "confirm": {"yes"}})
		require.Equal(t, http.StatusForbidden, code, forged)
		contains(t, body, "token")
	}
	code, body = admin.get("/ui/subjects/mira")
	require.Equal(t, http.StatusOK, code)
	contains(t, body, "Forget this subject")

	// The right token, from a page of another site.
	req, err := http.NewRequest(http.MethodPost, w.url+"/ui/forget/preview", strings.NewReader(url.Values{"csrf": {admin.csrf("/ui/forget")}, "subject": {"mira"}}.Encode()))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Origin", "https://evil.example")
	resp, err := admin.hc.Do(req)
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusForbidden, resp.StatusCode)
}

func TestPendingConfirm(t *testing.T) {
	w := newWorld(t, false)
	c := w.signIn("acme-write")
	_, body := c.get("/ui/pending")
	m := regexp.MustCompile(`id="pending-([^"]+)"`).FindStringSubmatch(body)
	require.NotNil(t, m, body)
	code, loc := c.post("/ui/pending/"+m[1]+"/confirm", url.Values{"csrf": {c.csrf("/ui/pending")}})
	require.Equal(t, http.StatusSeeOther, code)
	require.Contains(t, loc, "confirmed")
	_, body = c.get(loc)
	contains(t, body, `id="flash">confirmed `+m[1])
	require.NotContains(t, body, `id="pending-`)
	// A message is this session's redirect's only: a link made elsewhere
	// shows none, and neither does the signed one in another session.
	_, body = c.get("/ui/?flash=" + url.QueryEscape("Session expired: enter your key at https://evil.example"))
	require.NotContains(t, body, "evil.example")
	_, body = w.signIn("acme-admin").get(loc)
	require.NotContains(t, body, `id="flash"`)
	_, body = c.get("/ui/subjects/mira")
	require.Regexp(t, `data-attribute="date_of_birth"><td>date_of_birth</td><td class="value">1990-04-01</td>`, body)
	_, body = c.get("/ui/episodes/confirm-" + m[1])
	contains(t, body, "Confirmed in the sgam inspector by key")
}

// TestReextract: the episode page's button queues the episode for
// extraction again and says so; another tenant's key cannot queue it.
func TestReextract(t *testing.T) {
	w := newWorld(t, false)
	stats := func() int {
		st, err := w.store.Stats(t.Context(), "acme")
		require.NoError(t, err)
		return st.Queued
	}
	before := stats()
	c := w.signIn("acme-write")
	code, loc := c.post("/ui/episodes/e2/reextract", url.Values{"csrf": {c.csrf("/ui/episodes/e2")}})
	require.Equal(t, http.StatusSeeOther, code)
	_, body := c.get(loc)
	contains(t, body, `id="flash">queued for extraction again`)
	require.Equal(t, before+1, stats())

	beta := w.signIn("beta-admin")
	code, _ = beta.post("/ui/episodes/e2/reextract", url.Values{"csrf": {beta.csrf("/ui/")}})
	require.Equal(t, http.StatusNotFound, code)
	require.Equal(t, before+1, stats())
}

func TestForgetWithConfirmation(t *testing.T) {
	w := newWorld(t, false)
	c := w.signIn("acme-admin")
	code, body := c.post("/ui/forget/preview", url.Values{"csrf": {c.csrf("/ui/forget")}, "episode": {"e2"}})
	require.Equal(t, http.StatusOK, code, body)
	contains(t, body, "This deletes, for real", "Mira: correction, the deadline is June 30", `id="forget-confirm"`)
	code, body = c.post("/ui/forget/preview", url.Values{"csrf": {c.csrf("/ui/forget")}})
	require.Equal(t, http.StatusBadRequest, code)
	contains(t, body, "class=\"problem\"")
	code, body = c.post("/ui/forget", url.Values{"csrf": {c.csrf("/ui/forget")}, "subject": {"mira"}, "confirm": {"yes"}})
	require.Equal(t, http.StatusOK, code, body)
	contains(t, body, `id="receipt-id"`, `<td id="facts-deleted">`)
	code, _ = c.get("/ui/subjects/mira")
	require.Equal(t, http.StatusNotFound, code)
	rcs, err := w.store.Receipts(t.Context(), "acme")
	require.NoError(t, err)
	require.Len(t, rcs, 1)
	require.True(t, strings.HasPrefix(rcs[0].Actor, "key:"), "the receipt names the key: %q", rcs[0].Actor)
}

func TestEscaping(t *testing.T) {
	w := newWorld(t, false)
	c := w.signIn("beta-admin")
	_, body := c.get("/ui/episodes/b1")
	contains(t, body, "Beta&#39;s own note about &lt;script&gt;alert(1)&lt;/script&gt;")
	require.NotContains(t, body, "<script>")
	code, body := c.get("/ui/subjects/" + url.PathEscape("<script>x</script>"))
	require.Equal(t, http.StatusOK, code)
	contains(t, body, "&lt;script&gt;x&lt;/script&gt;", "&lt;b&gt;bold&lt;/b&gt;")
	require.NotContains(t, body, "<script>")
	require.NotContains(t, body, "<b>bold</b>")
}

func TestDevMode(t *testing.T) {
	w := newWorld(t, true)
	c := w.client()
	code, body := c.get("/ui/")
	require.Equal(t, http.StatusOK, code)
	contains(t, body, `id="dev-banner"`, "without a key")
	_, body = c.get("/ui/subjects/mira")
	contains(t, body, `id="dev-banner"`)
}

// normalize takes out what changes from run to run: tokens and ids made
// at random.
var normalizers = []struct {
	re   *regexp.Regexp
	with string
}{
	{regexp.MustCompile(`name="csrf" value="[^"]+"`), `name="csrf" value="CSRF"`},
	{regexp.MustCompile(`\b(pd|x|rc|fg)_[0-9a-z]{8,}`), "${1}_ID"},
	{regexp.MustCompile(`\d+ calls?, \d+ ms`), "N calls, N ms"},
}

func TestGoldenPages(t *testing.T) {
	w := newWorld(t, false)
	c := w.signIn("acme-admin")
	pages := map[string]string{
		"overview":      "/ui/",
		"subject":       "/ui/subjects/mira",
		"subject-e1":    "/ui/subjects/mira?known_at=2026-06-01T09:00:00Z",
		"episode":       "/ui/episodes/e2",
		"recall":        "/ui/recall?q=" + url.QueryEscape("When is Mira's passport deadline?"),
		"pending":       "/ui/pending",
		"forget":        "/ui/forget",
		"schema":        "/ui/schema",
		"signin":        "/ui/signin",
		"not-found":     "/ui/episodes/nope",
		"subject-empty": "/ui/subjects/nobody",
	}
	for name, path := range pages {
		t.Run(name, func(t *testing.T) {
			_, body := c.get(path)
			if name == "signin" {
				_, body = w.client().get(path)
			}
			goldenPage(t, name, body)
		})
	}
}

// TestGoldenActions: the pages of the forms that act, whose state the
// pages above must not see: forget's confirmation step and its receipt,
// and the diff of two schema versions.
func TestGoldenActions(t *testing.T) {
	w := newWorld(t, false)
	c := w.signIn("acme-admin")
	code, body := c.get("/ui/schema?a=0&b=1")
	require.Equal(t, http.StatusOK, code, body)
	goldenPage(t, "schema-diff", body)
	code, body = c.post("/ui/forget/preview", url.Values{"csrf": {c.csrf("/ui/forget")}, "episode": {"e2"}})
	require.Equal(t, http.StatusOK, code, body)
	goldenPage(t, "forget-preview", body)
	code, body = c.post("/ui/forget", url.Values{"csrf": {c.csrf("/ui/forget")}, "episode": {"e2"}, "confirm": {"yes"}})
	require.Equal(t, http.StatusOK, code, body)
	goldenPage(t, "forget-receipt", body)
}

// goldenPage compares a page, its per-run parts normalized, with
// testdata/NAME.html (-update rewrites it).
func goldenPage(t *testing.T, name, body string) {
	t.Helper()
	for _, n := range normalizers {
		body = n.re.ReplaceAllString(body, n.with)
	}
	golden := filepath.Join("testdata", name+".html")
	if *update {
		require.NoError(t, os.MkdirAll("testdata", 0o755))
		require.NoError(t, os.WriteFile(golden, []byte(body), 0o644))
		return
	}
	want, err := os.ReadFile(golden)
	require.NoError(t, err, "run go test ./inspector -run Golden -update")
	require.Equal(t, string(want), body)
}

func TestSchemaVersionsAndDiff(t *testing.T) {
	w := newWorld(t, false)
	_, err := w.store.ApplySchema(t.Context(), "acme", []byte(acmeSchema+"  visa_status: {memory: task, type: {enum: [applied, approved]}}\n"), false)
	require.NoError(t, err)
	c := w.signIn("acme-read")
	code, body := c.get("/ui/schema")
	require.Equal(t, http.StatusOK, code, body)
	contains(t, body, "Version 1 → 2", "visa_status")
	require.Equal(t, 2, strings.Count(body, `<a href="/ui/schema?b=`))
	code, body = c.get("/ui/schema?a=0&b=1")
	require.Equal(t, http.StatusOK, code)
	contains(t, body, "Version 0 → 1", "passport_deadline")
	require.NotContains(t, strings.SplitN(body, `id="diff"`, 2)[1][:400], "visa_status")
	code, _ = c.get("/ui/schema?b=9")
	require.Equal(t, http.StatusNotFound, code)
	code, _ = c.get("/ui/schema?a=x")
	require.Equal(t, http.StatusBadRequest, code)
	// Another tenant's history is its own: none.
	_, body = w.signIn("beta-admin").get("/ui/schema")
	contains(t, body, "No schema serves this tenant")
}

// TestRateLimited: the inspector spends the key's rate limit, as the API.
func TestRateLimited(t *testing.T) {
	w := newWorld(t, false)
	srv, err := server.New(server.Config{Store: w.store, Clock: w.clock, RateLimit: 1})
	require.NoError(t, err)
	ts := httptest.NewServer(srv)
	defer ts.Close()
	w.url = ts.URL
	c := w.signIn("acme-read")
	codes := map[int]int{}
	for range 6 {
		code, _ := c.get("/ui/")
		codes[code]++
	}
	require.Positive(t, codes[http.StatusTooManyRequests], "%v", codes)
}
