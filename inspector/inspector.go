// Package inspector is the web inspector of `sgam serve`, at /ui/: a
// tenant's memory for people to look at. Pages are rendered on the server
// (html/template, assets embedded, no script needed to read), behind the
// API's keys: a sign-in page keeps the key in an HttpOnly, SameSite=Strict
// cookie, every form that changes something carries a CSRF token, and
// every page shows only the key's tenant, answering another tenant's ids
// with the same 404 as the API.
package inspector

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"embed"
	"encoding/base64"
	"errors"
	"fmt"
	"html/template"
	"io/fs"
	"log/slog"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/sgam-dev/sgam"
	"github.com/sgam-dev/sgam/internal/httpstatus"
	"github.com/sgam-dev/sgam/recall"
)

//go:embed templates/*.html
var templateFiles embed.FS

//go:embed static
var staticFiles embed.FS

// Prefix is where the inspector is served.
const Prefix = "/ui/"

// Caller is who a request acts as.
type Caller struct {
	Tenant string
	Role   sgam.Role
	// KeyID names the key, for the episodes the inspector captures (a
	// confirmation); "dev" in dev mode.
	KeyID string
}

// Store is what the inspector reads and writes: tenant-facing roles only,
// each page bound to its caller's tenant.
type Store interface {
	recall.Store
	sgam.Review
	sgam.Lifecycle
	sgam.ExtractionQueue
	sgam.Overview
}

// Config configures the inspector.
type Config struct {
	Store Store
	// Authenticate checks an API key: the server's, with its key cache.
	Authenticate func(ctx context.Context, token string) (Caller, error)
	// Allow, when set, takes a token of a key's rate limit (the API's):
	// false with how long to wait refuses the request.
	Allow func(keyID string) (wait time.Duration, ok bool)
	// Recaller answers the recall page.
	Recaller *recall.Recaller
	// Dev signs every request in as DevTenant with the admin role, no key
	// asked, and says so on every page.
	Dev       bool
	DevTenant string
	// Secret keys the CSRF tokens; default random (a restart invalidates
	// the forms of open pages, nothing else).
	Secret []byte
	Clock  sgam.Clock
	Logger *slog.Logger
}

// Inspector serves the pages.
type Inspector struct {
	cfg   Config
	mux   *http.ServeMux
	pages map[string]*template.Template
}

// cookieName holds the API key of a signed-in browser.
const cookieName = "sgam_key"

// New returns the inspector's handler, for Prefix.
func New(cfg Config) (*Inspector, error) {
	if cfg.Store == nil {
		return nil, errors.New("inspector: no store")
	}
	if cfg.Authenticate == nil && !cfg.Dev {
		return nil, errors.New("inspector: no way to check keys, and not in dev mode")
	}
	if cfg.Dev && cfg.DevTenant == "" {
		cfg.DevTenant = sgam.DefaultTenant
	}
	if cfg.Clock == nil {
		cfg.Clock = sgam.SystemClock{}
	}
	if cfg.Recaller == nil {
		cfg.Recaller = recall.New(cfg.Store).WithClock(cfg.Clock)
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if len(cfg.Secret) == 0 {
		cfg.Secret = make([]byte, 32)
		rand.Read(cfg.Secret)
	}
	pages, err := parseTemplates()
	if err != nil {
		return nil, err
	}
	in := &Inspector{cfg: cfg, mux: http.NewServeMux(), pages: pages}
	in.routes()
	return in, nil
}

func (in *Inspector) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h := w.Header()
	// Nothing is loaded from elsewhere, no page may be framed, and no
	// page of one key is cached for the next.
	h.Set("Content-Security-Policy", "default-src 'self'; img-src 'self' data:; style-src 'self'; script-src 'self'; frame-ancestors 'none'; form-action 'self'")
	h.Set("X-Frame-Options", "DENY")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "same-origin")
	h.Set("Cache-Control", "no-store")
	in.mux.ServeHTTP(w, r)
}

// page is what a page handler returns: the template and its data, or an
// error (rendered as an error page with its status).
type page struct {
	name string
	data any
	// status, when set, is the page's status (a 401 sign-in page).
	status int
}

// view is what every template gets.
type view struct {
	Title  string
	Caller Caller
	Dev    bool
	CSRF   string
	Flash  string
	Data   any
	// Can says what the caller's role allows: write (confirm, dismiss,
	// re-extract), admin (forget).
	CanWrite, CanAdmin bool
}

type handler func(w http.ResponseWriter, r *http.Request, c Caller) (page, error)

