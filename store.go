package sgam

import (
	"context"
	"time"
)

// The store's capabilities come as role interfaces, so that a consumer
// depends on what it uses: Traverse on a FactReader and Schemas, an
// extraction worker on Episodes and FactWriter. The roles are split by who
// may hold them:
//
//   - Tenant-facing roles (Episodes, FactWriter, FactReader, Review,
//     Schemas, Lifecycle, Extractions, ExtractionQueue, Search, Overview,
//     Keys, VectorSearch): each method names its tenant in the value it
//     reads or writes (Key.Tenant, Episode.Tenant, the query's Tenant) or,
//     when it takes no such value, as the argument after ctx, and never
//     reads or writes another tenant's rows. (Keys.Authenticate finds a
//     key among every tenant's, but only by its secret.) A surface bound
//     to one tenant, such as the MCP server, holds only these.
//   - Store-wide roles for a process's workers (ExtractionDispatch,
//     Embeddings): they take every tenant's work, never for a tenant's
//     caller.
//   - The operator's Admin: store-wide operations over every tenant.
//
// Store is the union of every role but the optional vectors. Errors are
// *Error values: Invalid (naming the field) for bad input, NotFound,
// Conflict, Unavailable; a failed write leaves nothing half-written.

// Episodes captures and reads episodes.
type Episodes interface {
	// AddEpisode captures an episode. An empty ID gets a generated one, a
	// zero OccurredAt is now. Adding an identical episode again, or one with
	// the same IdempotencyKey and content, returns the stored one; a
	// different episode under the same ID or key is a Conflict. A placeholder
	// (kind "unknown", created by a write that named the episode first) is
	// filled in. A retention class must be one the tenant's schema declares.
	AddEpisode(ctx context.Context, e Episode) (Episode, error)
	// Episode returns one episode, or NotFound.
	Episode(ctx context.Context, tenant, id string) (Episode, error)
	// Episodes lists a tenant's episodes, oldest first.
	Episodes(ctx context.Context, q EpisodeQuery) ([]Episode, error)
	// Around returns, by id, for each of the episodes at (at most
	// MaxAroundLookup) that belongs to a session, the up to n (at most
	// MaxAround) episodes just before it in its session and just after
	// it (by occurred_at, then id), recorded by knownAt (zero: now),
	// oldest first: the turns of the conversation around it. Each is
	// read by its ID, Session and OccurredAt, as the store returned it
	// (its Tenant, when set, must be tenant), so that the store does not
	// read it again. One with no neighbour has no window.
	Around(ctx context.Context, tenant string, at []Episode, n int, knownAt time.Time) (map[string]Window, error)
}

// Window is the conversation around an episode (Episodes.Around).
type Window struct {
	Before, After []Episode
}

// Bounds of Episodes.Around.
const (
	MaxAroundLookup = 64
	MaxAround       = 8
)

// MaxFactsFrom bounds the rows FactReader.FactsFrom returns: an episode
// may be the source of a whole import.
const MaxFactsFrom = 1000

// FactWriter writes facts under the tenant's schema.
type FactWriter interface {
	// Assert writes a value under the rules of DESIGN 2.1: a row at the same
	// valid_from with the same value is an idempotent repeat (NoChange), with
	// a different value a Conflict; a row containing valid_from is retracted
	// and re-inserted closed at valid_from, the new row taking the rest of its
	// window; an assertion before every row ends at the next row. A source
	// episode that does not exist is created as a placeholder. On a set
	// attribute it adds the member, as Add. Concurrent Asserts are committed
	// together (group commit), each answered as if it ran alone.
	Assert(ctx context.Context, a Assertion) (WriteResult, error)
	// Retract asserts that the key has no value from r.At on: a tombstone row
	// under the same rules as Assert.
	Retract(ctx context.Context, r Retraction) (WriteResult, error)
	// AssertMany applies assertions in order in one transaction, with one
	// transaction time: all of them or, on the first error (its field
	// prefixed "assertions[i]"), none.
	AssertMany(ctx context.Context, as []Assertion) ([]WriteResult, error)
	// Add adds the member a.Value to a set (an attribute of cardinality
	// many). Invalid when the schema does not declare the attribute a set.
	Add(ctx context.Context, a Assertion) (WriteResult, error)
	// Remove removes the member r.Value of a set from r.At on: a tombstone
	// of that member.
	Remove(ctx context.Context, r Retraction) (WriteResult, error)
}

