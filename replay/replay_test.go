package replay_test

import (
	"bytes"
	"context"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sgam-dev/sgam"
	"github.com/sgam-dev/sgam/replay"
	"github.com/sgam-dev/sgam/store/sqlite"
)

var update = flag.Bool("update", false, "rewrite the golden files")

func newRunner(t *testing.T) (*replay.Runner, sgam.Store) {
	clock := &sgam.ManualClock{}
	s, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "r.db"), sqlite.Options{Clock: clock})
	require.NoError(t, err)
	t.Cleanup(func() { s.Close() })
	return &replay.Runner{Store: s, Clock: clock, Tenant: "default"}, s
}

// TestGolden replays testdata/*.jsonl and compares the results with the
// .golden files beside them (regenerate with -update).
func TestGolden(t *testing.T) {
	scripts, err := filepath.Glob("testdata/*.jsonl")
	require.NoError(t, err)
	require.NotEmpty(t, scripts)
	for _, script := range scripts {
		t.Run(filepath.Base(script), func(t *testing.T) {
			in, err := os.ReadFile(script)
			require.NoError(t, err)
			r, s := newRunner(t)
			var out bytes.Buffer
			st, err := r.Run(context.Background(), bytes.NewReader(in), &out)
			require.NoError(t, err)
			golden := strings.TrimSuffix(script, ".jsonl") + ".golden"
			if *update {
				require.NoError(t, os.WriteFile(golden, out.Bytes(), 0o644))
			}
			want, err := os.ReadFile(golden)
			require.NoError(t, err)
			require.Equal(t, string(want), out.String())

			nonBlank := 0
			for _, l := range strings.Split(string(in), "\n") {
				if strings.TrimSpace(l) != "" {
					nonBlank++
				}
			}
			require.Equal(t, nonBlank, st.Lines, "one result per operation")
			require.Equal(t, nonBlank, strings.Count(out.String(), "\n"))
			v, err := s.Check(context.Background())
			require.NoError(t, err)
			require.Empty(t, v, "failed lines left nothing half-written")
		})
	}
}

// TestBadLinesNameTheField checks each kind of bad line's error field.
func TestBadLinesNameTheField(t *testing.T) {
	r, _ := newRunner(t)
	big := `"` + strings.Repeat("x", sgam.DefaultMaxValueBytes) + `"`
	for _, c := range []struct{ line, code, field string }{
		{`{"op":"fly"}`, "invalid", "op"},
		{`{"subject":"m"}`, "invalid", "op"},
		{`{"op":"get","subject":"m","attribute":"a","as_of":"2026-06-02"}`, "invalid", "as_of"},
		{`{"op":"get","subject":"m","attribute":"a","known_at":"2026-06-02T10:00:00"}`, "invalid", "known_at"},
		{`{"op":"get","subject":"m","attribute":"a","as_of":"2026-13-02T10:00:00Z"}`, "invalid", "as_of"},
		{`{"op":"assert","subject":"m","attribute":"a","value":` + big + `,"valid_from":"2026-06-02T00:00:00Z","source":"e"}`, "invalid", "value"},
		{`{"op":"assert","subject":"m","attribute":"a","value":1,"valid_from":"2026-06-02T00:00:00Z"}`, "invalid", "source"},
		{`{"op":"assert","subject":"m","attribute":"a","value":1,"valid_from":"2026-06-02T00:00:00Z","source":7}`, "invalid", "source"},
		{`{"op":"history","subject":"m","attribute":"a","value":1}`, "invalid", "value"},
		{`{"op":"trace","fact_id":-3}`, "invalid", "fact_id"},
		{`{"op":"trace","fact_id":99}`, "not_found", "fact_id"},
		{`[1,2]`, "invalid", "line"},
		{`{"op":"get","tenant":null,"subject":"m","attribute":"a"}`, "invalid", "tenant"},
		{`{"op":"trace","fact_id":null}`, "invalid", "fact_id"},
		{`{"op":"get"} {"op":"get"}`, "invalid", "line"},
		{`{"op":"get","subject":"m","subject":"n","attribute":"a"}`, "invalid", "subject"},
		{`{"op":"get","subject":"m\ud800","attribute":"a"}`, "invalid", "subject"},
		{`{"op":"assert","subject":"m","attribute":"a","value":{"b":1,"b":2},"valid_from":"2026-06-02T00:00:00Z","source":"e"}`, "invalid", "value"},
	} {
		res := r.Line(context.Background(), []byte(c.line))
		require.False(t, res.OK, c.line)
		require.Equal(t, c.code, string(res.Error.Code), "%s: %s", c.line, res.Error.Message)
		require.Equal(t, c.field, res.Error.Field, "%s: %s", c.line, res.Error.Message)
		require.NotEmpty(t, res.Error.Message)
	}
}

