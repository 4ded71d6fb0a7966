package extract

import (
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
	"unicode"

	"github.com/sgam-dev/sgam"
	"github.com/sgam-dev/sgam/schema"
)

// MaxUpdates bounds the updates taken from one answer; the rest are
// rejected, so that a runaway model cannot write without bound.
const MaxUpdates = 256

// Outcome is what validation made of a model's answer.
type Outcome struct {
	Writes    []sgam.CandidateWrite
	Rejected  []sgam.Rejection
	Warnings  []string
	Unchanged int // no_change updates dropped (those that corroborate a stored row are Writes)
	// Proposed counts the updates in the answer.
	Proposed int
}

// Decode parses a model's answer and validates every update in it against
// in (its episode and schema). An answer that is not {"updates": [...]}
// is an error: nothing of it can be trusted. A bad update is rejected
// with its reason; the others go on.
func Decode(in Input, answer string) (Outcome, error) {
	var out Outcome
	raw := []byte(strings.TrimSpace(answer))
	if len(raw) == 0 {
		return out, fmt.Errorf("the answer is empty")
	}
	if err := sgam.CheckJSON("answer", raw); err != nil {
		msg := sgam.ErrorMessage(err)
		// CheckJSON names the member the fault is in as the field, and
		// the place inside it as a pointer: one pointer from the answer's top.
		var se *sgam.Error
		if errors.As(err, &se) && se.Field != "answer" {
			if strings.HasPrefix(msg, "is given twice") {
				msg = fmt.Sprintf("holds the key %q twice", se.Field)
			} else if i := strings.LastIndex(msg, " (at /"); i >= 0 && strings.HasSuffix(msg, ")") {
				msg = msg[:i] + " (at /" + se.Field + "/" + msg[i+len(" (at /"):]
			} else {
				msg += " (at /" + se.Field + ")"
			}
		}
		return out, fmt.Errorf("the answer %s", msg)
	}
	var top map[string]json.RawMessage
	if err := json.Unmarshal(raw, &top); err != nil {
		return out, fmt.Errorf(`the answer is not a JSON object {"updates": [...]}`)
	}
	for k := range top {
		if k != "updates" {
			return out, fmt.Errorf("the answer has a field %q: only \"updates\" is allowed", k)
		}
	}
	ups, ok := top["updates"]
	if !ok {
		return out, fmt.Errorf(`the answer has no "updates"`)
	}
	var list []json.RawMessage
	if err := json.Unmarshal(ups, &list); err != nil || list == nil {
		return out, fmt.Errorf(`"updates" is not a list`)
	}
	out.Proposed = len(list)
	grounding := normalize(in.Episode.Content)
	for i, u := range list {
		if i >= MaxUpdates {
			out.Rejected = append(out.Rejected, sgam.Rejection{Index: i, Update: u, Reason: sgam.RejectMalformed,
				Message: fmt.Sprintf("more than %d updates in one answer", MaxUpdates)})
			continue
		}
		w, warn, rej := validate(in, grounding, i, u)
		switch {
		case rej != nil:
			rej.Index, rej.Update = i, u
			out.Rejected = append(out.Rejected, *rej)
		case w == nil:
			out.Unchanged++
		default:
			out.Writes = append(out.Writes, *w)
		}
		if warn != "" {
			out.Warnings = append(out.Warnings, fmt.Sprintf("updates[%d]: %s", i, warn))
		}
	}
	return out, nil
}

// update is a MemoryUpdate as decoded; a nil pointer is a null or missing
// field.
type update struct {
	Evidence, Subject, Attribute, Change string
	CurrentValue, Value, ValidFrom       *string
}

func reject(reason, field, format string, args ...any) *sgam.Rejection {
	return &sgam.Rejection{Reason: reason, Field: field, Message: fmt.Sprintf(format, args...)}
}

