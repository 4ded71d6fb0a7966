package server

import (
	"encoding/json"
	"net/http/httptest"
	"path/filepath"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sgam-dev/sgam"
	"github.com/sgam-dev/sgam/extract"
	"github.com/sgam-dev/sgam/ingest"
	"github.com/sgam-dev/sgam/llm"
	"github.com/sgam-dev/sgam/recall"
	"github.com/sgam-dev/sgam/store/sqlite"
)

// TestOpenAPIMatchesRouter fails when the router and openapi.json disagree:
// every route documented, every documented route served, with the role the
// router requires.
func TestOpenAPIMatchesRouter(t *testing.T) {
	var doc struct {
		OpenAPI string                                `json:"openapi"`
		Paths   map[string]map[string]json.RawMessage `json:"paths"`
	}
	require.NoError(t, json.Unmarshal(openAPI, &doc))
	require.Equal(t, "3.1.0", doc.OpenAPI)
	documented := map[string]sgam.Role{}
	for path, ops := range doc.Paths {
		for method, raw := range ops {
			var op struct {
				Role     sgam.Role `json:"x-sgam-role"`
				Security []any     `json:"security"`
			}
			require.NoError(t, json.Unmarshal(raw, &op), path)
			documented[strings.ToUpper(method)+" "+path] = op.Role
			require.Equal(t, op.Role == "", len(op.Security) == 0, "%s %s: security and role agree", method, path)
		}
	}
	st, err := sqlite.Open(t.Context(), filepath.Join(t.TempDir(), "t.db"), sqlite.Options{})
	require.NoError(t, err)
	defer st.Close()
	s, err := New(Config{Store: st, Dev: true})
	require.NoError(t, err)
	require.Equal(t, keys(s.routes), keys(documented))
	require.Equal(t, s.routes, documented, "each route needs the documented role")

	rec := httptest.NewRecorder()
	s.ServeHTTP(rec, httptest.NewRequest("GET", "/openapi.json", nil))
	require.Equal(t, 200, rec.Code)
	require.JSONEq(t, string(openAPI), rec.Body.String())
}

// TestOpenAPIOperationIDs: every operation has an operationId, unique in
// the document (what client generators name their methods by), and one
// tag of the document's list (what they group them by).
func TestOpenAPIOperationIDs(t *testing.T) {
	var doc struct {
		Tags []struct {
			Name        string `json:"name"`
			Description string `json:"description"`
		} `json:"tags"`
		Paths map[string]map[string]json.RawMessage `json:"paths"`
	}
	require.NoError(t, json.Unmarshal(openAPI, &doc))
	tags := map[string]bool{}
	for _, tag := range doc.Tags {
		require.NotEmpty(t, tag.Description, tag.Name)
		tags[tag.Name] = true
	}
	used := map[string]bool{}
	ids := map[string]string{}
	for path, ops := range doc.Paths {
		for method, raw := range ops {
			var op struct {
				OperationID string   `json:"operationId"`
				Tags        []string `json:"tags"`
			}
			require.NoError(t, json.Unmarshal(raw, &op), path)
			where := method + " " + path
			require.NotEmpty(t, op.OperationID, where)
			require.NotContains(t, ids, op.OperationID, "%s: operationId %q is %s's too", where, op.OperationID, ids[op.OperationID])
			ids[op.OperationID] = where
			require.Len(t, op.Tags, 1, where)
			require.True(t, tags[op.Tags[0]], "%s: tag %q is not in the document's tags", where, op.Tags[0])
			used[op.Tags[0]] = true
		}
	}
	require.Equal(t, tags, used, "every tag names some operation")
}

