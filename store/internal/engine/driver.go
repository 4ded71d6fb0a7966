package engine

import (
	"context"
	"fmt"

	"github.com/sgam-dev/sgam"
	"github.com/sgam-dev/sgam/store/internal/ledger"
	"github.com/sgam-dev/sgam/temporal"
)

// Driver is a storage technology under the engine: its transactions and
// the SQL that answers the engine's questions. It checks no input and
// decides nothing the other driver would decide the same way; the engine
// does that, once. Its errors reach the engine already mapped to
// *sgam.Error (unavailable, conflict, internal), once: a write's at the end
// of its transaction, a read's at the end of the read (each Reader method
// maps its error in one place, never statement by statement).
type Driver interface {
	Reader
	// Write runs fn in one write transaction scoped to tenant ("" for
	// work that spans tenants) and commits it when fn returns nil; any
	// error rolls it back. The driver may run fn again from the start
	// after a failure that is safe to retry (a serialization failure, a
	// lost connection before anything was sent): fn must not keep state
	// from one run to the next.
	Write(ctx context.Context, tenant string, fn func(Tx) error) error
	// Clock is the store's clock, for the instants that need no
	// transaction (default occurred_at, dual-read windows).
	Clock() sgam.Clock
	Close() error
}

// Reader answers reads outside a write transaction. A read that finds
// nothing answers found false, never an error.
type Reader interface {
	// Get returns the row of key that answers (at.AsOf, at.KnownAt): the
	// newest believed then among those starting by AsOf, if it still holds
	// at AsOf and is not a tombstone (nil otherwise). Zero instants are the
	// store's now.
	Get(ctx context.Context, key sgam.Key, at sgam.At) (*sgam.Fact, error)
	// Members returns the rows of key.Attribute (every member) holding a
	// value at (at.AsOf, at.KnownAt), ordered by member.
	Members(ctx context.Context, key sgam.Key, at sgam.At) ([]sgam.Fact, error)
	State(ctx context.Context, tenant, subject string, at sgam.At) ([]sgam.Fact, error)
	// Subjects returns those of ids that are subjects of believed rows,
	// in any order.
	Subjects(ctx context.Context, tenant string, ids []string) ([]string, error)
	// SubjectsNamed returns, in any order, the pairs (member, subject) of
	// the alias rows (attribute sgam.AliasAttribute) whose member is one of
	// members, that hold a value, believed at at.KnownAt, and either hold
	// at at.AsOf or are open in valid time (zero instants: now).
	SubjectsNamed(ctx context.Context, tenant string, members []string, at sgam.At) ([][2]string, error)
	// SubjectsFrom returns the subjects of rows sourced from episodes and
	// believed at knownAt, by subject.
	SubjectsFrom(ctx context.Context, tenant string, episodes []string, knownAt int64) ([]string, error)
	// FactsFrom returns the rows of subjects sourced from (or linked to)
	// episodes and recorded by knownAt, and the believed rows that start
	// where one of them ended, by fact id, at most limit (sgam.FactReader.FactsFrom).
	FactsFrom(ctx context.Context, tenant string, episodes, subjects []string, knownAt int64, limit int) ([]sgam.Fact, error)
	// Attributes returns the distinct attributes of a subject's rows, by
	// name, at most limit.
	Attributes(ctx context.Context, tenant, subject string, limit int) ([]string, error)
	// History returns every row of key (of every member when key.Member
	// is empty) by fact id.
	History(ctx context.Context, key sgam.Key) ([]sgam.Fact, error)
	// Trace returns the supersedes chain from factID and the episodes it
	// cites, from one snapshot; an empty chain when the tenant has no such
	// fact.
	Trace(ctx context.Context, tenant string, factID int64) (sgam.Trace, error)

	Episode(ctx context.Context, tenant, id string) (e sgam.Episode, found bool, err error)
	Episodes(ctx context.Context, q sgam.EpisodeQuery) ([]sgam.Episode, error)
	// Around returns the windows of the episodes at, as
	// sgam.Episodes.Around (each with a session, ids distinct and valid,
	// n and knownAt checked), but with each window's Before nearest
	// first, as its seek reads them: the engine puts them oldest first.
	Around(ctx context.Context, tenant string, at []sgam.Episode, n int, knownAt int64) (map[string]sgam.Window, error)
	Pending(ctx context.Context, q sgam.PendingQuery) ([]sgam.Candidate, error)
	Candidate(ctx context.Context, tenant, id string) (c sgam.Candidate, found bool, err error)
	Receipts(ctx context.Context, tenant string) ([]sgam.Receipt, error)
	// Stats counts a tenant's rows (sgam.Overview).
	Stats(ctx context.Context, tenant string) (sgam.TenantStats, error)

	// Extractions returns the records of an episode, oldest first.
	Extractions(ctx context.Context, tenant, episodeID string) ([]sgam.Extraction, error)
	// ExtractionByPrompt returns the newest record of a prompt digest
	// whose status is not failed.
	ExtractionByPrompt(ctx context.Context, tenant, digest string) (x sgam.Extraction, found bool, err error)
	// TokensSpent sums tokens in and out of a tenant's records recorded
	// at or after since.
	TokensSpent(ctx context.Context, tenant string, since int64) (int, error)
	// QueuedExtractions lists up to limit queued episodes of every
	// tenant due at dueBy or before, the earliest due first.
	QueuedExtractions(ctx context.Context, limit int, dueBy int64) ([]sgam.QueuedExtraction, error)
	// TokensPerDay is a tenant's budget, 0 when none is set.
	TokensPerDay(ctx context.Context, tenant string) (int, error)

	// SchemaHead returns the schema in force for tenant, "" for the
	// store default's head.
	SchemaHead(ctx context.Context, tenant string) (ledger.Head, error)
	// SchemaVersion returns the stored version h names, with its body and
	// its owner (Tenant, StoreDefault).
	SchemaVersion(ctx context.Context, h ledger.Head) (v sgam.SchemaVersion, found bool, err error)
	// SchemaVersions returns the versions owner applied ("" for the
	// default's), oldest first, with their bodies.
	SchemaVersions(ctx context.Context, owner string) ([]sgam.SchemaVersion, error)
	// SchemaOwners lists the tenants that applied a schema of their own.
	SchemaOwners(ctx context.Context) ([]string, error)
	// CountSubjects counts the subjects (tenant, subject) with rows q selects.
	CountSubjects(ctx context.Context, q ledger.MigrationQuery) (int, error)

	// Search ranks the tenant's episodes recorded by knownAt that contain
	// any of terms (words.Terms of the question), best first, at most
	// limit, scored by the index's relevance.
	Search(ctx context.Context, tenant string, terms []string, knownAt int64, limit int) ([]sgam.EpisodeHit, error)
	// Reindex rebuilds the search index of tenant's episodes (every
	// tenant's when "") in batches, as sgam.Admin.Reindex.
	Reindex(ctx context.Context, tenant string, progress func(done, total int)) (int, error)

	// EpisodesToEmbed lists up to limit episodes of every tenant with
	// content and no vector for model, by recorded_at (then tenant and
	// id).
	EpisodesToEmbed(ctx context.Context, model string, limit int) ([]sgam.Episode, error)
	// EmbeddingDims returns the dimension of tenant's vectors of model;
	// found is false when it has none.
	EmbeddingDims(ctx context.Context, tenant, model string) (dims int, found bool, err error)
	// Nearest ranks tenant's vectors of model whose episode was recorded
	// by knownAt against q (its norm qNorm, its dimension the stored
	// one), best first, at most limit, and returns their episodes with
	// the cosine as Score, scored and ordered as a Ranker does (a vector
	// of another dimension is passed over). An episode gone between the
	// ranking and the reading of the episodes is left out.
	Nearest(ctx context.Context, tenant, model string, q []float32, qNorm float64, knownAt int64, limit int) ([]sgam.EpisodeHit, error)

	// APIKey returns a key of any tenant by its id, with its hash.
	APIKey(ctx context.Context, id string) (k StoredKey, found bool, err error)
	// APIKeys lists a tenant's keys by created_at, then id.
	APIKeys(ctx context.Context, tenant string) ([]sgam.APIKey, error)

	Check(ctx context.Context) ([]sgam.Violation, error)
	Export(ctx context.Context, tenant string, episode func(sgam.Episode) error, fact func(sgam.StoredFact) error) error
	Compact(ctx context.Context) error
}

