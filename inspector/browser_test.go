package inspector_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"
)

// browser starts a headless Chromium of its own (its own cookies: one
// browser a signed-in key). Without one the test skips, but fails under
// CI=true: .ci/run installs Debian's chromium.
func browser(t *testing.T) context.Context {
	t.Helper()
	path := os.Getenv("SGAM_CHROMIUM")
	if path == "" {
		for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
			if p, err := exec.LookPath(name); err == nil {
				path = p
				break
			}
		}
	}
	if path == "" {
		if os.Getenv("CI") == "true" {
			t.Fatal("no Chromium: install Debian's chromium package (.ci/run does) or set SGAM_CHROMIUM")
		}
		t.Skip("no Chromium (apt-get install chromium, or set SGAM_CHROMIUM)")
	}
	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(path), chromedp.NoSandbox,
		chromedp.Flag("disable-gpu", true), chromedp.Flag("disable-dev-shm-usage", true), // containers have a small /dev/shm
		chromedp.WindowSize(1200, 900), chromedp.UserDataDir(t.TempDir()))
	alloc, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancel := chromedp.NewContext(alloc)
	ctx, cancelTimeout := context.WithTimeout(ctx, 2*time.Minute)
	t.Cleanup(func() { cancelTimeout(); cancel(); cancelAlloc() })
	require.NoError(t, chromedp.Do(ctx)) // start it
	return ctx
}

func run(t *testing.T, ctx context.Context, actions ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	require.NoError(t, chromedp.Do(ctx, actions...))
}

func (w *world) browserSignIn(t *testing.T, key string) context.Context {
	ctx := browser(t)
	run(t, ctx,
		chromedp.Navigate(w.url+"/ui/"),
		chromedp.WaitVisible(chromedp.ID("#key")),
		chromedp.SendKeys(chromedp.ID("#key"), w.keys[key]),
		chromedp.Submit(chromedp.ID("#signin")),
		chromedp.WaitVisible(chromedp.ID("#tenant")))
	return ctx
}

func count(t *testing.T, ctx context.Context, selector string) int {
	t.Helper()
	n, err := chromedp.Run(ctx, chromedp.Evaluate[int](`document.querySelectorAll(`+quoteJS(selector)+`).length`))
	require.NoError(t, err)
	return n
}

func quoteJS(s string) string { return "'" + strings.ReplaceAll(s, "'", `\'`) + "'" }

func text(t *testing.T, ctx context.Context, selector string) string {
	t.Helper()
	s, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS(selector)))
	require.NoError(t, err)
	return strings.TrimSpace(s)
}

// screenshot saves the page as a test artifact: into $SGAM_TEST_ARTIFACTS
// when set, else the test's temporary directory; with
// SGAM_UPDATE_SCREENSHOTS=1 into docs/ too, for docs/inspector.md.
func screenshot(t *testing.T, ctx context.Context, name string) {
	t.Helper()
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	require.NoError(t, err)
	dir := os.Getenv("SGAM_TEST_ARTIFACTS")
	if dir == "" {
		dir = t.TempDir()
	}
	require.NoError(t, os.MkdirAll(dir, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(dir, name+".png"), png, 0o644))
	t.Logf("screenshot %s", filepath.Join(dir, name+".png"))
	if os.Getenv("SGAM_UPDATE_SCREENSHOTS") == "1" {
		require.NoError(t, os.WriteFile(filepath.Join("..", "docs", "inspector-"+name+".png"), png, 0o644))
	}
}

