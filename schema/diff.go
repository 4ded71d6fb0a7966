package schema

import (
	"bytes"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/sgam-dev/sgam"
)

// Diff lists the changes from old to new, one line each, for a person to
// review before a new schema version goes live: "+" added, "-" removed,
// "~" changed. Sections come in file order (name, retention, episode
// retention, source ranks, memory types, entities, attributes, migrations);
// within a section, names are sorted, except migrations, which keep new's
// order because they apply in it. A nil schema is the empty one. The result
// is empty, not nil, when the two are equal.
func Diff(old, new *Schema) []string {
	if old == nil {
		old = emptySchema()
	}
	if new == nil {
		new = emptySchema()
	}
	d := &differ{out: []string{}}
	if old.Name != new.Name {
		d.add("~ name %s -> %s", orNone(old.Name), orNone(new.Name))
	}
	for _, c := range union(mapKeys(old.Retention), mapKeys(new.Retention)) {
		o, inOld := old.Retention[c]
		n, inNew := new.Retention[c]
		switch {
		case !inOld:
			d.add("+ retention class %s %s", c, n)
		case !inNew:
			d.add("- retention class %s", c)
		case o.String() != n.String():
			d.add("~ retention class %s: %s -> %s", c, o, n)
		}
	}
	if old.EpisodeRetention != new.EpisodeRetention {
		d.add("~ episode_retention %s -> %s", orNone(old.EpisodeRetention), orNone(new.EpisodeRetention))
	}
	if !slices.Equal(old.SourceRanks, new.SourceRanks) {
		d.add("~ source_ranks %s -> %s", strings.Join(old.SourceRanks, ", "), strings.Join(new.SourceRanks, ", "))
	}
	d.set("memory type", old.userMemoryTypes(), new.userMemoryTypes())
	switch {
	case old.Entities == nil && new.Entities != nil:
		d.add("~ entities: any name -> only those listed")
	case old.Entities != nil && new.Entities == nil:
		d.add("~ entities: only those listed -> any name")
	}
	d.set("entity", old.Entities, new.Entities)
	d.attributes(old, new)
	d.migrations(old, new)
	return d.out
}

type differ struct{ out []string }

func (d *differ) add(format string, args ...any) { d.out = append(d.out, fmt.Sprintf(format, args...)) }

// set reports the members added to and removed from a list of names.
func (d *differ) set(what string, old, new []string) {
	for _, x := range union(old, new) {
		switch {
		case !slices.Contains(old, x):
			d.add("+ %s %s", what, x)
		case !slices.Contains(new, x):
			d.add("- %s %s", what, x)
		}
	}
}

func (d *differ) attributes(old, new *Schema) {
	for _, name := range union(attributeNames(old), attributeNames(new)) {
		o, n := find(old, name), find(new, name)
		switch {
		case o == nil:
			d.add("+ attribute %s (%s, %s)", name, n.Memory, n.typeSummary())
			continue
		case n == nil:
			d.add("- attribute %s", name)
			continue
		}
		change := func(field string, from, to any) {
			d.add("~ attribute %s: %s %v -> %v", name, field, from, to)
		}
		if o.Memory != n.Memory {
			change("memory", o.Memory, n.Memory)
		}
		switch {
		case o.Type == TypeJSONSchema && n.Type == TypeJSONSchema:
			if !bytes.Equal(o.JSONSchema, n.JSONSchema) {
				d.add("~ attribute %s: json_schema changed", name)
			}
		case o.typeDetail() != n.typeDetail():
			change("type", o.typeDetail(), n.typeDetail())
		}
		if o.Cardinality != n.Cardinality {
			change("cardinality", o.Cardinality, n.Cardinality)
		}
		if o.Conflict != n.Conflict {
			change("conflict", o.Conflict, n.Conflict)
		}
		if o.Sensitive != n.Sensitive {
			change("sensitive", o.Sensitive, n.Sensitive)
		}
		if o.Retention != n.Retention {
			change("retention", orNone(o.Retention), orNone(n.Retention))
		}
		if o.Promote.String() != n.Promote.String() {
			change("promote", o.Promote.String(), n.Promote.String())
		}
		if o.Inferred != n.Inferred {
			change("inferred", o.Inferred, n.Inferred)
		}
		if o.Future != n.Future {
			change("future", futureString(o.Future), futureString(n.Future))
		}
		if o.Description != n.Description {
			d.add("~ attribute %s: description changed", name)
		}
		if !slices.Equal(o.Aliases, n.Aliases) {
			change("aliases", listOrNone(o.Aliases), listOrNone(n.Aliases))
		}
	}
}

