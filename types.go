package sgam

import (
	"encoding/json"
	"time"
)

// DefaultTenant is the tenant used when a caller names none (CLI, replay).
const DefaultTenant = "default"

// Key names one attribute of one subject within one tenant: the unit the
// temporal rules are applied to.
type Key struct {
	Tenant    string `json:"tenant"`
	Subject   string `json:"subject"`
	Attribute string `json:"attribute"`
	// Member is the canonical JSON of one member of a set (an attribute of
	// cardinality many): each member is a key of its own, with its own
	// windows (DESIGN 2.2). Empty for a single-valued attribute.
	Member string `json:"member,omitempty"`
}

func (k Key) String() string {
	if k.Member != "" {
		return k.Tenant + "/" + k.Subject + "." + k.Attribute + "[" + k.Member + "]"
	}
	return k.Tenant + "/" + k.Subject + "." + k.Attribute
}

// Fact is one stored row: one version of one value of one key, valid over
// [ValidFrom, ValidTo) and believed over [RecordedAt, RetractedAt). A nil
// ValidTo or RetractedAt is open. A tombstone row records that the key has
// no value over its valid window (a retraction, "I no longer prefer X");
// reads treat it as no value, History shows it.
type Fact struct {
	ID            int64           `json:"fact_id"`
	Tenant        string          `json:"tenant"`
	Subject       string          `json:"subject"`
	Attribute     string          `json:"attribute"`
	Member        json.RawMessage `json:"member,omitempty"` // the set member this row opens or closes; empty for a single value
	Value         json.RawMessage `json:"value"`            // canonical JSON; null for a tombstone
	Tombstone     bool            `json:"tombstone,omitempty"`
	ValidFrom     time.Time       `json:"valid_from"`
	ValidTo       *time.Time      `json:"valid_to"`
	RecordedAt    time.Time       `json:"recorded_at"`
	RetractedAt   *time.Time      `json:"retracted_at"`
	Supersedes    *int64          `json:"supersedes"` // the row this one replaced or shortened
	Sources       []string        `json:"sources"`    // supporting episode ids, oldest link first
	SchemaVersion int             `json:"schema_version"`
}

// Key returns the fact's key.
func (f Fact) Key() Key {
	return Key{Tenant: f.Tenant, Subject: f.Subject, Attribute: f.Attribute, Member: string(f.Member)}
}

// Episode is a raw input as captured: a message, a tool result, a business
// event. Facts point at the episodes that support them.
type Episode struct {
	Tenant         string          `json:"tenant"`
	ID             string          `json:"episode_id"`
	Session        string          `json:"session"`
	Kind           string          `json:"kind"`
	Content        string          `json:"content"`
	OccurredAt     time.Time       `json:"occurred_at"`
	RecordedAt     time.Time       `json:"recorded_at"` // set by the store
	Metadata       json.RawMessage `json:"metadata,omitempty"`
	IdempotencyKey string          `json:"idempotency_key,omitempty"`
	// Retention is the episode's retention class (declared in the schema);
	// empty takes the schema's episode_retention, or keeps it forever.
	Retention string `json:"retention,omitempty"`
	// Subjects are ids of the subjects the episode is about, as the caller
	// knows them: a hint for extraction, which shows their stored values
	// to the model. At most MaxEpisodeSubjects.
	Subjects []string `json:"subjects,omitempty"`
}

// MaxSubjectsLookup bounds the ids of one FactReader.Subjects call.
const MaxSubjectsLookup = 512

// MaxNamesLookup bounds the names of one FactReader.SubjectsNamed call: a
// text's runs of words (words.Names) beyond it are not looked up.
const MaxNamesLookup = 2048

// AliasAttribute is the attribute every tenant has, with a schema or
// without: the other names a subject goes by ("Mira Chen", "Dr. Lind",
// "the CFO"), a set of strings, each stored in the form words.Name gives
// (lowercase words, single spaces) so that a text that spells the name
// differently still finds it. Extraction and recall find subjects by
// these names (FactReader.SubjectsNamed) as well as by their ids.
const AliasAttribute = "alias"

// MaxAliasBytes bounds an alias in its stored form.
const MaxAliasBytes = 200

// NamedSubject is a subject a name in a text is an alias of.
type NamedSubject struct {
	Name    string `json:"name"` // in the form of words.Name
	Subject string `json:"subject"`
}

// MaxAttributesLookup bounds the attributes FactReader.Attributes returns.
const MaxAttributesLookup = 256

// MaxEpisodeSubjects bounds an episode's subjects hint.
const MaxEpisodeSubjects = 32

// MaxFactID is the largest fact id: 2^53-1, so that ids survive JSON
// readers that hold numbers as doubles.
const MaxFactID = 1<<53 - 1

// KindUnknown is the kind of a placeholder episode, created when a write
// names a source episode that was not captured yet. Adding the episode later
// fills the placeholder in.
const KindUnknown = "unknown"

// KindMessage is the kind given to an episode that names none.
const KindMessage = "message"

// Assertion states that Key has Value from ValidFrom on, on the evidence of
// the episode Source.
type Assertion struct {
	Key       Key
	Value     json.RawMessage
	ValidFrom time.Time
	Source    string
}