// Tx is one write transaction of a driver.
type Tx interface {
	// Instant fixes the transaction's instant on its first call and
	// returns it: the store clock's now, or later so that transaction time
	// never runs backwards (past the latest instant written, and past
	// atLeast, the recorded_at of a row the transaction will retract). A
	// later call with a greater atLeast than the fixed instant fails
	// Unavailable (clocks disagree; a retry fixes it).
	Instant(atLeast int64) (int64, error)
	FactTx
	EpisodeTx
	SchemaTx
	ForgetTx
	ImportTx
	EmbeddingTx
	KeyTx
	// MigrationRows takes, in key order, up to limit subjects after
	// cursor with rows q selects, locks their keys as writers do, and
	// returns those rows with their evidence.
	MigrationRows(q ledger.MigrationQuery, after ledger.Cursor, limit int) ([]ledger.MigrationRow, error)
}

// FactTx writes facts: the questions of a ledger.Batch, in order.
type FactTx interface {
	// LoadBatch takes the locks of b's keys, checks that b.Govs are still
	// the tenants' schemas (a *SchemaChanged when not; see CheckHeads),
	// deletes the confirmed candidate (NotFound when it is gone), draws
	// nIDs fact ids, fixes the instant and gives b every key's believed
	// rows (Batch.SetBelieved); PostgreSQL does it in one round trip.
	LoadBatch(b *ledger.Batch, nIDs int, confirm *sgam.Candidate) (nextID func() int64, now int64, err error)
	EpisodeKinds(refs []ledger.EpisodeRef) (map[ledger.EpisodeRef]string, error)
	// FindPending returns the id of a stored candidate identical to c, or "".
	FindPending(c sgam.Candidate) (string, error)
	// Signals returns the stored recurrence signals of a key (its keys
	// locked by LoadBatch), by valid_from.
	Signals(k sgam.Key) ([]sgam.Candidate, error)
	// FlushBatch writes b's outcome (placeholder episodes, evidence,
	// retractions, rows, actors) and the candidates it holds (b.Hold).
	// last tells that nothing else will be sent before commit, which a
	// driver may send with it.
	FlushBatch(b *ledger.Batch, now int64, last bool) error
	// ReadFact reads a written row back, with all its evidence.
	ReadFact(k sgam.Key, id int64) (sgam.Fact, error)
	DeletePending(tenant, id string) (found bool, err error)
}

