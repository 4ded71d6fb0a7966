package extract

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"

	"github.com/sgam-dev/sgam"
	"github.com/sgam-dev/sgam/schema"
)

// Bounds of a prompt: it grows with the schema and the episode, never
// with the store.
const (
	MaxSubjects     = 16    // subjects in play shown with their values
	MaxFactsShown   = 32    // current values shown per subject
	MaxRecent       = 4     // earlier episodes of the session shown as context
	maxRecentChars  = 600   // of each earlier episode
	maxValueChars   = 300   // of each stored value shown
	maxDescription  = 300   // of each attribute's description
	MaxEpisodeChars = 16000 // bytes of the episode shown; a longer one is cut (and the record says so)
)

// Input is what a prompt is built from.
type Input struct {
	Episode sgam.Episode
	// Schema is the tenant's schema, nil when none serves it; Version its
	// version (0: none).
	Schema  *schema.Schema
	Version int
	// Subjects are the subjects in play, each with its values at the
	// episode's occurred_at, at most MaxSubjects, in order of relevance.
	Subjects []Subject
	// Recent are earlier episodes of the session, oldest first, shown as
	// context only.
	Recent []sgam.Episode
}

// Subject is a subject in play and its stored values.
type Subject struct {
	ID    string
	Facts []sgam.Fact
}

// Prompt is a built prompt.
type Prompt struct {
	System string
	User   string
	Schema []byte // the output schema
}

// Text is the prompt as records keep it.
func (p Prompt) Text() string { return "SYSTEM:\n" + p.System + "\n\nUSER:\n" + p.User }

// Digest identifies the prompt as asked of model in mode: an identical
// digest may be answered from an earlier record.
func (p Prompt) Digest(model, mode string) string {
	h := sha256.New()
	for _, s := range []string{model, mode, p.System, p.User, string(p.Schema)} {
		fmt.Fprintf(h, "%d:%s", len(s), s)
	}
	return hex.EncodeToString(h.Sum(nil))
}

// ContentDigest identifies an episode's content as extraction sees it.
func ContentDigest(e sgam.Episode) string {
	h := sha256.New()
	for _, s := range []string{e.Kind, e.Session, sgam.FormatTime(e.OccurredAt), e.Content} {
		fmt.Fprintf(h, "%d:%s", len(s), s)
	}
	return hex.EncodeToString(h.Sum(nil))
}

const system = `You maintain the long-term memory of an AI agent. From ONE episode (a message, a tool result or an event), propose updates to the stored facts about its subjects.

Rules:
- Propose only what the episode itself states. "evidence" must be an exact quote of the episode (not of the earlier context): whole words, the shortest span that states the value.
- Use only the attributes listed. A subject is a lowercase id (letters and digits, words joined by - _ or .): reuse the ids shown under "Subjects in play".
- For each update, "current_value" is the stored value shown for that subject and attribute (null when none is shown), and "change" says how the episode relates to it: new (nothing stored), update (a different value), no_change (the same value), retract (the episode says it no longer holds).
- "value" is text read by the attribute's type: "42" for an integer, "2026-06-30" for a date, "true" for a boolean, JSON text for a structured value. It is null for retract.
- "valid_from" is when the value starts to hold in the world, not a date the value names (a deadline's date is its value). Resolve relative dates ("next Friday", "since last week") against the reference time. Null means: when the episode occurred.
- Do not guess. An episode that states nothing to remember gets {"updates": []}.`

// Build builds the prompt of in.
func Build(in Input) Prompt {
	var b strings.Builder
	e := in.Episode
	fmt.Fprintf(&b, "Reference time (when the episode occurred): %s\n\n", sgam.FormatTime(e.OccurredAt))

	b.WriteString("Attributes:\n")
	for _, a := range attributes(in.Schema) {
		if a == nil {
			b.WriteString("- no schema: name each attribute with " + attributeSlugs + "; values are stored as text\n")
			continue
		}
		fmt.Fprintf(&b, "- %s (%s", a.Name, typeText(a))
		if a.Cardinality == schema.Many {
			b.WriteString(", a set: one update per member, retract removes a member")
		} else {
			b.WriteString(", one value")
		}
		b.WriteString(")")
		if a.Description != "" {
			b.WriteString(": " + clip(oneLine(a.Description), maxDescription))
		}
		b.WriteByte('\n')
	}

	b.WriteString("\nSubjects in play, with their stored values at the reference time:\n")
	if len(in.Subjects) == 0 {
		b.WriteString("- none known\n")
	}
	for _, s := range in.Subjects {
		fmt.Fprintf(&b, "- %s", s.ID)
		if len(s.Facts) == 0 {
			b.WriteString(": nothing stored\n")
			continue
		}
		b.WriteString(":\n")
		for i, f := range s.Facts {
			if i == MaxFactsShown {
				fmt.Fprintf(&b, "    (%d more not shown)\n", len(s.Facts)-i)
				break
			}
			fmt.Fprintf(&b, "    %s = %s (since %s)\n", f.Attribute, clip(shownValue(f.Value), maxValueChars), sgam.FormatTime(f.ValidFrom))
		}
	}

	if len(in.Recent) > 0 {
		b.WriteString("\nEarlier in this session (context only: never quote it):\n")
		for _, r := range in.Recent {
			fmt.Fprintf(&b, "[%s %s] %s\n", sgam.FormatTime(r.OccurredAt), r.Kind, clip(oneLine(r.Content), maxRecentChars))
		}
	}

	content := e.Content
	if len(content) > MaxEpisodeChars {
		content = cut(content, MaxEpisodeChars)
	}
	fmt.Fprintf(&b, "\nThe episode (quote evidence from it only):\n<episode id=%q kind=%q>\n%s\n</episode>\n", e.ID, e.Kind, content)
	return Prompt{System: system, User: b.String(), Schema: OutputSchema(in.Schema)}
}

// attributes are the attributes the prompt lists: those a tenant under sch
// may write, the built-in ones included; with no schema (or one that
// declares none), nil, for "any attribute", then the built-in ones.
func attributes(sch *schema.Schema) []*schema.Attribute {
	if sch != nil && len(sch.Attributes) > 0 {
		return sch.All()
	}
	a, _ := schema.Builtin(sgam.AliasAttribute)
	return []*schema.Attribute{nil, a}
}

func typeText(a *schema.Attribute) string {
	switch a.Type {
	case schema.TypeEnum:
		vals := make([]string, len(a.Enum))
		for i, v := range a.Enum {
			vals[i] = shownValue(v)
		}
		return "one of " + strings.Join(vals, ", ")
	case schema.TypeRef:
		if a.Ref != "" {
			return "the id of a " + a.Ref
		}
		return "a subject id"
	case schema.TypeDate:
		return "date YYYY-MM-DD"
	case schema.TypeDatetime:
		return "datetime RFC 3339"
	case schema.TypeJSONSchema:
		return "JSON text valid under " + clip(string(a.JSONSchema), 500)
	}
	return a.Type
}

// shownValue shows a stored JSON value: a string without its quotes.
func shownValue(v []byte) string {
	if s, ok := jsonString(v); ok {
		return s
	}
	return string(v)
}

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return cut(s, n) + "…"
}

// cut cuts s to at most n bytes on a rune boundary.
func cut(s string, n int) string {
	for n > 0 && n < len(s) && s[n]&0xC0 == 0x80 {
		n--
	}
	return s[:n]
}
