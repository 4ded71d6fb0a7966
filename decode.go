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

// DecodeStrict decodes one JSON object (a line of an export or an ingest
// file) into v, rejecting unknown fields and naming the field at fault.
// Check the text with CheckJSON first: encoding/json keeps the last of a
// field given twice and rewrites invalid UTF-8.
func DecodeStrict(raw []byte, v any) error {
	if err := CheckFieldNames(raw, v); err != nil {
		return err
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return fieldError(err)
	}
	if dec.More() {
		return Errorf(Invalid, "line", "holds more than one JSON value")
	}
	return nil
}

// fieldError turns an encoding/json error into an *sgam.Error naming the
// field.
func fieldError(err error) error {
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		return Errorf(Invalid, te.Field, "must be %s, not JSON %s", typeName(te.Type.String()), te.Value)
	}
	if msg := err.Error(); strings.HasPrefix(msg, "json: unknown field ") {
		field := strings.Trim(strings.TrimPrefix(msg, "json: unknown field "), `"`)
		return Errorf(Invalid, field, "is not a known field")
	}
	return Errorf(Invalid, "line", "is not valid JSON: %v", err)
}

func typeName(goType string) string {
	switch goType {
	case "string", "*string":
		return "a string"
	case "int", "int64", "*int64":
		return "an integer"
	case "bool":
		return "true or false"
	}
	if strings.HasPrefix(goType, "[]") {
		return "an array"
	}
	return "an object"
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