func keys(m map[string]sgam.Role) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// TestOpenAPIMatchesTypes fails when a schema of openapi.json and the Go
// type the server encodes (or decodes) for it disagree: the same property
// names, each enum the values of the constants it lists, and every
// component schema accounted for.
func TestOpenAPIMatchesTypes(t *testing.T) {
	var doc map[string]any
	require.NoError(t, json.Unmarshal(openAPI, &doc))
	schemas := doc["components"].(map[string]any)["schemas"].(map[string]any)
	// at returns the schema at a JSON pointer of the document.
	at := func(ptr string) map[string]any {
		var v any = doc
		for _, tok := range strings.Split(strings.TrimPrefix(ptr, "/"), "/") {
			tok = strings.NewReplacer("~1", "/", "~0", "~").Replace(tok)
			if a, ok := v.([]any); ok {
				i, err := strconv.Atoi(tok)
				require.True(t, err == nil && i >= 0 && i < len(a), "%s: no %s", ptr, tok)
				v = a[i]
				continue
			}
			m, ok := v.(map[string]any)
			require.True(t, ok, "%s: no %s", ptr, tok)
			v = m[tok]
		}
		m, ok := v.(map[string]any)
		require.True(t, ok, "%s is not a schema", ptr)
		return m
	}
	types := map[string]reflect.Type{
		"/components/schemas/Error":                                                               reflect.TypeFor[ErrorBody](),
		"/components/schemas/Error/properties/error":                                              reflect.TypeFor[sgam.ErrorDetail](),
		"/components/schemas/Fact":                                                                reflect.TypeFor[sgam.Fact](),
		"/components/schemas/Episode":                                                             reflect.TypeFor[sgam.Episode](),
		"/components/schemas/Candidate":                                                           reflect.TypeFor[sgam.Candidate](),
		"/components/schemas/WriteResult":                                                         reflect.TypeFor[sgam.WriteResult](),
		"/components/schemas/Trace":                                                               reflect.TypeFor[sgam.Trace](),
		"/components/schemas/Receipt":                                                             reflect.TypeFor[sgam.Receipt](),
		"/components/schemas/SchemaVersion":                                                       reflect.TypeFor[SchemaAnswer](),
		"/components/schemas/Hop":                                                                 reflect.TypeFor[sgam.Hop](),
		"/components/schemas/AssertRequest":                                                       reflect.TypeFor[AssertRequest](),
		"/components/schemas/RetractRequest":                                                      reflect.TypeFor[RetractRequest](),
		"/components/schemas/EpisodeRequest":                                                      reflect.TypeFor[EpisodeRequest](),
		"/components/schemas/EpisodeResponse":                                                     reflect.TypeFor[EpisodeResponse](),
		"/components/schemas/Extraction":                                                          reflect.TypeFor[sgam.Extraction](),
		"/components/schemas/Extraction/properties/accepted/items":                                reflect.TypeFor[sgam.Accepted](),
		"/components/schemas/Extraction/properties/rejected/items":                                reflect.TypeFor[sgam.Rejection](),
		"/components/schemas/RecallRequest":                                                       reflect.TypeFor[RecallRequest](),
		"/components/schemas/RecallFact":                                                          reflect.TypeFor[recall.Fact](),
		"/components/schemas/RecallContext":                                                       reflect.TypeFor[recall.Context](),
		"/components/schemas/RecallContext/properties/instants":                                   reflect.TypeFor[recall.Instants](),
		"/components/schemas/RecallContext/properties/evidence/items":                             reflect.TypeFor[recall.Evidence](),
		"/components/schemas/RecallContext/properties/evidence/items/properties/superseded/items": reflect.TypeFor[recall.Superseded](),
		"/components/schemas/Health":                                                              reflect.TypeFor[Health](),
		"/components/schemas/RecallContext/properties/omitted":                                    reflect.TypeFor[recall.Omitted](),
		"/paths/~1v1~1pending~1{id}~1confirm/post/requestBody/content/application~1json/schema":   reflect.TypeFor[ConfirmRequest](),
		"/paths/~1v1~1forget/post/requestBody/content/application~1json/schema":                   reflect.TypeFor[ForgetRequest](),
	}
	untyped := map[string]bool{"Ok": true, "Facts": true} // maps built by the handlers: {"ok":...}, {"facts":[...]}
	for name := range schemas {
		_, typed := types["/components/schemas/"+name]
		require.True(t, typed || untyped[name], "components/schemas/%s: map it to its Go type here", name)
	}
	for ptr, typ := range types {
		assert.Equal(t, jsonNames(typ), schemaProperties(t, at, at(ptr)), "%s and %s: the same properties", ptr, typ)
	}

	enums := map[string][]string{
		"/components/schemas/Error/properties/error/properties/code":                  codes(),
		"/components/schemas/Candidate/properties/reason":                             {sgam.ReasonReview, sgam.ReasonSensitive, sgam.ReasonRecurrence},
		"/components/schemas/Extraction/properties/status":                            {sgam.ExtractionDone, sgam.ExtractionRejected, sgam.ExtractionFailed},
		"/components/schemas/Extraction/properties/mode":                              modes(),
		"/components/schemas/Extraction/properties/accepted/items/properties/change":  {extract.ChangeNew, extract.ChangeUpdate, extract.ChangeNone, extract.ChangeRetract},
		"/components/schemas/Extraction/properties/accepted/items/properties/outcome": {sgam.OutcomeWritten, sgam.OutcomeUnchanged, sgam.OutcomeKept, sgam.OutcomePending},
		"/components/schemas/Extraction/properties/rejected/items/properties/reason": {sgam.RejectUngrounded, sgam.RejectUnknownAttribute,
			sgam.RejectInvalidValue, sgam.RejectInvalidSubject, sgam.RejectInvalidTime, sgam.RejectInvalidChange, sgam.RejectUnexpectedField,
			sgam.RejectMalformed, sgam.RejectConflict},
		"/components/schemas/EpisodeRequest/properties/extract":    {string(ingest.ModeBackground), string(ingest.ModeNow), string(ingest.ModeNone)},
		"/components/schemas/RecallFact/allOf/1/properties/status": {recall.Current, recall.Past},
	}
	for ptr, want := range enums {
		var got []string
		for _, v := range at(ptr)["enum"].([]any) {
			got = append(got, v.(string))
		}
		assert.ElementsMatch(t, want, got, ptr)
	}
}

