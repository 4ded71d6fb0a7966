// Package when reads what an English question asked of an agent's memory
// says about time ("what was Alice's title on June 2, 2026?", "what did we
// believe last week?") and turns it into instants on sgam's two axes: valid
// time (as_of: what was true in the world then) and transaction time
// (known_at: what the store believed then).
//
// Conventions:
//
//   - A phrase names a period (a day, a week, a month, a year) and stands
//     for the last microsecond of it: "on June 2, 2026" is
//     2026-06-02T23:59:59.999999, so whatever held at any moment of that day
//     up to its end is seen. An RFC 3339 timestamp stands for itself.
//   - "before X" and "prior to X" stand for the microsecond just before X
//     starts: "before June 3, 2026" is also 2026-06-02T23:59:59.999999.
//   - Instants are in now's location (callers pass UTC), to the
//     microsecond, as the stores keep them.
//   - A phrase read relative to now ("yesterday", "in May", "on June 2")
//     never lands after now: a period that has not ended yet is cut at now.
//     A date written in full is kept as written, future or not, because an
//     agent may ask about planned values.
//   - Parse never guesses. What it cannot read with certainty gives
//     nothing, and the question is answered at now: numeric dates other
//     than ISO 8601 ("6/2/2026" is June 2 or February 6), "may" that may be
//     the verb, a bare number, an impossible date ("June 31"), a shifted
//     day ("two days before June 3"), and ranges or approximations ("since
//     June 2", "between May 1 and May 3", "around June 2", "early June").
//     Those that name a period with both ends still give it, as
//     Found.Around: where to look for what was said, not when to read.
//
// When a question names several instants on one axis, the first one in
// the text counts.
//
// Mentions and AsksWhen are coarser: whether an episode says when
// something happened, and whether a question asks for a time; recall's
// ranking favours the first when the second holds.
package when
