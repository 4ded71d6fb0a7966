package server_test

import (
	"bytes"
	"fmt"
	"mime"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/stretchr/testify/require"
)

// openAPI is openapi.json as a JSON Schema resource: every answer an API
// test gets (env.do, env.raw) is checked against the schema the document
// gives its route and status, so that the document cannot drift from
// what the server sends (a property of another type, a value outside an
// enum, null where it says array).
type openAPI struct {
	doc   map[string]any
	c     *jsonschema.Compiler
	mu    sync.Mutex
	cache map[string]*jsonschema.Schema
}

const openAPIURL = "file:///openapi.json"

var loadOpenAPI = sync.OnceValues(func() (*openAPI, error) {
	raw, err := os.ReadFile("openapi.json")
	if err != nil {
		return nil, err
	}
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		return nil, err
	}
	c := jsonschema.NewCompiler()
	if err := c.AddResource(openAPIURL, doc); err != nil {
		return nil, err
	}
	return &openAPI{doc: doc.(map[string]any), c: c, cache: map[string]*jsonschema.Schema{}}, nil
})

// pointer is the JSON pointer of tokens, as a URL fragment.
func pointer(tokens ...string) string {
	var b strings.Builder
	for _, t := range tokens {
		b.WriteByte('/')
		b.WriteString(url.PathEscape(strings.NewReplacer("~", "~0", "/", "~1").Replace(t)))
	}
	return b.String()
}

func (o *openAPI) schema(ptr string) (*jsonschema.Schema, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if s, ok := o.cache[ptr]; ok {
		return s, nil
	}
	s, err := o.c.Compile(openAPIURL + "#" + ptr)
	if err != nil {
		return nil, err
	}
	o.cache[ptr] = s
	return s, nil
}

func obj(v any, keys ...string) map[string]any {
	for _, k := range keys {
		m, _ := v.(map[string]any)
		v = m[k]
	}
	m, _ := v.(map[string]any)
	return m
}

// operation finds the documented path template that serves path (the most
// literal one, as the router picks) and its operation for method.
func (o *openAPI) operation(method, path string) (template string, op map[string]any) {
	segs := strings.Split(path, "/")
	best := -1
	for tpl := range obj(o.doc, "paths") {
		ts := strings.Split(tpl, "/")
		if len(ts) != len(segs) {
			continue
		}
		literal := 0
		for i := range ts {
			switch {
			case strings.HasPrefix(ts[i], "{") && strings.HasSuffix(ts[i], "}") && segs[i] != "":
			case ts[i] == segs[i]:
				literal++
			default:
				literal = -1
			}
			if literal < 0 {
				break
			}
		}
		if literal > best {
			best, template = literal, tpl
		}
	}
	if template == "" {
		return "", nil
	}
	return template, obj(o.doc, "paths", template, strings.ToLower(method))
}

// check checks an answer against the document: its status is documented
// for its route, and a JSON body is valid against the schema given for
// that status. An unknown path must answer a JSON 404, a known path's
// unknown method a JSON 405, both with the Error schema.
func (o *openAPI) check(method, path string, status int, contentType string, body []byte) error {
	if method == http.MethodHead {
		return nil
	}
	u, err := url.Parse(path)
	if err != nil {
		return err
	}
	template, op := o.operation(method, u.Path)
	ptr := pointer("components", "schemas", "Error")
	switch {
	case template == "" || strings.HasPrefix(u.Path, "/ui/"):
		if strings.HasPrefix(u.Path, "/ui/") {
			return nil // the inspector: HTML, docs/inspector.md
		}
		if status != http.StatusNotFound {
			return fmt.Errorf("%s %s: no documented route, answered %d, not 404", method, path, status)
		}
	case op == nil:
		if status != http.StatusMethodNotAllowed {
			return fmt.Errorf("%s %s: %s has no %s, answered %d, not 405", method, path, template, method, status)
		}
	default:
		code := strconv.Itoa(status)
		res := obj(op, "responses", code)
		if res == nil {
			return fmt.Errorf("%s %s: status %d is not documented for %s", method, path, status, template)
		}
		resPtr := pointer("paths", template, strings.ToLower(method), "responses", code)
		if ref, ok := res["$ref"].(string); ok {
			name := strings.TrimPrefix(ref, "#/components/responses/")
			res, resPtr = obj(o.doc, "components", "responses", name), pointer("components", "responses", name)
		}
		content := obj(res, "content")
		if content["application/json"] == nil {
			return nil // text (metrics), documented as such
		}
		ptr = resPtr + pointer("content", "application/json", "schema")
	}
	if mt, _, _ := mime.ParseMediaType(contentType); mt != "application/json" {
		return fmt.Errorf("%s %s: answered %d as %q, not application/json: %s", method, path, status, contentType, body)
	}
	s, err := o.schema(ptr)
	if err != nil {
		return err
	}
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(body))
	if err != nil {
		return fmt.Errorf("%s %s: %d answer is not JSON: %v: %s", method, path, status, err, body)
	}
	if err := s.Validate(inst); err != nil {
		return fmt.Errorf("%s %s: %d answer does not match openapi.json#%s: %v\nanswer: %s", method, path, status, ptr, err, body)
	}
	return nil
}

// conforms fails t when an answer disagrees with openapi.json (see check).
func conforms(t *testing.T, method, path string, res *http.Response, body []byte) {
	t.Helper()
	o, err := loadOpenAPI()
	require.NoError(t, err)
	require.NoError(t, o.check(method, path, res.StatusCode, res.Header.Get("Content-Type"), body))
}
