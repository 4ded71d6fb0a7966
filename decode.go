package sgam

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
)

// DecodeStrict decodes one JSON object (a line of an export or an ingest
// file) into v, rejecting unknown fields and naming the field at fault.
// Check the text with CheckJSON first: encoding/json keeps the last of a
// field given twice and rewrites invalid UTF-8.
func DecodeStrict(raw []byte, v any) error {
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