func FuzzParseLine(f *testing.F) {
	seeds, _ := os.ReadFile("testdata/passport.jsonl")
	for _, l := range strings.Split(string(seeds), "\n") {
		f.Add([]byte(l))
	}
	f.Fuzz(func(t *testing.T, line []byte) {
		op, err := replay.ParseLine(line)
		if err != nil {
			if sgam.ErrorCode(err) != sgam.Invalid || sgam.ErrorField(err) == "" {
				t.Fatalf("error without a field: %v", err)
			}
			return
		}
		if op.Name == "" {
			t.Fatalf("parsed an operation without a name from %q", line)
		}
		for _, tm := range []time.Time{op.Now, op.OccurredAt, op.ValidFrom, op.At, op.AsOf, op.KnownAt} {
			if !tm.IsZero() && (tm.Location() != time.UTC || tm.Nanosecond()%1000 != 0) {
				t.Fatalf("instant %v is not UTC microseconds", tm)
			}
		}
	})
}

// TestLongLineFailsAndReplayGoesOn: a line over the limit is one failed
// result, and the lines after it still run.
func TestLongLineFailsAndReplayGoesOn(t *testing.T) {
	r, _ := newRunner(t)
	long := `{"op":"clock","now":"` + strings.Repeat("x", replay.MaxLineBytes) + `"}`
	in := "{\"op\":\"clock\",\"now\":\"2026-01-01T00:00:00Z\"}\n" + long + "\n{\"op\":\"get\",\"subject\":\"m\",\"attribute\":\"a\"}"
	var out bytes.Buffer
	st, err := r.Run(context.Background(), strings.NewReader(in), &out)
	require.NoError(t, err)
	require.Equal(t, replay.Stats{Lines: 3, Failed: 1}, st)
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	require.Len(t, lines, 3)
	require.Contains(t, lines[1], `"field":"line"`)
	require.Equal(t, `{"ok":true,"fact":null}`, lines[2])
}

// TestSchemaNamesItsTenant: a schema line may name its tenant, as
// docs/cli.md lists, and applies that tenant's schema only.
func TestSchemaNamesItsTenant(t *testing.T) {
	r, _ := newRunner(t)
	res := r.Line(context.Background(), []byte(`{"op":"schema","tenant":"acme","schema":{"attributes":{"x":{"memory":"profile","type":"string"}}}}`))
	require.True(t, res.OK, "%+v", res.Error)
	require.Equal(t, "acme", res.Schema.Tenant)
	res = r.Line(context.Background(), []byte(`{"op":"assert","tenant":"acme","subject":"m","attribute":"y","value":1,"valid_from":"2026-06-02T00:00:00Z","source":"e"}`))
	require.False(t, res.OK, "acme's schema declares only x")
	res = r.Line(context.Background(), []byte(`{"op":"assert","tenant":"beta","subject":"m","attribute":"y","value":1,"valid_from":"2026-06-02T00:00:00Z","source":"e"}`))
	require.True(t, res.OK, "beta has no schema: %+v", res.Error)
}
