package sgam

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"sync"
)

// DecodeStrict decodes one JSON object into v, naming the field at fault;
// whole is the name of the text itself in its errors ("body" for an HTTP
// request, "line" for a line of a file). It is the one decoder of sgam's
// JSON inputs (the HTTP API's bodies, the lines of replay scripts, ingest
// files and exports), so that each fault has one wording everywhere. It
// refuses, in order:
//   - empty text, and null;
//   - text that is not one strict JSON value (CheckJSON: a field given
//     twice, invalid UTF-8, a lone surrogate, a number out of range,
//     trailing data), which encoding/json would read other than as
//     written;
//   - a key that names a field of v only when case is ignored
//     (CheckFieldNames);
//   - a key that names no field of v, and a value of the wrong JSON type.
func DecodeStrict(whole string, raw []byte, v any) error {
	switch trimmed := bytes.TrimSpace(raw); {
	case len(trimmed) == 0:
		return Errorf(Invalid, whole, "is empty: a JSON object is expected")
	case string(trimmed) == "null":
		// encoding/json leaves v as it is for null: it would pass for {}.
		return Errorf(Invalid, whole, "must be a JSON object, not null")
	}
	if err := CheckJSON(whole, raw); err != nil {
		return err
	}
	if err := CheckFieldNames(raw, v); err != nil {
		return err
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return decodeError(whole, err)
	}
	return nil
}

// decodeError turns an encoding/json error into an *Error naming the
// field (whole when it names none).
func decodeError(whole string, err error) error {
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		field := te.Field
		if field == "" {
			field = whole
		}
		return Errorf(Invalid, field, "must be a JSON %s, not %s", jsonKind(te.Type), jsonValue(te.Value))
	}
	if name, ok := strings.CutPrefix(err.Error(), "json: unknown field "); ok {
		name = strings.Trim(name, `"`)
		if name == "" || len(name) > 64 {
			return Errorf(Invalid, whole, "has an unknown field %.64q", name)
		}
		return Errorf(Invalid, name, "is not a known field")
	}
	return Errorf(Invalid, whole, "is not valid: %v", err)
}

// jsonKind names the JSON type a Go type is decoded from.
func jsonKind(t reflect.Type) string {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t.Kind() {
	case reflect.String:
		return "string"
	case reflect.Struct, reflect.Map:
		return "object"
	case reflect.Slice, reflect.Array:
		return "array"
	case reflect.Bool:
		return "boolean"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "integer"
	}
	return "number"
}

// jsonValue names what the decoder found: encoding/json says "number
// 800.5" for a fraction sent for an integer, and "number" for one beyond
// the field's range.
func jsonValue(v string) string {
	if n, ok := strings.CutPrefix(v, "number "); ok {
		return "the number " + n
	}
	return v
}

// CheckFieldNames refuses an object key of raw that names a field of v's
// type only when case is ignored. encoding/json matches keys to fields
// case-insensitively ("SUBJECT" fills `json:"subject"`), so a request
// would be read other than as written, and one holding both "subject"
// and "SUBJECT" would keep the last, past CheckJSON's test for a key
// given twice. Keys that match no field at all are left to the decoder's
// DisallowUnknownFields; text that is not JSON is left to the decoder.
func CheckFieldNames(raw []byte, v any) error {
	var x any
	d := json.NewDecoder(bytes.NewReader(raw))
	d.UseNumber()
	if d.Decode(&x) != nil {
		return nil
	}
	return checkFieldNames(x, reflect.TypeOf(v), "")
}

var unmarshalerType = reflect.TypeFor[json.Unmarshaler]()

func checkFieldNames(x any, t reflect.Type, path string) error {
	for t != nil && t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t == nil || reflect.PointerTo(t).Implements(unmarshalerType) {
		return nil
	}
	switch t.Kind() {
	case reflect.Struct:
		obj, ok := x.(map[string]any)
		if !ok {
			return nil
		}
		fields := jsonFields(t)
		keys := make([]string, 0, len(obj))
		for k := range obj {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for _, k := range keys {
			at := k
			if path != "" {
				at = path + "." + k
			}
			ft, ok := fields[k]
			if !ok {
				for name := range fields {
					if strings.EqualFold(name, k) {
						return Errorf(Invalid, at, "is not a field: field names are case-sensitive (the field is %q)", name)
					}
				}
				continue
			}
			if err := checkFieldNames(obj[k], ft, at); err != nil {
				return err
			}
		}
	case reflect.Slice, reflect.Array:
		arr, ok := x.([]any)
		if !ok {
			return nil
		}
		for i, e := range arr {
			if err := checkFieldNames(e, t.Elem(), fmt.Sprintf("%s[%d]", path, i)); err != nil {
				return err
			}
		}
	case reflect.Map:
		obj, ok := x.(map[string]any)
		if !ok {
			return nil
		}
		for k, e := range obj {
			at := k
			if path != "" {
				at = path + "." + k
			}
			if err := checkFieldNames(e, t.Elem(), at); err != nil {
				return err
			}
		}
	}
	return nil
}

// fieldsOf caches jsonFields per struct type.
var fieldsOf sync.Map // reflect.Type → map[string]reflect.Type

// jsonFields returns the JSON names of t's fields (those of embedded
// structs promoted, as encoding/json does) with their types.
func jsonFields(t reflect.Type) map[string]reflect.Type {
	if f, ok := fieldsOf.Load(t); ok {
		return f.(map[string]reflect.Type)
	}
	out := map[string]reflect.Type{}
	for i := range t.NumField() {
		f := t.Field(i)
		tag := f.Tag.Get("json")
		if tag == "-" {
			continue
		}
		name, _, _ := strings.Cut(tag, ",")
		if f.Anonymous && name == "" {
			et := f.Type
			if et.Kind() == reflect.Pointer {
				et = et.Elem()
			}
			if et.Kind() == reflect.Struct {
				for n, ft := range jsonFields(et) {
					if _, ok := out[n]; !ok {
						out[n] = ft
					}
				}
				continue
			}
		}
		if !f.IsExported() {
			continue
		}
		if name == "" {
			name = f.Name
		}
		out[name] = f.Type
	}
	fieldsOf.Store(t, out)
	return out
}