func (d *differ) migrations(old, new *Schema) {
	byName := func(s *Schema, name string) *Migration {
		for _, m := range s.Migrations {
			if m.Name == name {
				return m
			}
		}
		return nil
	}
	var oldOrder, newOrder []string
	for _, m := range old.Migrations {
		if byName(new, m.Name) != nil {
			oldOrder = append(oldOrder, m.Name)
		}
	}
	for _, n := range new.Migrations {
		o := byName(old, n.Name)
		if o == nil {
			d.add("+ migration %s (%s)", n.Name, n.summary())
			continue
		}
		newOrder = append(newOrder, n.Name)
		if o.summary() != n.summary() {
			d.add("~ migration %s: %s -> %s", n.Name, o.summary(), n.summary())
		}
		for _, t := range union(mapKeys(o.Transforms), mapKeys(n.Transforms)) {
			if ot, nt := o.Transforms[t], n.Transforms[t]; ot != nt && ot != "" && nt != "" {
				d.add("~ migration %s: transform %s: %s -> %s", n.Name, t, ot, nt)
			}
		}
		if ou, nu := untilString(o), untilString(n); ou != nu {
			d.add("~ migration %s: dual_read_until %s -> %s", n.Name, ou, nu)
		}
	}
	for _, o := range old.Migrations {
		if byName(new, o.Name) == nil {
			d.add("- migration %s", o.Name)
		}
	}
	if !slices.Equal(oldOrder, newOrder) {
		d.add("~ migration order: %s -> %s", strings.Join(oldOrder, ", "), strings.Join(newOrder, ", "))
	}
}

// typeSummary is the short form of the type: "string", "enum", "ref account".
func (a *Attribute) typeSummary() string {
	if a.Type == TypeRef {
		return "ref " + a.Ref
	}
	return a.Type
}

// typeDetail is the type with its enum values.
func (a *Attribute) typeDetail() string {
	if a.Type == TypeEnum {
		vs := make([]string, len(a.Enum))
		for i, v := range a.Enum {
			vs[i] = string(v)
		}
		return "enum [" + strings.Join(vs, ", ") + "]"
	}
	return a.typeSummary()
}

// summary describes what a migration does: "rename tier -> plan".
func (m *Migration) summary() string {
	switch m.Kind {
	case KindRename:
		return fmt.Sprintf("rename %s -> %s", m.From, first(m.To))
	case KindRetype:
		return "retype " + m.From
	case KindSplit:
		return fmt.Sprintf("split %s -> %s", m.From, strings.Join(m.To, ", "))
	}
	return m.Kind
}

func untilString(m *Migration) string {
	if m.DualReadUntil == nil {
		return "(none)"
	}
	return sgam.FormatTime(*m.DualReadUntil)
}

func find(s *Schema, name string) *Attribute {
	for _, a := range s.Attributes {
		if a.Name == name {
			return a
		}
	}
	return nil
}

func union(a, b []string) []string {
	out := append(slices.Clone(a), b...)
	slices.Sort(out)
	return slices.Compact(out)
}

func orNone(s string) string {
	if s == "" {
		return "(none)"
	}
	return s
}

// futureString renders an attribute's future as a schema file writes it,
// "(default)" when it has none of its own.
func futureString(d time.Duration) string {
	if d == 0 {
		return "(default)"
	}
	return formatTTL(d)
}

func listOrNone(ss []string) string {
	if len(ss) == 0 {
		return "(none)"
	}
	return "[" + strings.Join(ss, ", ") + "]"
}

// emptySchema is what an empty file parses to.
func emptySchema() *Schema {
	s := &Schema{
		Retention:   map[string]Retention{},
		SourceRanks: slices.Clone(defaultSourceRanks),
		MemoryTypes: slices.Clone(builtinMemoryTypes),
	}
	s.index()
	return s
}

// Example returns a commented schema for a customer-support agent that
// shows every feature of the format; `sgam schema init` writes it as a
// starting point. Its migrations are commented out, since a new store has
// nothing to migrate.
func Example() []byte { return []byte(example) }