// EpisodeTx captures episodes.
type EpisodeTx interface {
	// EpisodeByID returns an episode, locked until commit.
	EpisodeByID(tenant, id string) (sgam.Episode, bool, error)
	EpisodeByKey(tenant, idempotencyKey string) (sgam.Episode, bool, error)
	// InsertEpisode stores a new episode as given, RecordedAt included.
	InsertEpisode(e sgam.Episode) error
	// FillPlaceholder fills in a placeholder episode, keeping its
	// recorded_at.
	FillPlaceholder(e sgam.Episode) error
	// InsertExtraction stores an extraction record of an existing
	// episode; it goes when the episode goes.
	InsertExtraction(x sgam.Extraction) error
	// Extracted reports whether an episode has a usable (not failed)
	// extraction record.
	Extracted(tenant, id string) (bool, error)
	// QueueExtraction queues existing episodes at instant at, due at due
	// (again or'ed into an entry already queued, whose instants it sets);
	// the entries go when the episodes go.
	QueueExtraction(tenant string, ids []string, again bool, at, due int64) error
	// SettleQueued settles an episode's queue entry when a record of its
	// extraction commits at instant at: ended (the record is usable or gave
	// up) deletes it unless it asks for the episode again; otherwise it
	// is made due at at, if it was due later.
	SettleQueued(tenant, id string, ended bool, at int64) error
	// Dequeue deletes queue entries that are still as given (same
	// queued_at).
	Dequeue(q []sgam.QueuedExtraction) error
	// SetBudget sets a tenant's tokens per day (0: none).
	SetBudget(tenant string, tokensPerDay int) error
}