// FactReader reads facts at any pair of instants.
type FactReader interface {
	// Get returns the value of key at (at.AsOf, at.KnownAt), or nil when the
	// key had no value then (never asserted, or retracted). On a set it
	// fails with an Invalid error that errors.Is ErrSet: read its Members.
	Get(ctx context.Context, key Key, at At) (*Fact, error)
	// Members returns the members of a set (an attribute of cardinality
	// many) at (at.AsOf, at.KnownAt), one fact per member, ordered by member;
	// key.Member is ignored. On a single-valued attribute it returns what Get
	// would, as a list of zero or one.
	Members(ctx context.Context, key Key, at At) ([]Fact, error)
	// State returns every attribute of a subject that has a value at the
	// given instants, ordered by attribute.
	State(ctx context.Context, tenant, subject string, at At) ([]Fact, error)
	// Subjects returns those of ids (at most MaxSubjectsLookup) that are
	// subjects of believed facts of tenant, in the order given: how a
	// reader finds the known subjects a text names.
	Subjects(ctx context.Context, tenant string, ids []string) ([]string, error)
	// SubjectsNamed returns the subjects that names (in the form of
	// words.Name, at most MaxNamesLookup) are aliases of (AliasAttribute),
	// ordered as names, each name with every subject it names: an alias
	// counts when it was believed at at.KnownAt and holds either at
	// at.AsOf or still (its member is open), so that a name given today
	// finds the subject of a question about last year, and a name removed
	// since finds it only for the time it was held.
	SubjectsNamed(ctx context.Context, tenant string, names []string, at At) ([]NamedSubject, error)
	// SubjectsFrom returns the subjects of the facts whose source is one
	// of episodes (at most MaxSubjectsLookup) as believed at knownAt (zero:
	// now), by subject: the subjects a session's recent turns were about.
	SubjectsFrom(ctx context.Context, tenant string, episodes []string, knownAt time.Time) ([]string, error)
	// FactsFrom returns, in one read, the rows of subjects (at most
	// MaxSubjectsLookup) that one of episodes (at most MaxSubjectsLookup)
	// is a source of, by its own assertion or a corroborating link,
	// recorded by knownAt (zero: now), retracted since or not; and, for
	// each of them whose validity ended, the row of its key believed at
	// knownAt that starts where it ended (the value, or the tombstone,
	// that closed it). By fact id, at most MaxFactsFrom: what says which
	// of an episode's statements are no longer current, and why.
	FactsFrom(ctx context.Context, tenant string, episodes, subjects []string, knownAt time.Time) ([]Fact, error)
	// Attributes returns the attributes a subject has rows of (of any
	// time, retracted ones too), by name, at most MaxAttributesLookup: what
	// a reader without a schema can ask of a subject.
	Attributes(ctx context.Context, tenant, subject string) ([]string, error)
	// History returns every row of key, retracted rows and tombstones too,
	// in the order they were written.
	History(ctx context.Context, key Key) ([]Fact, error)
	// Trace returns the supersedes chain of a fact and its source episodes,
	// or NotFound when the tenant has no such fact.
	Trace(ctx context.Context, tenant string, factID int64) (Trace, error)
}