// Retraction states that Key has no value from At on ("I no longer prefer
// X"), on the evidence of the episode Source. It is stored as a tombstone.
// On a set, Value names the member to remove.
type Retraction struct {
	Key    Key
	At     time.Time
	Source string
	Value  json.RawMessage
}

// At selects the two time axes of a read. A zero AsOf or KnownAt means now.
type At struct {
	AsOf    time.Time // valid time: what was true in the world at this instant
	KnownAt time.Time // transaction time: as the store believed it at this instant
}

// WriteResult is the outcome of an Assert or Retract: the row that now
// holds the written value at its valid_from. NoChange reports an idempotent
// repeat: the row already existed and only gained the source as evidence.
// Kept reports that conflict policy prefer_source kept the existing row
// (Fact), from a higher-ranked source, and wrote nothing. Pending reports
// that the value was held back as a candidate (conflict policy review, or a
// sensitive attribute from a source that is not user_confirmed): nothing
// was written to the facts and Fact is nil.
type WriteResult struct {
	Fact     *Fact      `json:"fact"`
	NoChange bool       `json:"no_change,omitempty"`
	Kept     bool       `json:"kept,omitempty"`
	Pending  *Candidate `json:"pending,omitempty"`
}

// Candidate is a value held back from becoming a fact until someone
// confirms or dismisses it.
type Candidate struct {
	ID        string          `json:"pending_id"`
	Tenant    string          `json:"tenant"`
	Subject   string          `json:"subject"`
	Attribute string          `json:"attribute"`
	Member    json.RawMessage `json:"member,omitempty"`
	Value     json.RawMessage `json:"value"`
	ValidFrom time.Time       `json:"valid_from"`
	Source    string          `json:"source"`
	// Reason is ReasonReview, ReasonSensitive or ReasonRecurrence.
	Reason string `json:"reason"`
	// ConflictsWith is the believed fact the candidate disagrees with
	// (review: a different value at the same valid_from).
	ConflictsWith *int64    `json:"conflicts_with"`
	RecordedAt    time.Time `json:"recorded_at"`
	SchemaVersion int       `json:"schema_version"`
	// Signals counts, for a recurrence signal, the consistent signals
	// from distinct episodes so far, this one included.
	Signals int `json:"signals,omitempty"`
}

// Key returns the key the candidate would be written to.
func (c Candidate) Key() Key {
	return Key{Tenant: c.Tenant, Subject: c.Subject, Attribute: c.Attribute, Member: string(c.Member)}
}

// Why a candidate is pending.
const (
	ReasonReview     = "review"     // a conflict under policy review
	ReasonSensitive  = "sensitive"  // a sensitive attribute from a source that is not user_confirmed
	ReasonRecurrence = "recurrence" // a signal of an attribute that becomes a fact after several (schema promote)
)

// KindUserConfirmed is the episode kind of a user's explicit confirmation:
// the only source that makes a sensitive attribute a fact directly.
const KindUserConfirmed = "user_confirmed"

// PendingQuery selects a tenant's pending candidates, oldest first.
type PendingQuery struct {
	Tenant  string
	Subject string // optional
	Limit   int    // default 100, at most 10,000
}

// Check validates q and returns it with the default limit filled in.
func (q PendingQuery) Check() (PendingQuery, error) {
	eq, err := EpisodeQuery{Tenant: q.Tenant, Limit: q.Limit}.Check()
	if err != nil {
		return q, err
	}
	if q.Subject != "" {
		if err := CheckSubject(q.Subject); err != nil {
			return q, err
		}
	}
	q.Limit = eq.Limit
	return q, nil
}

// MigrateOptions configure Migrate.
type MigrateOptions struct {
	BatchKeys int // subjects per transaction; default 500
	// Progress, when set, is called after every transaction.
	Progress func(MigrationProgress)
}

// MigrationProgress is how far one migration has got.
type MigrationProgress struct {
	// Tenant is the tenant whose own schema declares the migration; empty
	// for the store default's, run over the tenants it serves.
	Tenant    string
	Migration string
	Done      int // subjects migrated so far in this run
	Total     int // subjects that needed it when the run began
}

// MigrationReport is what Migrate did for one migration of one schema.
type MigrationReport struct {
	// Tenant is the tenant whose own schema declares the migration; empty
	// for the store default's, run over the tenants it serves.
	Tenant string `json:"tenant,omitempty"`
	Name   string `json:"name"`
	Kind   string `json:"kind"` // rename, retype, split
	// Since is the schema version that declared the migration; migrated
	// rows carry the version in force when they were written.
	Since    int           `json:"since"`
	Subjects int           `json:"subjects"` // subjects migrated by this run
	Rows     int           `json:"rows"`     // fact rows written
	Elapsed  time.Duration `json:"elapsed_ns"`
}

// ForgetRequest names what Forget deletes within Tenant: exactly one of
// Subject, Episode and All.
type ForgetRequest struct {
	Tenant  string
	Subject string
	Episode string
	All     bool
	Actor   string // who asked, for the audit; default "sgam"
}