// SchemaTx reads and stores schema versions.
type SchemaTx interface {
	// CheckHeads verifies that heads (by tenant; "" for the store
	// default's) are the schemas in force, or returns a *SchemaChanged
	// with the ones that are. (LoadBatch checks a batch's itself.)
	CheckHeads(heads map[string]ledger.Head) error
	// LockSchemas serializes applying schemas.
	LockSchemas() error
	SchemaHead(tenant string) (ledger.Head, error)
	SchemaVersion(h ledger.Head) (sgam.SchemaVersion, error)
	InsertSchema(v sgam.SchemaVersion) error
}

// ForgetTx deletes for real. The engine decides what goes (ledger.Unsupport,
// ledger.PlanMend) and builds the receipts; the driver deletes.
type ForgetTx interface {
	// PrepareForget readies the transaction for deleting (SQLite: pages
	// zeroed, fact ids kept unique).
	PrepareForget() error
	// Secret returns the store's secret, creating it on first use.
	Secret() ([]byte, error)
	HasEpisode(tenant, id string) (bool, error)
	// ForgetSubject deletes every row of a subject (its keys locked), its
	// pending candidates and the episodes that supported them and support
	// nothing else.
	ForgetSubject(tenant, subject string) (Deleted, error)
	// ForgetTenant deletes every row of a tenant but its audit.
	ForgetTenant(tenant string) (Deleted, error)
	// CitingFacts locks the keys of the rows that cite any of episodes, as
	// source or evidence, then the episodes, and returns those rows.
	CitingFacts(tenant string, episodes []string) ([]Citing, error)
	// SetSupport changes the source and actor of rows, removing the link
	// of an episode promoted to source.
	SetSupport(tenant string, changes []SupportChange) error
	// Unlink deletes the evidence links to episodes.
	Unlink(tenant string, episodes []string) error
	// FactsByID returns the keys of fact rows, locking them (as they are
	// once locked).
	FactsByID(tenant string, ids []int64) ([]Doomed, error)
	// Believed returns the believed rows of keys (ID, windows, RecordedAt).
	Believed(tenant string, keys []sgam.Key) (map[sgam.Key][]temporal.Row, error)
	// DeleteFacts deletes fact rows of keys with their evidence, and clears
	// the pointers at them (supersedes within keys, a candidate's
	// conflicts_with). Internal when a row is gone.
	DeleteFacts(tenant string, ids []int64, keys []sgam.Key) error
	// Mend retracts each mend's row at now and inserts its copy over the
	// mended window (same value, source, actor, version and evidence;
	// supersedes the row).
	Mend(tenant string, mends []ledger.Mend, now int64) error
	DeletePendingOf(tenant string, episodes []string) (int, error)
	// DeleteEpisodes deletes episodes and returns the ids deleted.
	DeleteEpisodes(tenant string, ids []string) ([]string, error)
	// DeleteShowing deletes the extraction records of a tenant that hold
	// a copy of what any of episodes said (sgam.Extraction.ContextEpisodes),
	// of subjects' data (Subjects) or of the values of fact rows (by id,
	// ShownFacts): the records of those episodes themselves go with them
	// by a foreign key.
	DeleteShowing(tenant string, episodes, subjects []string, facts []int64) error
	// ForgetJobs deletes the extraction queue's job rows (River's, which
	// name an episode and outlive it) of episodes, with the forget or
	// after it commits; ForgetTenant deletes a tenant's.
	ForgetJobs(tenant string, episodes []string) error
	// ExpiredEpisodes lists up to limit episodes of scope whose class
	// (their own, else def) has a cutoff they are recorded at or before.
	ExpiredEpisodes(scope ledger.Scope, cuts []ledger.Cutoff, def string, limit int) ([]ledger.EpisodeRef, error)
	// ExpiredFacts lists up to limit fact rows of scope whose attribute
	// has a cutoff they are recorded at or before, by tenant and id.
	ExpiredFacts(scope ledger.Scope, cuts []ledger.Cutoff, limit int) ([]FactRef, error)
	InsertReceipt(rc sgam.Receipt) error
}