// validate checks one update. It returns the write (nil for a no_change
// that corroborates nothing), a warning, or the rejection.
func validate(in Input, grounding string, i int, raw json.RawMessage) (*sgam.CandidateWrite, string, *sgam.Rejection) {
	u, rej := decodeUpdate(raw)
	if rej != nil {
		return nil, "", rej
	}
	if u.Change == ChangeNone {
		return corroboration(in, grounding, i, u), "", nil
	}
	return validateUpdate(in, grounding, i, u)
}

// corroboration is the write of a no_change update: when it holds, as a
// valid update would, the value stored at the reference time, the episode
// is one more source of that row, written as a repeat at the row's
// valid_from (the ledger keeps the row and adds the source), so that
// forgetting the first source keeps a fact another episode supports too.
// Anything else is dropped, never rejected: the model said nothing
// changes.
func corroboration(in Input, grounding string, i int, u update) *sgam.CandidateWrite {
	u.Change = ChangeUpdate
	w, _, rej := validateUpdate(in, grounding, i, u)
	if rej != nil || w == nil {
		return nil
	}
	for _, s := range in.Subjects {
		if s.ID != w.Subject {
			continue
		}
		for _, f := range s.Facts {
			if f.Attribute == w.Attribute && !f.Tombstone && string(f.Value) == string(w.Value) {
				w.Change, w.ValidFrom = ChangeNone, f.ValidFrom
				return w
			}
		}
	}
	return nil
}

// validateUpdate checks a decoded update that is not a no_change.
func validateUpdate(in Input, grounding string, i int, u update) (*sgam.CandidateWrite, string, *sgam.Rejection) {
	change := u.Change
	switch change {
	case ChangeNew, ChangeUpdate, ChangeRetract:
	default:
		return nil, "", reject(sgam.RejectInvalidChange, "change", "%q is none of new, update, no_change, retract", clip(change, 40))
	}
	q := normalize(u.Evidence)
	if q == "" || !strings.Contains(grounding, q) {
		return nil, "", reject(sgam.RejectUngrounded, "evidence", "the quote %q does not occur in the episode", clip(u.Evidence, 120))
	}
	if err := sgam.CheckSubject(u.Subject); err != nil {
		return nil, "", reject(sgam.RejectInvalidSubject, "subject", "%s", sgam.ErrorMessage(err))
	}
	w := &sgam.CandidateWrite{Accepted: sgam.Accepted{Index: i, Evidence: u.Evidence, Subject: u.Subject, Change: change}}
	var attr *schema.Attribute
	if in.Schema != nil {
		a, ok := in.Schema.Attribute(u.Attribute)
		if !ok {
			return nil, "", reject(sgam.RejectUnknownAttribute, "attribute", "%q is not declared in schema version %d", clip(u.Attribute, 80), in.Version)
		}
		attr = a
		w.Attribute = a.Name
		w.Set = a.Cardinality == schema.Many
	} else {
		if err := (sgam.Key{Tenant: sgam.DefaultTenant, Subject: u.Subject, Attribute: u.Attribute}).Check(); err != nil {
			return nil, "", reject(sgam.RejectUnknownAttribute, "attribute", "%s", sgam.ErrorMessage(err))
		}
		w.Attribute = u.Attribute
	}

	validFrom := in.Episode.OccurredAt
	if u.ValidFrom != nil && strings.TrimSpace(*u.ValidFrom) != "" {
		t, err := parseValidFrom(*u.ValidFrom)
		if err != nil {
			return nil, "", reject(sgam.RejectInvalidTime, "valid_from", "%q is not an RFC 3339 time or a date YYYY-MM-DD", clip(*u.ValidFrom, 60))
		}
		validFrom = t
	}
	w.ValidFrom = validFrom

	if change == ChangeRetract {
		w.Retract = true
		if w.Set {
			// Removing a member names it.
			if u.Value == nil {
				return nil, "", reject(sgam.RejectInvalidValue, "value", "a retraction from the set %s names the member to remove", w.Attribute)
			}
			v, rej := readValue(attr, *u.Value)
			if rej != nil {
				return nil, "", rej
			}
			w.Value = v
		}
		return w, currentWarning(in, u, w, nil), nil
	}
	if u.Value == nil {
		return nil, "", reject(sgam.RejectInvalidValue, "value", "is null: a %s needs a value", change)
	}
	v, rej := readValue(attr, *u.Value)
	if rej != nil {
		return nil, "", rej
	}
	w.Value = v
	return w, currentWarning(in, u, w, v), nil
}