// Review settles the candidates a schema held back from becoming facts.
type Review interface {
	// Pending lists candidates held back from becoming facts.
	Pending(ctx context.Context, q PendingQuery) ([]Candidate, error)
	// Confirm makes a pending candidate a fact, from its own source and
	// with the confirming episode linked as further evidence; a different
	// value at the same valid_from gives way to it (retracted, kept in
	// history). NotFound when the tenant has no such candidate.
	Confirm(ctx context.Context, tenant, pendingID, episodeID string) (WriteResult, error)
	// Dismiss deletes a pending candidate.
	Dismiss(ctx context.Context, tenant, pendingID string) error
}

// Schemas are the tenants' schemas. Each tenant has its own version
// history; a tenant that never applied one is served by the store-wide
// default, which only the operator sets (ApplyDefaultSchema). A tenant's
// first version of its own follows the default version it was using, so
// its history reads the default's versions up to then, and its own after.
type Schemas interface {
	// Schema returns the schema in force for tenant: its own latest
	// version, else the default's (version 0: none, every write permitted).
	Schema(ctx context.Context, tenant string) (SchemaVersion, error)
	// ApplySchema parses a schema file (YAML or JSON) and stores it as the
	// tenant's next version, returning it with the diff from the one in
	// force before; a file equal to it stores nothing. dryRun only returns
	// what would be stored.
	ApplySchema(ctx context.Context, tenant string, file []byte, dryRun bool) (SchemaVersion, error)
	// SchemaHistory lists the versions that served tenant, oldest first:
	// the default's up to its first version of its own, then its own.
	SchemaHistory(ctx context.Context, tenant string) ([]SchemaVersion, error)
	// Relation reports whether tenant's schema declares attribute a
	// relation (type ref); governed is false when no schema serves the
	// tenant, and any attribute whose values are subject ids may be
	// followed.
	Relation(ctx context.Context, tenant, attribute string) (ref, governed bool, err error)
}

// Lifecycle deletes a tenant's memory for real, with proof.
type Lifecycle interface {
	// Forget deletes, for real, what r names within its tenant: a
	// subject's facts, an episode and the facts only it supports (mending
	// the windows of their neighbours), or the whole tenant. It returns a
	// receipt, also kept in the audit, that holds counts and ids but no
	// deleted content. Forgetting is not retracting: history goes too.
	Forget(ctx context.Context, r ForgetRequest) (Receipt, error)
	// Receipts lists a tenant's forget and expiry receipts, oldest first.
	Receipts(ctx context.Context, tenant string) ([]Receipt, error)
	// SubjectDigest is the Target a receipt of forgetting subject in
	// tenant carries: an HMAC keyed by a secret of the store, so that the
	// operator can find the receipts of a subject while a receipt alone
	// does not let anyone confirm a guessed subject id.
	SubjectDigest(ctx context.Context, tenant, subject string) (string, error)
}

// Overview counts a tenant's memory, for the inspector's first page. Its
// counts scan the tenant's rows: it is for people, not for a hot path.
type Overview interface {
	Stats(ctx context.Context, tenant string) (TenantStats, error)
}

// TenantStats are the counts of one tenant's memory.
type TenantStats struct {
	Subjects int `json:"subjects"` // subjects with a believed fact
	Facts    int `json:"facts"`    // believed fact rows, tombstones and closed windows included
	Episodes int `json:"episodes"`
	// Pending counts the candidates held for review (review, sensitive);
	// Signals the recurrence signals waiting to become facts.
	Pending int `json:"pending"`
	Signals int `json:"signals"`
	// Extractions counts the extraction records by status (done,
	// rejected, failed); Queued the episodes waiting in the queue.
	Extractions map[string]int `json:"extractions"`
	Queued      int            `json:"queued"`
	// RecentSubjects are the subjects of the latest believed facts, at
	// most MaxRecentSubjects, latest first.
	RecentSubjects []string `json:"recent_subjects"`
}

// MaxRecentSubjects bounds TenantStats.RecentSubjects.
const MaxRecentSubjects = 20