// handle registers a page that needs role need; a POST needs a valid CSRF
// token too.
func (in *Inspector) handle(pattern string, need sgam.Role, title string, h handler) {
	in.mux.HandleFunc(pattern, func(w http.ResponseWriter, r *http.Request) {
		c, ok := in.caller(r)
		if !ok {
			if r.Method == http.MethodGet {
				http.Redirect(w, r, Prefix+"signin?next="+url.QueryEscape(r.URL.RequestURI()), http.StatusSeeOther)
				return
			}
			in.fail(w, r, c, sgam.Errorf(sgam.Unauthenticated, "key", "sign in first"))
			return
		}
		if err := c.Role.Require(need); err != nil {
			in.fail(w, r, c, err)
			return
		}
		if in.cfg.Allow != nil && !in.cfg.Dev {
			if wait, ok := in.cfg.Allow(c.KeyID); !ok {
				w.Header().Set("Retry-After", strconv.Itoa(max(1, int(wait.Seconds()+0.999))))
				in.errorPage(w, r, c, http.StatusTooManyRequests, "too many requests with this key: wait and try again")
				return
			}
		}
		if r.Method == http.MethodPost {
			if !sameOrigin(r) {
				in.fail(w, r, c, sgam.Errorf(sgam.Forbidden, "origin", "the form was posted from another site"))
				return
			}
			r.Body = http.MaxBytesReader(w, r.Body, 64<<10)
			if err := r.ParseForm(); err != nil {
				in.fail(w, r, c, sgam.Errorf(sgam.Invalid, "form", "cannot be read: %v", err))
				return
			}
			if !hmac.Equal([]byte(r.PostForm.Get("csrf")), []byte(in.csrf(r, c))) {
				in.fail(w, r, c, sgam.Errorf(sgam.Forbidden, "csrf", "the form's token is not this session's: reload the page and try again"))
				return
			}
		}
		p, err := h(w, r, c)
		if err != nil {
			in.fail(w, r, c, err)
			return
		}
		if p.name == "" { // the handler answered (a redirect)
			return
		}
		in.render(w, r, c, title, p)
	})
}

// sameOrigin reports whether a POST comes from a page of this server, as
// far as the browser says (its Origin header; a client without one, such
// as curl, is judged by its CSRF token alone).
func sameOrigin(r *http.Request) bool {
	o := r.Header.Get("Origin")
	if o == "" {
		return true
	}
	u, err := url.Parse(o)
	return err == nil && u.Host == r.Host
}

// caller is who r acts as: the dev tenant, or the key of its cookie.
func (in *Inspector) caller(r *http.Request) (Caller, bool) {
	if in.cfg.Dev {
		return Caller{Tenant: in.cfg.DevTenant, Role: sgam.RoleAdmin, KeyID: "dev"}, true
	}
	ck, err := r.Cookie(cookieName)
	if err != nil || ck.Value == "" {
		return Caller{}, false
	}
	c, err := in.cfg.Authenticate(r.Context(), ck.Value)
	if err != nil {
		return Caller{}, false
	}
	return c, true
}

// csrf is the token of r's session: an HMAC of its key, so that it needs
// no storage and a page of another session (or a forged one) fails.
func (in *Inspector) csrf(r *http.Request, c Caller) string {
	session := "dev:" + c.Tenant
	if !in.cfg.Dev {
		if ck, err := r.Cookie(cookieName); err == nil {
			session = ck.Value
		}
	}
	m := hmac.New(sha256.New, in.cfg.Secret)
	m.Write([]byte(session))
	return base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}

// flashSig signs a page's message for the session.
func (in *Inspector) flashSig(r *http.Request, c Caller, msg string) string {
	m := hmac.New(sha256.New, in.cfg.Secret)
	m.Write([]byte("flash\x00" + in.csrf(r, c) + "\x00" + msg))
	return base64.RawURLEncoding.EncodeToString(m.Sum(nil)[:16])
}

// flash is the message the page was redirected with, if this session's
// redirect signed it.
func (in *Inspector) flash(r *http.Request, c Caller) string {
	msg := r.URL.Query().Get("flash")
	if msg == "" || !hmac.Equal([]byte(r.URL.Query().Get("fs")), []byte(in.flashSig(r, c, msg))) {
		return ""
	}
	return msg
}