// decodeUpdate decodes an update strictly: an object of the seven fields,
// each a string (current_value, value and valid_from may be null or
// missing), and nothing else.
func decodeUpdate(raw json.RawMessage) (update, *sgam.Rejection) {
	var u update
	var m map[string]json.RawMessage
	if err := json.Unmarshal(raw, &m); err != nil || m == nil {
		return u, reject(sgam.RejectMalformed, "", "an update is a JSON object")
	}
	for k := range m {
		if !isField(k) {
			return u, reject(sgam.RejectUnexpectedField, clip(k, 60), "an update has no field %q: the tenant and the source come from the episode, never from the model", clip(k, 60))
		}
	}
	str := func(name string, required bool) (*string, *sgam.Rejection) {
		v, ok := m[name]
		if !ok || string(v) == "null" {
			if required {
				return nil, reject(sgam.RejectMalformed, name, "is required")
			}
			return nil, nil
		}
		var s string
		if err := json.Unmarshal(v, &s); err == nil {
			return &s, nil
		}
		// Models asked for text sometimes write the number or the object
		// itself: that is the same value, as JSON text.
		if name == "value" || name == "current_value" {
			t := string(v)
			return &t, nil
		}
		return nil, reject(sgam.RejectMalformed, name, "must be a string")
	}
	var rej *sgam.Rejection
	var p *string
	for _, f := range []struct {
		name     string
		into     *string
		required bool
	}{{"evidence", &u.Evidence, true}, {"subject", &u.Subject, true}, {"attribute", &u.Attribute, true}, {"change", &u.Change, true}} {
		if p, rej = str(f.name, f.required); rej != nil {
			return u, rej
		}
		*f.into = *p
	}
	if u.CurrentValue, rej = str("current_value", false); rej != nil {
		return u, rej
	}
	if u.Value, rej = str("value", false); rej != nil {
		return u, rej
	}
	if u.ValidFrom, rej = str("valid_from", false); rej != nil {
		return u, rej
	}
	return u, nil
}

func isField(k string) bool {
	for _, f := range fields {
		if f == k {
			return true
		}
	}
	return false
}

// readValue reads a value written as text by the attribute's declared
// type, and validates it: "42" is 42 for an integer, "2026-06-30" a date,
// JSON text for a json_schema attribute. Without a schema the text is a
// string value.
func readValue(a *schema.Attribute, text string) (json.RawMessage, *sgam.Rejection) {
	var raw json.RawMessage
	if a == nil {
		raw, _ = json.Marshal(text)
		v, err := sgam.CanonicalValue("value", raw, sgam.DefaultMaxValueBytes)
		if err != nil {
			return nil, reject(sgam.RejectInvalidValue, "value", "%s", sgam.ErrorMessage(err))
		}
		return v, nil
	}
	t := strings.TrimSpace(text)
	switch a.Type {
	case schema.TypeString, schema.TypeDate, schema.TypeDatetime, schema.TypeRef:
		raw, _ = json.Marshal(text)
		if a.Type != schema.TypeString {
			raw, _ = json.Marshal(t)
		}
	case schema.TypeInteger, schema.TypeNumber:
		if _, err := strconv.ParseFloat(t, 64); err != nil {
			return nil, reject(sgam.RejectInvalidValue, "value", "%q is not %s %s", clip(text, 60), article(string(a.Type)), a.Type)
		}
		raw = json.RawMessage(t)
	case schema.TypeBoolean:
		switch strings.ToLower(t) {
		case "true", "false":
			raw = json.RawMessage(strings.ToLower(t))
		default:
			return nil, reject(sgam.RejectInvalidValue, "value", "%q is not true or false", clip(text, 60))
		}
	case schema.TypeEnum:
		// An enum value is written as its text; a JSON literal (a number)
		// is taken as JSON when it is one of the values.
		raw, _ = json.Marshal(text)
		if json.Valid([]byte(t)) && t != "" && t[0] != '"' {
			raw = json.RawMessage(t)
		}
	default: // json_schema
		raw = json.RawMessage(t)
	}
	if err := sgam.CheckJSON("value", raw); err != nil {
		return nil, reject(sgam.RejectInvalidValue, "value", "%q is not JSON text: %s", clip(text, 60), sgam.ErrorMessage(err))
	}
	v, err := a.Value(raw)
	if err != nil {
		return nil, reject(sgam.RejectInvalidValue, "value", "%s", sgam.ErrorMessage(err))
	}
	return v, nil
}