// Receipt is the proof of a Forget or an expiry: who, when, what kind, how
// many rows and their ids. It never holds deleted content: a forgotten
// subject appears only as its digest (Lifecycle.SubjectDigest).
type Receipt struct {
	ID     string    `json:"receipt_id"`
	Tenant string    `json:"tenant"`
	Actor  string    `json:"actor"`
	At     time.Time `json:"at"`
	// Kind is "subject", "episode", "tenant" or "expire".
	Kind string `json:"kind"`
	// Target is the digest of a forgotten subject (an HMAC keyed by the
	// store's secret, see Lifecycle.SubjectDigest), a forgotten episode's
	// id, or empty.
	Target          string   `json:"target"`
	FactsDeleted    int      `json:"facts_deleted"`
	FactsMended     int      `json:"facts_mended"`   // believed neighbours re-inserted with a mended window
	LinksRemoved    int      `json:"links_removed"`  // evidence links removed from facts that keep other evidence
	FactsRetained   int      `json:"facts_retained"` // facts kept by their attribute's retention after their episodes went
	EpisodesDeleted int      `json:"episodes_deleted"`
	PendingDeleted  int      `json:"pending_deleted"`
	FactIDs         []int64  `json:"fact_ids"`    // deleted fact rows
	EpisodeIDs      []string `json:"episode_ids"` // deleted episodes
}

// SchemaVersion is one applied version of a tenant's schema, or of the
// store-wide default.
type SchemaVersion struct {
	// Tenant is the tenant whose own schema this is; empty, with
	// StoreDefault set, for the store-wide default.
	Tenant       string          `json:"tenant,omitempty"`
	StoreDefault bool            `json:"store_default,omitempty"`
	Version      int             `json:"version"` // 0: no schema, every write permitted
	Hash         string          `json:"hash,omitempty"`
	AppliedAt    time.Time       `json:"applied_at"`
	Body         json.RawMessage `json:"schema,omitempty"` // canonical JSON of the schema file
	// Diff lists the changes from the previous version (ApplySchema only).
	Diff []string `json:"diff,omitempty"`
}

// Trace is the provenance of a fact: Chain[0] is the fact itself, each next
// entry the row it superseded, and Episodes the source episodes of every row
// in the chain, with their content.
type Trace struct {
	Chain    []Fact    `json:"chain"`
	Episodes []Episode `json:"episodes"`
}

// EpisodeQuery selects episodes of one tenant, oldest first.
type EpisodeQuery struct {
	Tenant  string
	Session string // optional
	Limit   int    // default 100, at most 10,000
	// Since and Before, when set, select only episodes that occurred at
	// or after Since, and before Before.
	Since  time.Time
	Before time.Time
	// Latest selects the latest Limit episodes rather than the first
	// (still listed oldest first).
	Latest bool
}

// Check validates q and returns it with the default limit filled in.
func (q EpisodeQuery) Check() (EpisodeQuery, error) {
	if err := CheckTenant(q.Tenant); err != nil {
		return q, err
	}
	switch {
	case q.Limit == 0:
		q.Limit = 100
	case q.Limit < 0 || q.Limit > 10000:
		return q, Errorf(Invalid, "limit", "must be between 1 and 10000, not %d", q.Limit)
	}
	var err error
	if !q.Since.IsZero() {
		if q.Since, err = CheckTime("since", q.Since); err != nil {
			return q, err
		}
	}
	if !q.Before.IsZero() {
		if q.Before, err = CheckTime("before", q.Before); err != nil {
			return q, err
		}
	}
	return q, nil
}

// Violation is a broken invariant found by Check.
type Violation struct {
	Rule      string  `json:"rule"`
	Tenant    string  `json:"tenant,omitempty"`
	Subject   string  `json:"subject,omitempty"`
	Attribute string  `json:"attribute,omitempty"`
	FactIDs   []int64 `json:"fact_ids,omitempty"`
	Message   string  `json:"message"`
}

// Evidence links a fact row to a corroborating episode (a repeat of the
// same value at the same valid_from) since RecordedAt.
type Evidence struct {
	EpisodeID  string    `json:"episode_id"`
	RecordedAt time.Time `json:"recorded_at"`
}

// StoredFact is a fact row exactly as stored: the unit of lossless export
// and import. Source is the episode that asserted the row (empty only for
// rows written by a system actor), Evidence its corroborating links;
// Fact.Sources is the two together.
type StoredFact struct {
	Fact
	Source   string
	Evidence []Evidence
	// Actor names the system actor that keeps a row with no evidence
	// episode ("retention": its attribute's retention outlived its
	// episodes); empty otherwise.
	Actor string
}

// ImportBatch is a slice of an export applied in one transaction.
type ImportBatch struct {
	Episodes []Episode
	Facts    []StoredFact
}

// ImportStats counts what an Import wrote and what it found already present.
type ImportStats struct {
	Schemas         int `json:"schemas"`
	Episodes        int `json:"episodes"`
	Facts           int `json:"facts"`
	SchemasPresent  int `json:"schemas_present"`
	EpisodesPresent int `json:"episodes_present"`
	FactsPresent    int `json:"facts_present"`
}