// TestOpenAPIQueryParameters: each route documents exactly the query
// parameters the router lets it take (any other is refused).
func TestOpenAPIQueryParameters(t *testing.T) {
	var doc struct {
		Paths map[string]map[string]struct {
			Parameters []struct {
				Name string `json:"name"`
				In   string `json:"in"`
			} `json:"parameters"`
		} `json:"paths"`
	}
	require.NoError(t, json.Unmarshal(openAPI, &doc))
	st, err := sqlite.Open(t.Context(), filepath.Join(t.TempDir(), "t.db"), sqlite.Options{})
	require.NoError(t, err)
	defer st.Close()
	s, err := New(Config{Store: st, Dev: true})
	require.NoError(t, err)
	for path, ops := range doc.Paths {
		for method, op := range ops {
			pattern := strings.ToUpper(method) + " " + path
			var documented []string
			for _, p := range op.Parameters {
				if p.In == "query" {
					documented = append(documented, p.Name)
				}
			}
			taken, checked := s.params[pattern]
			if !checked { // served by a handler of its own: /openapi.json, /metrics, /mcp
				require.Empty(t, documented, pattern)
				continue
			}
			assert.ElementsMatch(t, taken, documented, "%s: the query parameters documented are those taken", pattern)
		}
	}
}

// jsonNames are the JSON names encoding/json gives t's fields (those of
// embedded structs promoted, shadowed by the outer ones).
func jsonNames(t reflect.Type) []string {
	seen := map[string]bool{}
	var walk func(t reflect.Type)
	walk = func(t reflect.Type) {
		var embedded []reflect.Type
		for i := range t.NumField() {
			f := t.Field(i)
			name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
			if name == "-" {
				continue
			}
			if f.Anonymous && name == "" && f.Type.Kind() == reflect.Struct {
				embedded = append(embedded, f.Type)
				continue
			}
			if !f.IsExported() {
				continue
			}
			if name == "" {
				name = f.Name
			}
			seen[name] = true
		}
		for _, e := range embedded {
			walk(e)
		}
	}
	walk(t)
	out := make([]string, 0, len(seen))
	for n := range seen {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// schemaProperties are the property names of a schema, with those of its
// allOf parts ($ref resolved).
func schemaProperties(t *testing.T, at func(string) map[string]any, s map[string]any) []string {
	seen := map[string]bool{}
	var walk func(s map[string]any)
	walk = func(s map[string]any) {
		if ref, ok := s["$ref"].(string); ok {
			walk(at(strings.TrimPrefix(ref, "#")))
			return
		}
		props, _ := s["properties"].(map[string]any)
		for n := range props {
			seen[n] = true
		}
		if all, ok := s["allOf"].([]any); ok {
			for _, part := range all {
				walk(part.(map[string]any))
			}
		}
	}
	walk(s)
	out := make([]string, 0, len(seen))
	for n := range seen {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

func codes() []string {
	var out []string
	for _, c := range sgam.Codes {
		out = append(out, string(c))
	}
	return out
}

func modes() []string {
	var out []string
	for _, m := range llm.Modes {
		out = append(out, string(m))
	}
	return out
}