// parseValidFrom reads an RFC 3339 time or a date (its midnight, UTC).
func parseValidFrom(s string) (time.Time, error) {
	s = strings.TrimSpace(s)
	if len(s) == len("2006-01-02") {
		t, err := time.Parse("2006-01-02", s)
		if err != nil {
			return time.Time{}, err
		}
		return t, nil
	}
	return sgam.ParseTime("valid_from", s)
}

// currentWarning compares the model's current_value with what the prompt
// showed: the model's reasoning, not an authority, so a mismatch is only
// recorded.
func currentWarning(in Input, u update, w *sgam.CandidateWrite, value json.RawMessage) string {
	var shown []sgam.Fact
	for _, s := range in.Subjects {
		if s.ID == w.Subject {
			for _, f := range s.Facts {
				if f.Attribute == w.Attribute {
					shown = append(shown, f)
				}
			}
		}
	}
	said := ""
	if u.CurrentValue != nil {
		said = strings.TrimSpace(*u.CurrentValue)
	}
	if len(shown) == 0 {
		if said != "" {
			return fmt.Sprintf("current_value %q, but nothing is stored for %s.%s", clip(said, 60), w.Subject, w.Attribute)
		}
		return ""
	}
	for _, f := range shown {
		if said == shownValue(f.Value) || said == string(f.Value) {
			return ""
		}
	}
	if w.Set && value != nil {
		return "" // a set shows several members; current_value names one or none
	}
	if u.CurrentValue == nil {
		return fmt.Sprintf("current_value null, but the stored value is %s", clip(shownValue(shown[0].Value), 60))
	}
	return fmt.Sprintf("current_value %q, but the stored value is %s", clip(said, 60), clip(shownValue(shown[0].Value), 60))
}

// article is "an" before a word that starts with a vowel, else "a".
func article(word string) string {
	if word != "" && strings.ContainsRune("aeiou", rune(word[0])) {
		return "an"
	}
	return "a"
}

// normalize folds case, runs of white space and typographic quotes, for
// grounding quotes in the episode.
func normalize(s string) string {
	var b strings.Builder
	b.Grow(len(s))
	space := false
	for _, r := range s {
		switch r {
		case '\u2018', '\u2019', '\u201B', '\u2032':
			r = '\''
		case '\u201C', '\u201D', '\u201F', '\u2033':
			r = '"'
		case '\u2013', '\u2014':
			r = '-'
		}
		if unicode.IsSpace(r) {
			space = b.Len() > 0
			continue
		}
		if space {
			b.WriteByte(' ')
			space = false
		}
		b.WriteRune(unicode.ToLower(r))
	}
	return b.String()
}

func jsonString(v []byte) (string, bool) {
	if len(v) == 0 || v[0] != '"' {
		return "", false
	}
	var s string
	if err := json.Unmarshal(v, &s); err != nil {
		return "", false
	}
	return s, true
}
