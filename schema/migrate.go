package schema

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"sync"

	"cel.dev/cel-go/cel"
	"cel.dev/cel-go/common/types"
	"cel.dev/cel-go/common/types/ref"
	"cel.dev/cel-go/common/types/traits"
	"cel.dev/cel-go/ext"

	"github.com/sgam-dev/sgam"
)

// transformCostLimit bounds the work of one transform on one value, so
// that a backfill over millions of facts cannot hang on a bad expression.
const transformCostLimit = 1_000_000

// celEnv is the one CEL environment transforms compile in: the variable
// value (the old value, decoded from JSON), the standard library, and the
// strings, lists and math extensions (value.split(' '), etc.).
var celEnv = sync.OnceValues(func() (*cel.Env, error) {
	return cel.NewEnv(
		cel.Variable("value", cel.DynType),
		ext.Strings(),
		ext.Lists(),
		ext.Math(),
		cel.ParserRecursionLimit(MaxDepth),
		cel.ParserExpressionSizeLimit(maxTransformBytes),
	)
})

// compileTransform compiles a CEL transform; the error says where in the
// expression it went wrong.
func compileTransform(src string) (cel.Program, error) {
	env, err := celEnv()
	if err != nil {
		return nil, fmt.Errorf("the CEL environment: %v", err)
	}
	ast, iss := env.Compile(src)
	if iss != nil && iss.Err() != nil {
		var msgs []string
		for _, e := range iss.Errors() {
			loc := fmt.Sprintf("column %d", e.Location.Column()+1)
			if strings.Contains(src, "\n") {
				loc = fmt.Sprintf("line %d column %d", e.Location.Line(), e.Location.Column()+1)
			}
			msgs = append(msgs, fmt.Sprintf("%s: %s", loc, e.Message))
		}
		if len(msgs) == 0 {
			msgs = append(msgs, iss.Err().Error())
		}
		return nil, fmt.Errorf("the CEL expression does not compile: %s", strings.Join(msgs, "; "))
	}
	prg, err := env.Program(ast, cel.CostLimit(transformCostLimit))
	if err != nil {
		return nil, fmt.Errorf("the CEL expression does not compile: %v", err)
	}
	return prg, nil
}

// Transform computes the value of target from an old value under
// migration m, and returns it canonical and valid for target's attribute
// in s. A rename passes the value through; a retype or split runs the CEL
// transform for target. Errors are *sgam.Error with code Invalid, naming
// the migration and the target, so that a backfill can record which fact
// could not be carried over and why.
func (s *Schema) Transform(m *Migration, target string, old json.RawMessage) (json.RawMessage, error) {
	if m == nil {
		return nil, sgam.Errorf(sgam.Invalid, "migration", "is required")
	}
	fail := func(format string, args ...any) error {
		return sgam.Errorf(sgam.Invalid, "value", "migration %s, target %s: %s", m.Name, target, fmt.Sprintf(format, args...))
	}
	if !slices.Contains(m.To, target) {
		return nil, fail("the migration does not write %s; it writes %s", target, strings.Join(m.To, ", "))
	}
	attr, ok := s.Attribute(target)
	if !ok {
		return nil, fail("%s is not declared in this schema", target)
	}
	in := old
	if m.Kind != KindRename {
		out, err := m.run(target, old)
		if err != nil {
			return nil, fail("%v", err)
		}
		in = out
	}
	v, err := attr.Value(in)
	if err != nil {
		var se *sgam.Error
		if errors.As(err, &se) {
			c := *se
			c.Message = fmt.Sprintf("migration %s, target %s: %s", m.Name, target, se.Message)
			return nil, &c
		}
		return nil, err
	}
	return v, nil
}

// run evaluates the transform for target on old and returns the result as
// JSON.
func (m *Migration) run(target string, old json.RawMessage) (json.RawMessage, error) {
	prg := m.programs[target]
	if prg == nil {
		// A Migration built by hand rather than by Parse.
		src, ok := m.Transforms[target]
		if !ok {
			return nil, fmt.Errorf("no transform for %s", target)
		}
		var err error
		if prg, err = compileTransform(src); err != nil {
			return nil, err
		}
	}
	canon, err := sgam.CanonicalValue("value", old, sgam.DefaultMaxValueBytes)
	if err != nil {
		return nil, fmt.Errorf("the old value: %s", sgam.ErrorMessage(err))
	}
	dec := json.NewDecoder(bytes.NewReader(canon))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, fmt.Errorf("the old value: %v", err)
	}
	out, _, err := prg.Eval(map[string]any{"value": celInput(v)})
	if err != nil {
		return nil, fmt.Errorf("the transform failed on %s: %v", abbreviate(canon), err)
	}
	native, err := celOutput(out, 0)
	if err != nil {
		return nil, fmt.Errorf("the transform of %s %v", abbreviate(canon), err)
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(native); err != nil {
		return nil, fmt.Errorf("the transform's result cannot be encoded: %v", err)
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n")), nil
}

// celInput turns a decoded JSON value into what CEL reads: integral
// numbers that fit as int, other numbers as double.
func celInput(v any) any {
	switch v := v.(type) {
	case json.Number:
		if i, err := strconv.ParseInt(string(v), 10, 64); err == nil {
			return i
		}
		f, _ := strconv.ParseFloat(string(v), 64)
		return f
	case []any:
		for i := range v {
			v[i] = celInput(v[i])
		}
		return v
	case map[string]any:
		for k := range v {
			v[k] = celInput(v[k])
		}
		return v
	}
	return v
}

// celOutput turns a CEL result into a value encoding/json writes. Its
// errors complete the sentence "the transform of X ...".
func celOutput(v ref.Val, depth int) (any, error) {
	if depth > MaxDepth {
		return nil, fmt.Errorf("produced a value nested deeper than %d levels", MaxDepth)
	}
	switch v := v.(type) {
	case types.String:
		return string(v), nil
	case types.Int:
		return int64(v), nil
	case types.Uint:
		return uint64(v), nil
	case types.Double:
		f := float64(v)
		if math.IsInf(f, 0) || math.IsNaN(f) {
			return nil, fmt.Errorf("produced %v, which JSON cannot hold", f)
		}
		return f, nil
	case types.Bool:
		return bool(v), nil
	case types.Null:
		return nil, errors.New("produced null; a transform must produce a value")
	case types.Timestamp:
		return sgam.FormatTime(v.Time), nil
	case traits.Mapper:
		out := map[string]any{}
		it := v.Iterator()
		for it.HasNext() == types.True {
			k := it.Next()
			ks, ok := k.(types.String)
			if !ok {
				return nil, fmt.Errorf("produced a map with the key %v; JSON keys are strings", k)
			}
			x, err := celOutput(v.Get(k), depth+1)
			if err != nil {
				return nil, err
			}
			out[string(ks)] = x
		}
		return out, nil
	case traits.Lister:
		out := []any{}
		it := v.Iterator()
		for it.HasNext() == types.True {
			x, err := celOutput(it.Next(), depth+1)
			if err != nil {
				return nil, err
			}
			out = append(out, x)
		}
		return out, nil
	}
	return nil, fmt.Errorf("produced a %s, which is not a JSON value", v.Type().TypeName())
}
