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
	"github.com/sgam-dev/sgam/llm"
	"github.com/sgam-dev/sgam/schema"
)

// MaxUpdates bounds the updates of one answer. The output schema says so
// (maxItems), which a server that constrains output to the schema turns
// into a grammar that must close the list by then: without it a small
// model at temperature 0 was seen (llama.cpp, SmolLM2-135M) repeating
// no_change updates until max_tokens cut it off, every time. Where the
// server does not hold the answer to the schema, the updates past it are
// rejected, so that a runaway model cannot write without bound. An
// episode that states more is to be split.
const MaxUpdates = 32

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
		return out, fmt.Errorf("the answer %s", answerFault(err))
	}
	var top map[string]json.RawMessage
	if err := json.Unmarshal(raw, &top); err != nil {
		return out, fmt.Errorf(`the answer is not a JSON object {"updates": [...]}`)
	}
	if llm.EchoesSchema(string(raw)) {
		// Small local models answer the schema given in the prompt (json_object
		// mode) rather than an object that fills it.
		return out, fmt.Errorf(`the answer is the JSON Schema itself, not an object {"updates": [...]} that fills it (a small model in json_object mode often answers so; json_schema mode, where the server constrains the answer, does not)`)
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
	ep := newEpisodeText(in.Episode.Content)
	for i, u := range list {
		if i >= MaxUpdates {
			out.Rejected = append(out.Rejected, sgam.Rejection{Index: i, Update: u, Reason: sgam.RejectMalformed,
				Message: fmt.Sprintf("more than %d updates in one answer", MaxUpdates)})
			continue
		}
		w, warn, rej := validate(in, ep, i, u)
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

// answerFault says what CheckJSON found wrong in an answer, and where: it
// names the member the fault is in as the field (a key given twice: that
// key), and the place inside it as a pointer; here, one pointer from the
// answer's top.
func answerFault(err error) string {
	var se *sgam.Error
	if !errors.As(err, &se) {
		return err.Error()
	}
	ptr := se.Pointer
	if se.Field != "answer" {
		if ptr == "" && se.Message == "is given twice; give each field once" {
			return fmt.Sprintf("holds the key %q twice", se.Field)
		}
		ptr = "/" + strings.NewReplacer("~", "~0", "/", "~1").Replace(se.Field) + ptr
	}
	if ptr == "" {
		return se.Message
	}
	return se.Message + " (at " + ptr + ")"
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

// rejectErr is the rejection of a rule a check of sgam's broke: the
// reason, field and message it gave, as CommitExtraction records them.
func rejectErr(err error) *sgam.Rejection {
	return &sgam.Rejection{Reason: sgam.RejectionReason(err), Field: sgam.ErrorField(err), Message: sgam.ErrorMessage(err)}
}

// validate checks one update. It returns the write (nil for a no_change
// that corroborates nothing), a warning, or the rejection.
func validate(in Input, ep *episodeText, i int, raw json.RawMessage) (*sgam.CandidateWrite, string, *sgam.Rejection) {
	u, rej := decodeUpdate(raw)
	if rej != nil {
		return nil, "", rej
	}
	if u.Change == ChangeNone {
		return corroboration(in, ep, i, u), "", nil
	}
	return validateUpdate(in, ep, i, u, false)
}

// corroboration is the write of a no_change update: when it holds, as a
// valid update would, the value stored at the reference time, and its
// quote states that value (for an inferred attribute, the quote or the
// rest of the episode; never the quote alone), the episode is one more
// source of that row, written as a repeat at the row's valid_from (the
// ledger keeps the row and adds the source), so that forgetting the first
// source keeps a fact another episode supports too. Anything else is
// dropped, never rejected (the model said nothing changes), and adds no
// source: an episode that does not state the value is no evidence of it,
// and as a source it would keep the fact when the one episode that said it
// is forgotten.
func corroboration(in Input, ep *episodeText, i int, u update) *sgam.CandidateWrite {
	u.Change = ChangeUpdate
	w, _, rej := validateUpdate(in, ep, i, u, true)
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

// validateUpdate checks a decoded update that is not a no_change, or
// (corroborates) one that is, as an update of the value it holds.
func validateUpdate(in Input, ep *episodeText, i int, u update, corroborates bool) (*sgam.CandidateWrite, string, *sgam.Rejection) {
	change := u.Change
	switch change {
	case ChangeNew, ChangeUpdate, ChangeRetract:
	default:
		return nil, "", reject(sgam.RejectInvalidChange, "change", "%q is none of new, update, no_change, retract", clip(change, 40))
	}
	quote, rej := ep.quote(u.Evidence)
	if rej != nil {
		return nil, "", rej
	}
	subject, rej := subjectOf(in, u.Subject)
	if rej != nil {
		return nil, "", rej
	}
	w := &sgam.CandidateWrite{Accepted: sgam.Accepted{Index: i, Evidence: u.Evidence, Subject: subject, Change: change}}
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
		if err := (sgam.Key{Tenant: sgam.DefaultTenant, Subject: subject, Attribute: u.Attribute}).Check(); err != nil {
			return nil, "", rejectErr(err)
		}
		w.Attribute = u.Attribute
	}

	if w.ValidFrom, rej = validFromOf(in.Episode.OccurredAt, attr, u.ValidFrom); rej != nil {
		return nil, "", rej
	}

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
			if st := quote.states(attr, w.Attribute, v, *u.Value, true); !st.ok {
				return nil, "", reject(sgam.RejectUngrounded, "value", "the quote %q does not name the member to remove: it does not state %s", clip(u.Evidence, 120), st.what)
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
	if rej := stated(quote, ep, attr, w.Attribute, v, u, corroborates); rej != nil {
		return nil, "", rej
	}
	w.Value = v
	return w, currentWarning(in, u, w, v), nil
}

// stated applies grounding's value rule to value v of attribute name:
// the quote states it; or the attribute is inferred, and the update is
// not a corroboration (the quote alone grounds the model's reading of
// it) or is one that the episode, beyond its quote, states.
func stated(quote *passage, ep *episodeText, a *schema.Attribute, name string, v json.RawMessage, u update, corroborates bool) *sgam.Rejection {
	st := quote.states(a, name, v, *u.Value, false)
	if st.ok {
		return nil
	}
	inferred := a != nil && a.Inferred && name != sgam.AliasAttribute
	switch {
	case inferred && !corroborates:
		return nil
	case inferred && ep.passage().states(a, name, v, *u.Value, false).ok:
		return nil
	case inferred:
		return reject(sgam.RejectUngrounded, "value", "neither the quote %q nor the rest of the episode states %s: a no_change adds the episode as a source only when it states the value", clip(u.Evidence, 120), st.what)
	case name == sgam.AliasAttribute:
		return reject(sgam.RejectUngrounded, "value", "the quote %q does not state %s: a name the model adds is always words of its quote", clip(u.Evidence, 120), st.what)
	case a == nil:
		return reject(sgam.RejectUngrounded, "value", "the quote %q does not state %s", clip(u.Evidence, 120), st.what)
	}
	return reject(sgam.RejectUngrounded, "value", "the quote %q does not state %s, and the schema does not mark %s inferred", clip(u.Evidence, 120), st.what, name)
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
// An instant before minValidFrom is returned as it is, for validFromOf to
// refuse by that rule: the store's own message for the zero instant
// ("not given") would name the wrong one.
func parseValidFrom(s string) (time.Time, error) {
	s = strings.TrimSpace(s)
	if len(s) == len("2006-01-02") {
		t, err := time.Parse("2006-01-02", s)
		if err != nil {
			return time.Time{}, fmt.Errorf("%q is not a date YYYY-MM-DD or an RFC 3339 time", s)
		}
		return t, nil
	}
	if t, err := time.Parse(time.RFC3339Nano, strings.ToUpper(s)); err == nil && t.Before(minValidFrom) {
		return t, nil
	}
	t, err := sgam.ParseTime("valid_from", s)
	if err != nil {
		return time.Time{}, fmt.Errorf("%s, or a date YYYY-MM-DD", sgam.ErrorMessage(err))
	}
	return t, nil
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

// normalize folds case, runs of white space, typographic quotes and
// dashes and the minus sign, for grounding quotes in the episode.
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
		case '\u2013', '\u2014', '\u2212':
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

// maxNewSubjectBytes bounds a subject id the model makes up: an id, not a
// text.
const maxNewSubjectBytes = 64

// subjectOf returns the subject an update names. A subject shown to the
// model under "Subjects in play" is taken exactly as shown, whatever its
// text (the HTTP API lets callers store any), or in another case when one
// shown subject alone has that spelling ("Mira" for mira). Anything else is
// a new id, as the prompt asks for: lowercased, it must be letters and
// digits in words joined by single - _ or . ("acct-42", "mira.chen"), at
// most maxNewSubjectBytes: what words.Candidates finds when a later text
// names it, and never a path ("../beta/mira") or a sentence.
func subjectOf(in Input, s string) (string, *sgam.Rejection) {
	if s == "" {
		return "", reject(sgam.RejectInvalidSubject, "subject", "is required: the id of the subject the update is about")
	}
	var folded []string
	for _, sub := range in.Subjects {
		if sub.ID == s {
			return s, nil
		}
		if strings.EqualFold(sub.ID, s) {
			folded = append(folded, sub.ID)
		}
	}
	switch len(folded) {
	case 1:
		return folded[0], nil
	case 0:
	default:
		return "", reject(sgam.RejectInvalidSubject, "subject", "%q is none of the subjects shown, and in another case more than one: %q", clip(s, 80), folded)
	}
	id := strings.ToLower(s)
	if !isSubjectID(id) {
		return "", reject(sgam.RejectInvalidSubject, "subject", "%q is not a subject id: name a subject shown under \"Subjects in play\" as shown, or a new one by an id of lowercase letters and digits in words joined by single - _ or . (at most %d bytes), such as acct-42", clip(s, 80), maxNewSubjectBytes)
	}
	return id, nil
}

// isSubjectID reports whether s (lowercased) is a new subject id as
// subjectOf describes it.
func isSubjectID(s string) bool {
	if len(s) > maxNewSubjectBytes {
		return false
	}
	sep := true // at the start, as after a separator: none may come first
	for _, r := range s {
		switch {
		case unicode.IsLetter(r) || unicode.IsDigit(r):
			sep = false
		case unicode.IsMark(r) && !sep: // an accent that follows its letter
		case r == '-' || r == '_' || r == '.':
			if sep {
				return false
			}
			sep = true
		default:
			return false
		}
	}
	return !sep
}

// minValidFrom is the earliest valid_from extraction accepts: an earlier
// one is a placeholder (0001-01-01 is the zero time, a model's "no date"),
// not when a value began. A direct write may name any instant.
var minValidFrom = time.Date(1900, 1, 1, 0, 0, 0, 0, time.UTC)

// FutureMargin is how far after its episode's occurred_at a value the model
// extracts may start to hold when its attribute declares no future of its
// own: "tomorrow", resolved as a date in any time zone, is within it. A
// model that writes a later valid_from has most often copied the value's
// own date (a deadline) into it, which would hide the value until then.
const FutureMargin = 48 * time.Hour

// validFromOf reads an update's valid_from (nil or blank: occurred, when
// its episode occurred) and checks it lies between minValidFrom and the
// future the attribute allows after occurred.
func validFromOf(occurred time.Time, a *schema.Attribute, s *string) (time.Time, *sgam.Rejection) {
	if s == nil || strings.TrimSpace(*s) == "" {
		return occurred, nil
	}
	t, err := parseValidFrom(*s)
	if err != nil {
		return time.Time{}, reject(sgam.RejectInvalidTime, "valid_from", "%s", clip(err.Error(), 200))
	}
	if t.Before(minValidFrom) {
		return time.Time{}, reject(sgam.RejectInvalidTime, "valid_from", "%q is before %s, the earliest valid_from extraction accepts: so early a date is a placeholder (0001-01-01 is the zero time), not when a value began; null means when the episode occurred",
			clip(*s, 60), minValidFrom.Format("2006-01-02"))
	}
	margin := FutureMargin
	if a != nil && a.Future > 0 {
		margin = a.Future
	}
	if t.After(occurred.Add(margin)) {
		why := "a value that starts later needs future in its attribute's schema"
		if a != nil && a.Future > 0 {
			why = "the furthest its attribute's future allows"
		}
		return time.Time{}, reject(sgam.RejectInvalidTime, "valid_from", "%q is more than %s after the episode occurred (%s): %s",
			clip(*s, 60), span(margin), sgam.FormatTime(occurred), why)
	}
	return t, nil
}

// span renders a duration in days, or hours when it is not whole days.
func span(d time.Duration) string {
	n, unit := d/time.Hour, "hour"
	if d%(24*time.Hour) == 0 {
		n, unit = d/(24*time.Hour), "day"
	}
	if n == 1 {
		return "1 " + unit
	}
	return fmt.Sprintf("%d %ss", n, unit)
}
