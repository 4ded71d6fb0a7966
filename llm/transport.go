package llm

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
)

// What the chat client (Client) and the embeddings client (EmbedClient)
// share: how the SDK is set up, how a request is retried, and how a
// failure becomes an *Error that never holds the key.

// newOpenAI returns an SDK client of the OpenAI-compatible server at
// baseURL, sending apiKey (none when empty), that reads at most maxBody
// bytes of an answer (0: no bound).
func newOpenAI(baseURL, apiKey string, maxBody int64) openai.Client {
	opts := []option.RequestOption{
		option.WithBaseURL(baseURL),
		// Retries are ours: the SDK's would also retry 408 and 409, and
		// hide the attempts from the record.
		option.WithMaxRetries(0),
		// The SDK reads OPENAI_* variables by default; sgam's
		// configuration is its own, and an OpenAI key must never go to a
		// local server by accident.
		option.WithAPIKey(apiKey),
		option.WithHeaderDel("OpenAI-Organization"),
		option.WithHeaderDel("OpenAI-Project"),
	}
	if apiKey == "" {
		opts = append(opts, option.WithHeaderDel("Authorization"))
	}
	if maxBody > 0 {
		opts = append(opts, option.WithMiddleware(func(req *http.Request, next option.MiddlewareNext) (*http.Response, error) {
			resp, err := next(req)
			if resp != nil && resp.Body != nil {
				resp.Body = &boundedBody{ReadCloser: resp.Body, left: maxBody}
			}
			return resp, err
		}))
	}
	return openai.NewClient(opts...)
}

// boundedBody fails a read past its bound, so that a server cannot make
// the client hold an answer of any size.
type boundedBody struct {
	io.ReadCloser
	left int64
}

func (b *boundedBody) Read(p []byte) (int, error) {
	if b.left <= 0 {
		return 0, &Error{Kind: KindTooLarge, Message: "the server's answer is larger than sgam reads"}
	}
	if int64(len(p)) > b.left {
		p = p[:b.left+1] // one byte more tells a body that ends here from a longer one
	}
	n, err := b.ReadCloser.Read(p)
	b.left -= int64(n)
	if b.left < 0 {
		return n, &Error{Kind: KindTooLarge, Message: "the server's answer is larger than sgam reads"}
	}
	return n, err
}

// retrier sends a request again after a 429, a 5xx or a timeout, with
// backoff, honouring Retry-After.
type retrier struct {
	maxAttempts int           // the first included
	maxBackoff  time.Duration // a server that asks to wait longer gets an error
	timeout     time.Duration // of one attempt
	mode        Mode          // of a chat request; "" for embeddings
	what        string        // the server, in errors: "" for the model's, "embeddings"
	secret      string        // the API key, cut out of every error message
}

var errTimeout = errors.New("timeout")

// do runs attempt, each under the per-attempt timeout, until it succeeds,
// fails in a way no retry mends, or the attempts are spent, and returns
// how many it made. An error is an *Error.
func (r retrier) do(ctx context.Context, attempt func(ctx context.Context) error) (int, error) {
	for n := 1; ; n++ {
		err := r.once(ctx, attempt)
		if err == nil {
			return n, nil
		}
		if ctx.Err() != nil {
			return n, r.canceled(ctx, n)
		}
		e := r.classify(err)
		if !e.Retryable() || n >= r.maxAttempts {
			e.Attempts = n
			return n, e
		}
		wait := backoff(n, r.maxBackoff)
		if e.retryAfterSet {
			if e.RetryAfter > r.maxBackoff {
				e.Attempts = n
				e.Message += fmt.Sprintf(" (the server asks to wait %s, more than the %s allowed)", e.RetryAfter, r.maxBackoff)
				return n, e
			}
			wait = e.RetryAfter
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return n, r.canceled(ctx, n)
		case <-t.C:
		}
	}
}

// once runs one attempt under the per-attempt timeout.
func (r retrier) once(ctx context.Context, attempt func(ctx context.Context) error) error {
	actx, cancel := context.WithTimeout(ctx, r.timeout)
	defer cancel()
	err := attempt(actx)
	if err != nil && actx.Err() != nil && ctx.Err() == nil {
		return errTimeout
	}
	return err
}

// canceled is the error of a request whose caller's context ended: a
// deadline that passed is a timeout (the caller's bound, which a later
// attempt under a new one may beat), a cancellation is not.
func (r retrier) canceled(ctx context.Context, attempts int) *Error {
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return &Error{Kind: KindTimeout, Mode: r.mode, what: r.what, Message: "the caller's deadline passed", Attempts: attempts}
	}
	return &Error{Kind: KindCanceled, Mode: r.mode, what: r.what, Message: ctx.Err().Error(), Attempts: attempts}
}