const example = `# sgam schema for a customer-support agent.
#
# A schema says what the agent may remember: the attributes a subject (a
# customer, an account) can have, the type of their values, and how the
# store treats them. Facts that do not fit are rejected with the reason,
# never half-written. Change this file and apply it as a new version; the
# old version stays on the facts written under it.
name: support-agent

# Retention classes: how long the facts and episodes of each class are
# kept. A TTL is a whole number of hours (h), days (d), weeks (w) or years
# (y, 365 days), or forever.
retention:
  session: 30d          # conversation detail
  standard: 2y          # the customer record
  legal_hold: forever   # what the law says we keep

# The class of episodes (messages, tool results, events) that name none.
# Leave it out to keep such episodes forever.
episode_retention: session

# When two sources give different values at the same instant under
# conflict: prefer_source, the source kind listed first wins. This is the
# default order; kinds not listed rank below all of these.
source_ranks: [user_confirmed, tool, event, message, inferred]

# Memory types group attributes for reads ("the customer's preferences").
# preference, profile, task, account, compliance, relation and event are
# built in; add your own.
memory_types: [billing]

# The entity types a ref attribute may point at. Leave it out to allow any.
entities: [customer, account]

# Each attribute: memory (required), and either type or json_schema
# (required). type is string, integer, number, boolean, date ("2026-06-30"),
# datetime (RFC 3339 with an offset), {enum: [...]} or {ref: entity}.
# cardinality: one (default; a new value replaces the old) or many (a set).
# conflict, for two different values at the same instant: reject (default),
# prefer_source, latest_recorded or review. sensitive: true means only a
# user_confirmed source makes it a fact. retention: a class above.
# aliases: old names that still resolve to this attribute. For what a model
# extracts from episodes: inferred: true accepts a value its quote implies
# without stating it (a date from "next Friday"), and future: 90d a value
# that starts up to 90 days after its episode (default 2 days).
attributes:
  full_name:
    memory: profile
    type: string
    conflict: latest_recorded   # a later correction replaces the old name
    retention: standard
    description: The customer's name as they gave it.

  email:
    memory: profile
    type: string
    retention: standard
    description: The address to write to the customer.

  preferred_language:
    memory: preference
    type: {enum: [en, de, fr, es, nb]}
    conflict: prefer_source     # the customer's own word beats an inference
    description: The language to answer in, as an ISO 639-1 code.

  email_opt_in:
    memory: preference
    type: boolean
    sensitive: true             # only the customer's confirmation counts
    retention: legal_hold
    description: Whether the customer agreed to marketing email.

  date_of_birth:
    memory: profile
    type: date
    sensitive: true
    conflict: review            # two different birthdays go to a person
    retention: standard
    description: Needed to verify identity on the phone.

  passport_deadline:
    memory: task
    type: date
    aliases: [passport_due]     # the old name still resolves here
    description: When the customer's passport must be renewed.

  open_tickets:
    memory: task
    type: integer
    conflict: latest_recorded
    description: How many support tickets the customer has open.

  lifetime_value:
    memory: account
    type: number
    conflict: latest_recorded
    description: Revenue from the customer so far, in EUR.

  plan:
    memory: account
    type: {enum: [free, pro, enterprise]}
    aliases: [tier]
    description: The subscription plan.

  account:
    memory: relation
    type: {ref: account}        # a subject id such as acct-42
    description: The account the customer belongs to.

  allergies:
    memory: profile
    type: string
    cardinality: many           # each allergy is a member with its own validity
    sensitive: true
    description: Allergies to mention when booking travel or meals.

  last_contact:
    memory: event
    type: datetime
    retention: session
    description: When the customer last reached support.

  address:
    memory: profile
    retention: standard
    description: Postal address; city and country are required.
    json_schema:
      type: object
      properties:
        street: {type: string}
        city: {type: string, minLength: 1}
        zip: {type: string, pattern: "^[0-9]{4,5}$"}
        country: {type: string, pattern: "^[A-Z]{2}$"}
      required: [city, country]
      additionalProperties: false

  gdpr_consent_at:
    memory: compliance
    type: datetime
    conflict: reject            # the default, spelled out
    retention: legal_hold
    description: When the customer consented to processing of their data.

# Migrations carry stored facts to a new version of this schema; sgam
# migrate applies them in order, writing new fact versions and keeping the
# old ones in history. A transform is a CEL expression over value, the old
# value. Uncomment and adapt when you change an attribute:
#
# migrations:
#   - name: tier-to-plan
#     rename: {from: tier, to: plan}
#     dual_read_until: 2027-01-31T00:00:00Z   # reads of tier resolve to plan until then
#   - name: tickets-to-integer
#     retype: {attribute: open_tickets, transform: "int(value)"}
#   - name: split-contact
#     split:
#       from: contact           # "Ada Lovelace <ada@example.com>"
#       into:
#         full_name: "value.split(' <')[0]"
#         email: "value.split('<')[1].split('>')[0]"
`
