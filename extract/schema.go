// Package extract turns an episode into candidate memory updates: it
// builds the JSON Schema the model must fill from the tenant's schema and
// the prompt that shows what is stored, decodes the model's answer, and
// validates every candidate against the schema and the episode. The model
// proposes; this package never lets it choose the tenant or the source,
// and the ledger, not the model, decides which row stays current.
package extract

import (
	"bytes"
	"encoding/json"
	"fmt"

	"github.com/sgam-dev/sgam/schema"
)

// SchemaName names the output schema (and the tool, in tools mode).
const SchemaName = "memory_updates"

// Changes a MemoryUpdate may propose.
const (
	ChangeNew      = "new"
	ChangeUpdate   = "update"
	ChangeNone     = "no_change"
	ChangeRetract  = "retract"
	maxEnumInline  = 2000 // attributes beyond this are named in the prompt only
	attributeSlugs = "a lowercase identifier such as passport_deadline"
)

// fields are a MemoryUpdate's fields in reasoning order: the quote first,
// so that the model commits to evidence before it writes a value.
var fields = []string{"evidence", "subject", "attribute", "current_value", "change", "value", "valid_from"}

// OutputSchema returns the JSON Schema of the model's answer for a tenant
// under sch (nil: no schema, any attribute): {"updates": [MemoryUpdate]},
// strict (every property required, no other property), its properties in
// reasoning order. It has no field for the tenant or the source.
func OutputSchema(sch *schema.Schema) json.RawMessage {
	var attribute any = map[string]any{"type": "string", "description": "the attribute: " + attributeSlugs}
	if all := attributes(sch); all[0] != nil && len(all) <= maxEnumInline {
		names := make([]string, len(all))
		for i, a := range all {
			names[i] = a.Name
		}
		attribute = map[string]any{"type": "string", "enum": names, "description": "one of the declared attributes"}
	}
	props := []prop{
		{"evidence", map[string]any{"type": "string", "description": "the exact words of the episode that state this update, quoted"}},
		{"subject", map[string]any{"type": "string", "description": "the subject's id, as shown under subjects; a new subject gets a short lowercase id"}},
		{"attribute", attribute},
		{"current_value", map[string]any{"type": []string{"string", "null"}, "description": "the stored value shown for this subject and attribute, or null"}},
		{"change", map[string]any{"type": "string", "enum": []string{ChangeNew, ChangeUpdate, ChangeNone, ChangeRetract}}},
		{"value", map[string]any{"type": []string{"string", "null"}, "description": "the new value as text, read by the attribute's type: \"42\", \"2026-06-30\", JSON text for structured values; null for retract"}},
		{"valid_from", map[string]any{"type": []string{"string", "null"}, "description": "when the value starts to hold, RFC 3339 or YYYY-MM-DD, resolved against the reference time; null: when the episode occurred"}},
	}
	var b bytes.Buffer
	fmt.Fprintf(&b, `{"type":"object","additionalProperties":false,"required":["updates"],"properties":{"updates":{"type":"array","maxItems":%d,"items":`, MaxUpdates)
	b.WriteString(`{"type":"object","additionalProperties":false,"required":`)
	req, _ := json.Marshal(fields)
	b.Write(req)
	b.WriteString(`,"properties":{`)
	for i, p := range props {
		if i > 0 {
			b.WriteByte(',')
		}
		k, _ := json.Marshal(p.name)
		v, _ := json.Marshal(p.schema)
		b.Write(k)
		b.WriteByte(':')
		b.Write(v)
	}
	b.WriteString(`}}}}}`)
	return b.Bytes()
}

type prop struct {
	name   string
	schema any
}