// classify turns a failed attempt into an *Error.
func (r retrier) classify(err error) *Error {
	var e *Error
	if errors.As(err, &e) {
		if e.Mode == "" {
			e.Mode = r.mode
		}
		if e.what == "" {
			e.what = r.what
		}
		return e
	}
	e = &Error{Mode: r.mode, what: r.what}
	var ae *openai.Error
	var ne net.Error
	var oe *net.OpError
	switch {
	case errors.Is(err, errTimeout):
		e.Kind, e.Message = KindTimeout, fmt.Sprintf("no answer within %s", r.timeout)
	case errors.As(err, &ae):
		e.Kind, e.Status, e.Message = KindStatus, ae.StatusCode, serverMessage(ae)
		if ae.Response != nil {
			e.RetryAfter, e.retryAfterSet = retryAfter(ae.Response.Header)
		}
	case errors.As(err, &ne) && ne.Timeout():
		e.Kind, e.Message = KindTimeout, "the connection timed out"
	case errors.As(err, &oe):
		e.Kind, e.Message = KindConnection, oe.Error()
	case diedMidAnswer(err):
		// The server closed the connection before its answer: it died
		// mid-answer (seen killing llama-server), and a restarted one
		// answers the same request.
		e.Kind, e.Message = KindConnection, "the connection closed before the answer: "+clip(err.Error(), 300)
	default:
		// The SDK wraps undecodable bodies and such; its text never holds
		// the key (it is a header, not part of the URL).
		e.Kind, e.Message = KindMalformed, clip(err.Error(), 500)
	}
	// A server may quote the request's Authorization header back
	// ("Incorrect API key provided: Bearer sk-…"), and the message goes to
	// errors and extraction records.
	e.Message = redact(e.Message, r.secret, 1)
	return e
}

// diedMidAnswer reports whether err is a connection that ended after the
// request went out and before the answer came: an EOF, or a reset while
// reading (where the server may have been working on the prompt), not a
// refused dial.
func diedMidAnswer(err error) bool {
	if err == nil {
		return false
	}
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		return true
	}
	var oe *net.OpError
	return errors.As(err, &oe) && oe.Op == "read" && errors.Is(err, syscall.ECONNRESET)
}

// redacted replaces an API key wherever a server quoted it.
const redacted = "[redacted]"

// redact replaces secret in s, when secret is at least min bytes long (a
// shorter one would cut ordinary words out of a model's answer).
func redact(s, secret string, min int) string {
	if secret == "" || len(secret) < min {
		return s
	}
	return strings.ReplaceAll(s, secret, redacted)
}

// serverMessage is the server's own message of an error answer, without
// the request line the SDK prefixes.
func serverMessage(ae *openai.Error) string {
	if ae.Message != "" {
		return clip(ae.Message, 500)
	}
	if raw := ae.RawJSON(); raw != "" {
		return clip(raw, 500)
	}
	return http.StatusText(ae.StatusCode)
}

// retryAfter reads Retry-After (seconds or an HTTP date) or OpenAI's
// retry-after-ms; ok is false when there is none.
func retryAfter(h http.Header) (d time.Duration, ok bool) {
	if ms := h.Get("Retry-After-Ms"); ms != "" {
		if v, err := strconv.ParseFloat(ms, 64); err == nil && v >= 0 && v < 1e9 {
			return time.Duration(v * float64(time.Millisecond)), true
		}
	}
	v := h.Get("Retry-After")
	if v == "" {
		return 0, false
	}
	if s, err := strconv.ParseFloat(v, 64); err == nil && s >= 0 && s < 1e9 {
		return time.Duration(s * float64(time.Second)), true
	}
	if t, err := http.ParseTime(v); err == nil {
		return max(time.Until(t), 0), true
	}
	return 0, false
}

// backoff is the wait before attempt+1: exponential from 500 ms with
// jitter, at most limit.
func backoff(attempt int, limit time.Duration) time.Duration {
	d := 500 * time.Millisecond << min(attempt-1, 10)
	d = d/2 + rand.N(d/2+1)
	return min(d, limit)
}

func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

// apiKeyFromEnv reads an API key from the variable keyVar or from the
// file (its first line) named by fileVar, for secrets mounted as files;
// setting both is an error.
func apiKeyFromEnv(getenv func(string) string, keyVar, fileVar string) (string, error) {
	key := getenv(keyVar)
	f := getenv(fileVar)
	if f == "" {
		return key, nil
	}
	if key != "" {
		return "", fmt.Errorf("set %s or %s, not both", keyVar, fileVar)
	}
	b, err := os.ReadFile(f)
	if err != nil {
		return "", fmt.Errorf("%s: cannot read the key file: %w", fileVar, errors.Unwrap(err))
	}
	key, _, _ = strings.Cut(strings.TrimSpace(string(b)), "\n")
	return key, nil
}