// Admin is the operator's: store-wide operations over every tenant.
type Admin interface {
	// SetBudget sets a tenant's extraction tokens per day (0: unlimited).
	SetBudget(ctx context.Context, tenant string, tokensPerDay int) error
	// DefaultSchema returns the store-wide default schema (version 0: none).
	DefaultSchema(ctx context.Context) (SchemaVersion, error)
	// ApplyDefaultSchema stores the next version of the default schema, as
	// ApplySchema does for a tenant. It serves every tenant without a
	// schema of its own.
	ApplyDefaultSchema(ctx context.Context, file []byte, dryRun bool) (SchemaVersion, error)
	// Migrate runs, for every tenant, the migrations its schema declares
	// (rename, retype, split), in order: values are written again as new
	// fact versions under the new representation through the write path,
	// and the old rows retracted in transaction time, so reads at a known_at
	// before the migration still see the old representation. It works in
	// transactions of opts.BatchKeys subjects: an interrupted run leaves
	// whole subjects migrated, and running it again finishes the rest (a
	// migrated row is never selected again).
	Migrate(ctx context.Context, opts MigrateOptions) ([]MigrationReport, error)
	// Expire deletes the episodes and facts whose retention, under their
	// tenant's schema, has run out at the store clock's now, with one
	// receipt per tenant touched.
	Expire(ctx context.Context) ([]Receipt, error)
	// Reindex rebuilds the full-text index of a tenant's episodes (every
	// tenant's when tenant is empty) from their content, in transactions of
	// a few thousand episodes, so that every episode stays searchable
	// while it runs; progress, when set, is told the episodes done of
	// total after each. It returns the episodes indexed.
	Reindex(ctx context.Context, tenant string, progress func(done, total int)) (int, error)
	// Compact reclaims the space of deleted rows so that deleted content is
	// gone from the files too (SQLite: checkpoint and VACUUM).
	Compact(ctx context.Context) error
	// Check verifies every invariant over the whole store, all tenants.
	Check(ctx context.Context) ([]Violation, error)
	// Export streams every row of a tenant (all tenants when tenant is
	// empty) exactly as stored, from one snapshot: episodes by tenant and id,
	// then facts by id.
	Export(ctx context.Context, tenant string, episode func(Episode) error, fact func(StoredFact) error) error
	// Import restores exported rows in one transaction, ids and both time
	// axes unchanged. Rows already present and identical are counted and
	// skipped, so an interrupted import can be run again; a different row
	// under a present id, or rows that would break an invariant, are a
	// Conflict and nothing of the batch is written.
	Import(ctx context.Context, b ImportBatch) (ImportStats, error)
	// ExportSchemas returns the stored schema versions an export of tenant
	// (every tenant when empty) carries: the store default's, then each
	// tenant's own, oldest first, with their bodies.
	ExportSchemas(ctx context.Context, tenant string) ([]SchemaVersion, error)
	// ImportSchema stores an exported schema version under its own number
	// and applied_at, in a transaction of its own, so that imported rows'
	// schema versions name the schemas they were written under. A version
	// already stored with the same hash is present (true, nothing
	// written); a different one under that number is a Conflict, as is a
	// version below the owner's latest that is not stored.
	ImportSchema(ctx context.Context, v SchemaVersion) (present bool, err error)
}

// Store is every capability of a store but the optional vectors
// (VectorSearch, Embeddings).
type Store interface {
	Episodes
	FactWriter
	FactReader
	Review
	Schemas
	Lifecycle
	Extractions
	ExtractionQueue
	ExtractionDispatch
	Search
	Overview
	Keys
	Admin
	Close() error
}

// Observer is told of every store operation when it ends: its name (the
// method, "Assert"), how long it took and its error (nil when it
// succeeded). A store calls it from the goroutine of the call, so it must be
// fast and safe for concurrent use.
type Observer interface {
	StoreOp(op string, elapsed time.Duration, err error)
}
