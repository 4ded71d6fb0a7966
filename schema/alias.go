package schema

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/sgam-dev/sgam"
	"github.com/sgam-dev/sgam/words"
)

// alias is the built-in attribute sgam.AliasAttribute: every tenant has
// it, under a schema or without one. A schema may declare it to give it a
// description, sensitivity, retention or conflict policy of its own, but
// it stays a set of strings, each member a name in the form of words.Name.
var alias = &Attribute{
	Name:        sgam.AliasAttribute,
	Memory:      "profile",
	Description: `another name the subject goes by: a full name, a nickname, a trade name, a role such as "the CFO"`,
	Type:        TypeString,
	Cardinality: Many,
	Conflict:    Reject,
}

// Builtin returns the built-in attribute called name (sgam.AliasAttribute
// is the only one), as it governs a tenant that no schema serves.
func Builtin(name string) (*Attribute, bool) {
	if name == alias.Name {
		return alias, true
	}
	return nil, false
}

// All returns the schema's attributes in file order, then the built-in
// ones it does not declare: what a tenant under it may write.
func (s *Schema) All() []*Attribute {
	if _, declared := s.declared(alias.Name); declared {
		return s.Attributes
	}
	return append(s.Attributes[:len(s.Attributes):len(s.Attributes)], alias)
}

// AliasMember returns the stored form of a name (words.Name's form) as a
// member of the alias set: its canonical JSON. ok is false when no alias
// can have that form.
func AliasMember(name string) (member string, ok bool) {
	if name == "" || len(name) > sgam.MaxAliasBytes || !words.IsName(name) {
		return "", false
	}
	// Letters, digits and single spaces: nothing JSON escapes, so the
	// name in quotes is its canonical JSON.
	return `"` + name + `"`, true
}

// aliasValue is the canonical form of an alias: the name's words,
// lowercase, joined by single spaces (a JSON string in, one out).
func (a *Attribute) aliasValue(v json.RawMessage) (json.RawMessage, error) {
	var s string
	if err := json.Unmarshal(v, &s); err != nil {
		return nil, a.invalid("", "type", v)
	}
	name := words.Name(s)
	n := len(strings.Fields(name))
	switch {
	case n == 0:
		return nil, &sgam.Error{Code: sgam.Invalid, Field: "value", Rule: "name",
			Message: fmt.Sprintf("%s must be a name with a letter or digit; got %s", a.Name, abbreviate(v))}
	case n > words.MaxNameWords:
		return nil, &sgam.Error{Code: sgam.Invalid, Field: "value", Rule: "name",
			Message: fmt.Sprintf("%s is a name of at most %d words; got %d", a.Name, words.MaxNameWords, n)}
	case len(name) > sgam.MaxAliasBytes:
		return nil, &sgam.Error{Code: sgam.Invalid, Field: "value", Rule: "name",
			Message: fmt.Sprintf("%s is a name of at most %d bytes; got %d", a.Name, sgam.MaxAliasBytes, len(name))}
	}
	m, _ := AliasMember(name)
	return json.RawMessage(m), nil
}