func (in *Inspector) render(w http.ResponseWriter, r *http.Request, c Caller, title string, p page) {
	t, ok := in.pages[p.name]
	if !ok {
		in.fail(w, r, c, fmt.Errorf("no template %q", p.name))
		return
	}
	v := view{Title: title, Caller: c, Dev: in.cfg.Dev, CSRF: in.csrf(r, c), Data: p.data,
		Flash:    in.flash(r, c),
		CanWrite: c.Role.Allows(sgam.RoleWrite), CanAdmin: c.Role.Allows(sgam.RoleAdmin)}
	var b strings.Builder
	if err := t.ExecuteTemplate(&b, "layout", v); err != nil {
		in.cfg.Logger.Error("inspector: render", slog.String("page", p.name), slog.String("error", err.Error()))
		http.Error(w, "internal error", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	if p.status != 0 {
		w.WriteHeader(p.status)
	}
	fmt.Fprint(w, b.String())
}

// fail renders err as an error page with the status the API gives it: the
// same 404 for another tenant's ids as for ids that do not exist.
func (in *Inspector) fail(w http.ResponseWriter, r *http.Request, c Caller, err error) {
	code := sgam.ErrorCode(err)
	msg := err.Error()
	switch code {
	case sgam.NotFound:
		msg = "not found"
	case sgam.Unavailable:
		msg = "the store is busy: try again"
		if ra := httpstatus.RetryAfter(err); ra != "" {
			w.Header().Set("Retry-After", ra)
		}
	case sgam.Internal:
		msg = "internal error"
		in.cfg.Logger.Error("inspector: internal error", slog.String("error", err.Error()))
	}
	in.errorPage(w, r, c, httpstatus.Of(code), msg)
}

// errorPage answers status with msg on the error page, with the session's
// token and the key's links, as every page has them (its sign-out form
// works).
func (in *Inspector) errorPage(w http.ResponseWriter, r *http.Request, c Caller, status int, msg string) {
	t := in.pages["error"]
	v := view{Title: http.StatusText(status), Caller: c, Dev: in.cfg.Dev,
		Data: map[string]any{"Status": status, "Message": msg}}
	if c.Tenant != "" {
		v.CSRF, v.CanWrite, v.CanAdmin = in.csrf(r, c), c.Role.Allows(sgam.RoleWrite), c.Role.Allows(sgam.RoleAdmin)
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(status)
	if err := t.ExecuteTemplate(w, "layout", v); err != nil {
		fmt.Fprint(w, template.HTMLEscapeString(msg))
	}
}

func parseTemplates() (map[string]*template.Template, error) {
	layout, err := templateFiles.ReadFile("templates/layout.html")
	if err != nil {
		return nil, err
	}
	names, err := fs.Glob(templateFiles, "templates/*.html")
	if err != nil {
		return nil, err
	}
	out := map[string]*template.Template{}
	for _, n := range names {
		name := strings.TrimSuffix(strings.TrimPrefix(n, "templates/"), ".html")
		if name == "layout" {
			continue
		}
		body, err := templateFiles.ReadFile(n)
		if err != nil {
			return nil, err
		}
		t, err := template.New("layout").Funcs(funcs).Parse(string(layout))
		if err == nil {
			_, err = t.Parse(string(body))
		}
		if err != nil {
			return nil, fmt.Errorf("inspector: template %s: %w", name, err)
		}
		out[name] = t
	}
	return out, nil
}

var funcs = template.FuncMap{
	"time": func(t time.Time) string {
		if t.IsZero() {
			return ""
		}
		return sgam.FormatTime(t)
	},
	"timep": func(t *time.Time) string {
		if t == nil {
			return "open"
		}
		return sgam.FormatTime(*t)
	},
	"value":  valueText,
	"join":   strings.Join,
	"path":   url.PathEscape,
	"millis": func(d time.Duration) string { return fmt.Sprintf("%.0f ms", float64(d)/float64(time.Millisecond)) },
}

// valueText shows a stored JSON value: a string without its quotes, a
// tombstone as "(none)".
func valueText(v []byte) string {
	s := string(v)
	if len(v) == 0 || s == "null" {
		return "(none)"
	}
	if len(s) >= 2 && s[0] == '"' && !strings.ContainsAny(s[1:len(s)-1], `"\`) {
		return s[1 : len(s)-1]
	}
	return s
}

// redirect answers a POST with a See Other to path, with a message for
// the next page, signed for the session: a link made elsewhere cannot put
// words of its own on a page ("session expired: enter your key at ...").
func (in *Inspector) redirect(w http.ResponseWriter, r *http.Request, c Caller, path, flash string) (page, error) {
	if flash != "" {
		sep := "?"
		if strings.Contains(path, "?") {
			sep = "&"
		}
		path += sep + "flash=" + url.QueryEscape(flash) + "&fs=" + in.flashSig(r, c, flash)
	}
	http.Redirect(w, r, path, http.StatusSeeOther)
	return page{}, nil
}