// EmbeddingTx stores and drops episode vectors.
type EmbeddingTx interface {
	// LockEmbeddings serializes the writers of tenant's vectors of model
	// until commit (SQLite's write lock holds everything already) and
	// returns their dimension; found is false when there are none.
	LockEmbeddings(tenant, model string) (dims int, found bool, err error)
	// PutEmbeddings stores vs under model, replacing the vectors of the
	// same tenant, model and episode, each only if its episode exists, has
	// content and, when RecordedAt is not 0, was recorded then; it
	// returns how many were stored.
	PutEmbeddings(model string, vs []Vector) (int, error)
	// DropEmbeddings deletes the vectors of every model but keep (all
	// when keep is ""), and returns how many.
	DropEmbeddings(keep string) (int, error)
}

// KeyTx stores API keys. Their table is store-wide: a key is looked up by
// its id before the tenant of the request is known.
type KeyTx interface {
	InsertKey(k StoredKey) error
	// RevokeKey sets the revoked_at of tenant's key id to at unless it
	// has one; found is false when tenant has no such key.
	RevokeKey(tenant, id string, at int64) (found bool, err error)
}

// Vector is a checked vector to store, with its norm.
type Vector struct {
	Tenant, EpisodeID string
	Values            []float32
	Norm              float64
	// RecordedAt is the episode's recorded_at the vector was made from
	// (0: any).
	RecordedAt int64
}

// ImportTx restores exported rows.
type ImportTx interface {
	ledger.ImportStore
	// LockKeys takes the locks of keys, as writes do, so that imports of
	// overlapping streams serialize on them.
	LockKeys(keys []sgam.Key) error
	// InsertFacts inserts rows exactly as exported, evidence and actors
	// included.
	InsertFacts(facts []sgam.StoredFact) error
	// Observe keeps the transaction clock from falling behind t, the
	// latest transaction time the import brought in.
	Observe(t int64) error
}

// Deleted is what ForgetSubject and ForgetTenant deleted.
type Deleted struct {
	FactIDs    []int64
	EpisodeIDs []string
	Pending    int
}

// Citing is a fact row that cites an episode being forgotten.
type Citing struct {
	Support    ledger.Support
	Key        sgam.Key
	Believed   bool
	RecordedAt int64
}

// SupportChange is a row's provenance after some of its episodes went.
// Promoted is the episode whose link became the source ("" when none).
type SupportChange struct {
	ID                      int64
	Source, Actor, Promoted string
}

// Doomed is a fact row to delete.
type Doomed struct {
	ID       int64
	Key      sgam.Key
	Believed bool
}

// FactRef names a fact row.
type FactRef struct {
	Tenant string
	ID     int64
}

// SchemaChanged ends a write whose ops were built under schema versions
// that are no longer in force; the engine runs it again under Heads, the
// ones that are.
type SchemaChanged struct {
	Heads map[string]ledger.Head
}

func (e *SchemaChanged) Error() string {
	return fmt.Sprintf("the schema of %d tenants changed during the write", len(e.Heads))
}
