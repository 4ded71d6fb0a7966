package sqlite

import (
	"context"
	"database/sql"
	"strings"
)

// Multi-row statements. One INSERT of many rows costs little more than an
// INSERT of one, so the write path builds its rows in memory and writes
// them in chunks. Statements are prepared on the writer connection once per
// (kind, row count) and cached; they are used only under the writer lock.

type bulkKind int

const (
	bulkFacts bulkKind = iota
	bulkEvidence
	bulkEvidenceCopy
	bulkPlaceholders
	bulkRetract
	bulkLoad
	bulkActor
)

type bulkSpec struct {
	head, row, sep, tail string
	lead                 int // leading arguments shared by every chunk
	cols                 int // arguments per row
}

var bulkSpecs = map[bulkKind]bulkSpec{
	bulkFacts: {
		head: `INSERT INTO facts (fact_id, tenant, subject, attribute, member, value, valid_from, valid_to, recorded_at, retracted_at, supersedes, source, schema_version) VALUES `,
		row:  `(?,?,?,?,?,?,?,?,?,?,?,?,?)`, sep: ",", cols: 13,
	},
	bulkEvidence: {
		head: `INSERT INTO evidence (fact_id, tenant, episode_id, recorded_at) VALUES `,
		row:  `(?,?,?,?)`, sep: ",", tail: ` ON CONFLICT DO NOTHING`, cols: 4,
	},
	// Copy the evidence links of stored rows (column2) to new rows (column1),
	// keeping when each link was made.
	bulkEvidenceCopy: {
		head: `INSERT INTO evidence (fact_id, tenant, episode_id, recorded_at) SELECT m.column1, e.tenant, e.episode_id, e.recorded_at FROM (VALUES `,
		row:  `(?,?)`, sep: ",", tail: `) AS m JOIN evidence AS e ON e.fact_id = m.column2`, cols: 2,
	},
	bulkPlaceholders: {
		head: `INSERT INTO episodes (tenant, episode_id, kind, occurred_at, recorded_at) VALUES `,
		row:  `(?,?,'unknown',?,?)`, sep: ",", tail: ` ON CONFLICT DO NOTHING`, cols: 4,
	},
	// For each key (i, tenant, subject, attribute, member, tmin, tmax), its
	// believed rows from the one at or before tmin to the one after tmax:
	// when the key's open row starts at or before tmin, that row alone
	// (every other believed row ends before it), found by one probe of
	// facts_open; otherwise by three (the row at or before tmin, the rows
	// up to tmax, the row after it).
	bulkLoad: {
		head: `WITH k (i, tenant, subject, attribute, member, tmin, tmax) AS (VALUES `,
		row:  `(?,?,?,?,?,?,?)`, sep: ",",
		tail: `), o AS MATERIALIZED (
				SELECT k.i, f.fact_id, f.value, f.valid_from, f.valid_to, f.recorded_at, f.source, f.schema_version, f.actor,
					EXISTS (SELECT 1 FROM evidence e WHERE e.fact_id = f.fact_id)
				FROM k JOIN facts f INDEXED BY facts_open ON f.tenant = k.tenant AND f.subject = k.subject AND f.attribute = k.attribute AND f.member = k.member
				WHERE f.retracted_at IS NULL AND f.valid_to IS NULL AND f.valid_from <= k.tmin)
			SELECT * FROM o
			UNION ALL
			SELECT k.i, f.fact_id, f.value, f.valid_from, f.valid_to, f.recorded_at, f.source, f.schema_version, f.actor,
				EXISTS (SELECT 1 FROM evidence e WHERE e.fact_id = f.fact_id)
			FROM k JOIN facts f ON f.tenant = k.tenant AND f.subject = k.subject AND f.attribute = k.attribute AND f.member = k.member
			WHERE k.i NOT IN (SELECT i FROM o) AND f.retracted_at IS NULL
			  AND f.valid_from >= coalesce((SELECT p.valid_from FROM facts p
			        WHERE p.tenant = k.tenant AND p.subject = k.subject AND p.attribute = k.attribute AND p.member = k.member
			          AND p.retracted_at IS NULL AND p.valid_from <= k.tmin ORDER BY p.valid_from DESC LIMIT 1), k.tmin)
			  AND f.valid_from <= coalesce((SELECT n.valid_from FROM facts n
			        WHERE n.tenant = k.tenant AND n.subject = k.subject AND n.attribute = k.attribute AND n.member = k.member
			          AND n.retracted_at IS NULL AND n.valid_from > k.tmax ORDER BY n.valid_from LIMIT 1), k.tmax)`,
		cols: 7,
	},
	bulkActor: {
		head: `UPDATE facts SET actor = ? WHERE fact_id IN (`,
		row:  `?`, sep: ",", tail: `)`, lead: 1, cols: 1,
	},
	bulkRetract: {
		head: `UPDATE facts SET retracted_at = ? WHERE retracted_at IS NULL AND fact_id IN (`,
		row:  `?`, sep: ",", tail: `)`, lead: 1, cols: 1,
	},
}

type bulkKey struct {
	kind bulkKind
	rows int
}

// maxBulkRows keeps every statement well under SQLite's variable limit.
const maxBulkRows = 64

// bulkExec runs kind over rows (len(rows) is a multiple of the spec's
// cols) in chunks, with lead arguments first in each chunk, and returns the
// rows affected.
func (s *db) bulkExec(ctx context.Context, kind bulkKind, lead []any, rows []any) (int64, error) {
	spec := bulkSpecs[kind]
	var affected int64
	for len(rows) > 0 {
		n := min(len(rows)/spec.cols, maxBulkRows)
		st, err := s.bulkStmt(ctx, kind, n)
		if err != nil {
			return affected, err
		}
		args := rows[:n*spec.cols]
		if len(lead) > 0 {
			args = append(append(make([]any, 0, len(lead)+len(args)), lead...), args...)
		}
		res, err := st.ExecContext(ctx, args...)
		if err != nil {
			return affected, err
		}
		c, _ := res.RowsAffected()
		affected += c
		rows = rows[n*spec.cols:]
	}
	return affected, nil
}

func (s *db) bulkStmt(ctx context.Context, kind bulkKind, n int) (*sql.Stmt, error) {
	k := bulkKey{kind, n}
	if st := s.bulk[k]; st != nil {
		return st, nil
	}
	spec := bulkSpecs[kind]
	var b strings.Builder
	b.WriteString(spec.head)
	for i := range n {
		if i > 0 {
			b.WriteString(spec.sep)
		}
		b.WriteString(spec.row)
	}
	b.WriteString(spec.tail)
	st, err := s.w.PrepareContext(ctx, b.String())
	if err != nil {
		return nil, err
	}
	s.bulk[k] = st
	return st, nil
}