func TestBrowser(t *testing.T) {
	w := newWorld(t, false)

	t.Run("SubjectOnBothAxes", func(t *testing.T) {
		ctx := w.browserSignIn(t, "acme-admin")
		run(t, ctx, chromedp.Navigate(w.url+"/ui/subjects/mira"), chromedp.WaitVisible(chromedp.ID("#timeline-passport_deadline")))
		require.Equal(t, 3, count(t, ctx, "#timeline-passport_deadline rect.bar.believed"), "three bars for passport_deadline")
		require.Equal(t, "2026-06-30", text(t, ctx, `#current tr[data-attribute="passport_deadline"] td.value`))
		screenshot(t, ctx, "subject")

		// Transaction time before e2 was recorded: July 15 was current.
		run(t, ctx,
			chromedp.SetValue(chromedp.ID("#known-at"), "2026-06-01T09:00:00Z"),
			chromedp.Submit(chromedp.ID("#known-at-form")),
			chromedp.WaitVisible(chromedp.CSS(`#current-heading[data-known-at="2026-06-01T09:00:00Z"]`)))
		require.Equal(t, "2026-07-15", text(t, ctx, `#current tr[data-attribute="passport_deadline"] td.value`))
		require.Equal(t, 1, count(t, ctx, "#timeline-passport_deadline rect.bar.believed"))

		run(t, ctx, chromedp.Navigate(w.url+"/ui/episodes/e2"), chromedp.WaitVisible(chromedp.ID("#content")))
		require.Contains(t, text(t, ctx, "#content"), "correction, the deadline is June 30")
		require.Positive(t, count(t, ctx, "table.rejected tr td"), "the ungrounded candidate is shown")
		screenshot(t, ctx, "episode")
	})

	t.Run("AnotherTenantSeesNothing", func(t *testing.T) {
		ctx := w.browserSignIn(t, "beta-admin")
		run(t, ctx, chromedp.Navigate(w.url+"/ui/"), chromedp.WaitVisible(chromedp.ID("#counts")))
		require.NotContains(t, text(t, ctx, "body"), "mira")
		run(t, ctx, chromedp.Navigate(w.url+"/ui/episodes/e1"), chromedp.WaitVisible(chromedp.ID("#error")))
		require.Equal(t, "not found", text(t, ctx, "#error"))
		require.Contains(t, text(t, ctx, "h1"), "404")
		run(t, ctx, chromedp.Navigate(w.url+"/ui/subjects/mira"), chromedp.WaitVisible(chromedp.ID("#error")))
		require.Contains(t, text(t, ctx, "h1"), "404")
	})

	t.Run("ReadKeyCannotForget", func(t *testing.T) {
		ctx := w.browserSignIn(t, "acme-read")
		run(t, ctx, chromedp.Navigate(w.url+"/ui/subjects/mira"), chromedp.WaitVisible(chromedp.ID("#current")))
		require.Zero(t, count(t, ctx, "#nav-forget"))
		require.Zero(t, count(t, ctx, "#forget-subject"))
		// Posting the form by hand, with this session's own token.
		status, err := chromedp.Run(ctx, chromedp.Evaluate[int](`fetch('/ui/forget', {method: 'POST', body: new URLSearchParams({
			csrf: document.querySelector('#signout input[name=csrf]').value, subject: 'mira', confirm: 'yes'})}).then(r => r.status)`,
			chromedp.EvalAwaitPromise))
		require.NoError(t, err)
		require.Equal(t, 403, status)
	})

	t.Run("ForgedCSRFRefused", func(t *testing.T) {
		ctx := w.browserSignIn(t, "acme-admin")
		run(t, ctx,
			chromedp.Navigate(w.url+"/ui/forget"),
			chromedp.WaitVisible(chromedp.ID("#forget-form")),
			chromedp.SendKeys(chromedp.ID("#forget-subject-input"), "mira"),
			chromedp.SetAttributeValue(chromedp.CSS(`#forget-form input[name=csrf]`), "value", "forged"),
			chromedp.Submit(chromedp.ID("#forget-form")),
			chromedp.WaitVisible(chromedp.ID("#error")))
		require.Contains(t, text(t, ctx, "h1"), "403")
		require.Contains(t, text(t, ctx, "#error"), "token")
	})

	t.Run("ConfirmPending", func(t *testing.T) {
		ctx := w.browserSignIn(t, "acme-write")
		run(t, ctx, chromedp.Navigate(w.url+"/ui/pending"), chromedp.WaitVisible(chromedp.ID("#pending")))
		require.Equal(t, 1, count(t, ctx, "#pending form.confirm"))
		run(t, ctx, chromedp.Submit(chromedp.CSS("#pending form.confirm")), chromedp.WaitVisible(chromedp.ID("#flash")))
		require.Contains(t, text(t, ctx, "#flash"), "confirmed")
		require.Zero(t, count(t, ctx, "#pending form.confirm"))
		run(t, ctx, chromedp.Navigate(w.url+"/ui/subjects/mira"), chromedp.WaitVisible(chromedp.ID("#current")))
		require.Equal(t, "1990-04-01", text(t, ctx, `#current tr[data-attribute="date_of_birth"] td.value`))
	})

	t.Run("ForgetSubject", func(t *testing.T) {
		ctx := w.browserSignIn(t, "acme-admin")
		run(t, ctx,
			chromedp.Navigate(w.url+"/ui/subjects/mira"),
			chromedp.WaitVisible(chromedp.ID("#forget-subject")),
			chromedp.Click(chromedp.ID("#forget-subject")),
			chromedp.WaitVisible(chromedp.ID("#forget-form")),
			chromedp.Click(chromedp.ID("#forget-preview")),
			chromedp.WaitVisible(chromedp.ID("#forget-confirm")))
		require.Positive(t, count(t, ctx, "#to-delete tr td"))
		run(t, ctx, chromedp.Submit(chromedp.ID("#forget-confirm")), chromedp.WaitVisible(chromedp.ID("#receipt-id")))
		require.NotEmpty(t, text(t, ctx, "#receipt-id"))
		require.NotEqual(t, "0", text(t, ctx, "#facts-deleted"))
		run(t, ctx, chromedp.Navigate(w.url+"/ui/subjects/mira"), chromedp.WaitVisible(chromedp.ID("#error")))
		require.Contains(t, text(t, ctx, "h1"), "404")
	})
}
