package when

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// now is a Tuesday.
var now = time.Date(2026, 12, 1, 15, 4, 5, 0, time.UTC)

// spring is early in the year, so dates without a year roll back to 2025.
var spring = time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC)

// end is the last microsecond of the day y-m-d.
func end(y int, m time.Month, d int) time.Time {
	return time.Date(y, m, d, 23, 59, 59, 999999000, time.UTC)
}

type tcase struct {
	q       string
	now     time.Time // zero: now
	asOf    time.Time
	why     string
	knownAt time.Time
	ktWhy   string
	past    bool
}

var cases = []tcase{
	// Dates written in full.
	{q: "What was Alice's title on June 2, 2026?", asOf: end(2026, 6, 2), why: "on June 2, 2026", past: true},
	{q: "What is her title on 2 June 2026?", asOf: end(2026, 6, 2), why: "on 2 June 2026", past: true},
	{q: "title June 2nd, 2026?", asOf: end(2026, 6, 2), why: "June 2nd, 2026", past: true},
	{q: "title on 2026-06-02", asOf: end(2026, 6, 2), why: "on 2026-06-02", past: true},
	{q: "title 2026-06-02?", asOf: end(2026, 6, 2), why: "2026-06-02", past: true},
	{q: "title on the 2nd of June, 2026", asOf: end(2026, 6, 2), why: "on the 2nd of June, 2026", past: true},
	{q: "title on Monday, June 1, 2026", asOf: end(2026, 6, 1), why: "on Monday, June 1, 2026", past: true},
	{q: "title on june 2 2026", asOf: end(2026, 6, 2), why: "on june 2 2026", past: true},
	{q: "title as of June 2, 2026", asOf: end(2026, 6, 2), why: "as of June 2, 2026", past: true},
	{q: "title on or before June 2, 2026", asOf: end(2026, 6, 2), why: "on or before June 2, 2026", past: true},
	{q: "budget on June 2, 2030", asOf: end(2030, 6, 2), why: "on June 2, 2030"},
	{q: "budget in 2027", asOf: end(2027, 12, 31), why: "in 2027"},
	{q: "title in 2026", asOf: now, why: "in 2026"},                         // under way: cut at now
	{q: "title in December 2026", asOf: now, why: "in December 2026"},       // under way: cut at now
	{q: "title on December 1, 2026", asOf: now, why: "on December 1, 2026"}, // today: cut at now
	{q: "title in late 2026", asOf: now, why: "in late 2026"},
	// Month names and abbreviations.
	{q: "on Sept 3, 2025", asOf: end(2025, 9, 3), why: "on Sept 3, 2025", past: true},
	{q: "on sep 3 2025", asOf: end(2025, 9, 3), why: "on sep 3 2025", past: true},
	{q: "on Jan. 5, 2026", asOf: end(2026, 1, 5), why: "on Jan. 5, 2026", past: true},
	{q: "in DEC 2025", asOf: end(2025, 12, 31), why: "in DEC 2025", past: true},
	{q: "in February 2024", asOf: end(2024, 2, 29), why: "in February 2024", past: true},
	{q: "where did he live in March, 2025?", asOf: end(2025, 3, 31), why: "in March, 2025", past: true},
	{q: "what did we think on Friday about it", knownAt: end(2026, 11, 27), ktWhy: "what did we think on Friday", past: true},
	{q: "in June of 2025", asOf: end(2025, 6, 30), why: "in June of 2025", past: true},
	// Without a year: the latest such date by now.
	{q: "title on June 2", asOf: end(2026, 6, 2), why: "on June 2", past: true},
	{q: "title on June 2? 2025 was good", asOf: end(2026, 6, 2), why: "on June 2", past: true},
	{q: "title on June 2", now: spring, asOf: end(2025, 6, 2), why: "on June 2", past: true},
	{q: "title on February 29", now: spring, asOf: end(2024, 2, 29), why: "on February 29", past: true},
	{q: "title on December 1", asOf: now, why: "on December 1"}, // today: cut at now
	{q: "title in May", asOf: end(2026, 5, 31), why: "in May", past: true},
	{q: "title in May", now: spring, asOf: end(2025, 5, 31), why: "in May", past: true},
	{q: "title in December", asOf: now, why: "in December"},
	{q: "title in June 2, 2026", asOf: end(2026, 6, 2), why: "June 2, 2026", past: true},
	{q: "title during March?", asOf: end(2026, 3, 31), why: "during March", past: true},
	{q: "May I ask what happened in May?", asOf: end(2026, 5, 31), why: "in May", past: true},
	{q: "title in May 2026", asOf: end(2026, 5, 31), why: "in May 2026", past: true},
	{q: "title in 2025", asOf: end(2025, 12, 31), why: "in 2025", past: true},
	{q: "In 2025, who led it?", asOf: end(2025, 12, 31), why: "In 2025", past: true},
	// Weekdays: the latest strictly before today (a Tuesday).
	{q: "title on Monday", asOf: end(2026, 11, 30), why: "on Monday", past: true},
	{q: "title last Monday", asOf: end(2026, 11, 30), why: "last Monday", past: true},
	{q: "title on Tuesday", asOf: end(2026, 11, 24), why: "on Tuesday", past: true},
	{q: "title on wed?", asOf: end(2026, 11, 25), why: "on wed", past: true},
	{q: "title on SUNDAY", asOf: end(2026, 11, 29), why: "on SUNDAY", past: true},
	// Relative days and periods.
	{q: "title yesterday", asOf: end(2026, 11, 30), why: "yesterday", past: true},
	{q: "yesterday's title", asOf: end(2026, 11, 30), why: "yesterday", past: true},
	{q: "title the day before yesterday", asOf: end(2026, 11, 29), why: "the day before yesterday", past: true},
	{q: "title today", asOf: now, why: "today"},
	{q: "title as of today", asOf: now, why: "as of today"},
	{q: "title last week", asOf: end(2026, 11, 29), why: "last week", past: true},
	{q: "title last month", asOf: end(2026, 11, 30), why: "last month", past: true},
	{q: "title last month", now: spring, asOf: end(2026, 2, 28), why: "last month", past: true},
	{q: "title last year", asOf: end(2025, 12, 31), why: "last year", past: true},
	{q: "title 3 days ago", asOf: end(2026, 11, 28), why: "3 days ago", past: true},
	{q: "title a day ago", asOf: end(2026, 11, 30), why: "a day ago", past: true},
	{q: "title a week ago", asOf: end(2026, 11, 24), why: "a week ago", past: true},
	{q: "title two weeks ago", asOf: end(2026, 11, 17), why: "two weeks ago", past: true},
	{q: "title 3 months ago", asOf: end(2026, 9, 1), why: "3 months ago", past: true},
	{q: "title twelve months ago", asOf: end(2025, 12, 1), why: "twelve months ago", past: true},
	{q: "title a year ago", asOf: end(2025, 12, 1), why: "a year ago", past: true},
	{q: "title an hour ago"}, // hours are not read
	{q: "where I sat yesterday", asOf: end(2026, 11, 30), why: "yesterday", past: true},
	{q: "title yesterday on sun loungers", asOf: end(2026, 11, 30), why: "yesterday", past: true},
	// RFC 3339.
	{q: "title at 2026-06-02T10:00:00Z?", asOf: time.Date(2026, 6, 2, 10, 0, 0, 0, time.UTC), why: "at 2026-06-02T10:00:00Z", past: true},
	{q: "title at 2026-06-02T10:00:00+02:00", asOf: time.Date(2026, 6, 2, 8, 0, 0, 0, time.UTC), why: "at 2026-06-02T10:00:00+02:00", past: true},
	{q: "title as of 2026-06-02T10:00:00.1234567Z", asOf: time.Date(2026, 6, 2, 10, 0, 0, 123456000, time.UTC), why: "as of 2026-06-02T10:00:00.1234567Z", past: true},
	// Before: just before the start.
	{q: "title before June 3, 2026", asOf: end(2026, 6, 2), why: "before June 3, 2026", past: true},
	{q: "title before 2026-06-03", asOf: end(2026, 6, 2), why: "before 2026-06-03", past: true},
	{q: "title prior to 2026-06-03", asOf: end(2026, 6, 2), why: "prior to 2026-06-03", past: true},
	{q: "title before 2026", asOf: end(2025, 12, 31), why: "before 2026", past: true},
	{q: "title before May 2026", asOf: end(2026, 4, 30), why: "before May 2026", past: true},
	{q: "title before yesterday", asOf: end(2026, 11, 29), why: "before yesterday", past: true},
	{q: "title before last week", asOf: end(2026, 11, 22), why: "before last week", past: true},
	{q: "title before 2026-06-02T10:00:00Z", asOf: time.Date(2026, 6, 2, 9, 59, 59, 999999000, time.UTC), why: "before 2026-06-02T10:00:00Z", past: true},
	// Transaction time.
	{q: "title as we believed on June 4, 2026", knownAt: end(2026, 6, 4), ktWhy: "as we believed on June 4, 2026", past: true},
	{q: "title as believed on June 4", knownAt: end(2026, 6, 4), ktWhy: "as believed on June 4", past: true},
	{q: "title as we knew it on 2026-06-04", knownAt: end(2026, 6, 4), ktWhy: "as we knew it on 2026-06-04", past: true},
	{q: "what did we think on June 4 about the title?", knownAt: end(2026, 6, 4), ktWhy: "what did we think on June 4", past: true},
	{q: "title according to what we knew on June 4, 2026", knownAt: end(2026, 6, 4), ktWhy: "according to what we knew on June 4, 2026", past: true},
	{q: "title as recorded on June 4", knownAt: end(2026, 6, 4), ktWhy: "as recorded on June 4", past: true},
	{q: "title as recorded yesterday", knownAt: end(2026, 11, 30), ktWhy: "as recorded yesterday", past: true},
	{q: "title as we believed before June 5, 2026", knownAt: end(2026, 6, 4), ktWhy: "as we believed before June 5, 2026", past: true},
	{q: "what was X on June 2 as we believed on June 4", asOf: end(2026, 6, 2), why: "on June 2",
		knownAt: end(2026, 6, 4), ktWhy: "as we believed on June 4", past: true},
	{q: "title as we believed in May", knownAt: end(2026, 5, 31), ktWhy: "as we believed in May", past: true},
	{q: "title as we believed until June 4, 2026"}, // a range: no instant
	{q: "title as we believed today", knownAt: now, ktWhy: "as we believed today", past: true},
	// The first phrase of an axis counts.
	{q: "title on June 2, 2026 or on June 3, 2026", asOf: end(2026, 6, 2), why: "on June 2, 2026", past: true},
	{q: "title on February 30, 2026 or on June 3, 2026", asOf: end(2026, 6, 3), why: "on June 3, 2026", past: true},
	// History words without an instant.
	{q: "What was Alice's title?", past: true},
	{q: "What is Alice's title?"},
	{q: "Show the history of her title", past: true},
	{q: "Alice used to work where?", past: true},
	{q: "Where did Alice have lunch?", past: false},
	{q: "Where did Bob live before?", past: true},
	{q: "What title did Alice originally hold?", past: true},
	{q: "What was it at first?", past: true},
	{q: "Has her title changed?", past: true},
	{q: "Which titles were formerly hers?", past: true},
	{q: "Her previous title, previously?", past: true},
	{q: "How old is Alice?", past: true},
	{q: "Does Alice have a car?"},
	{q: "Is the wasp here?"},
}

func TestParse(t *testing.T) {
	for _, c := range cases {
		t.Run(c.q, func(t *testing.T) {
			n := now
			if !c.now.IsZero() {
				n = c.now
			}
			f := Parse(c.q, n)
			require.Equal(t, stamp(c.asOf), stamp(f.AsOf), "AsOf")
			require.Equal(t, c.why, f.AsOfWhy, "AsOfWhy")
			require.Equal(t, stamp(c.knownAt), stamp(f.KnownAt), "KnownAt")
			require.Equal(t, c.ktWhy, f.KnownAtWhy, "KnownAtWhy")
			require.False(t, f.BeforeMigration)
			require.Equal(t, c.past, f.Past, "Past")
		})
	}
}

// TestPeriod: the period a valid time phrase names, from its first
// microsecond to AsOf; none for an instant, "before X", a range or a
// transaction time phrase.
func TestPeriod(t *testing.T) {
	start := func(y int, m time.Month, d int) time.Time { return time.Date(y, m, d, 0, 0, 0, 0, time.UTC) }
	for q, want := range map[string]Period{
		"what did Mira paint in May 2023?":     {start(2023, 5, 1), end(2023, 5, 31)},
		"what did Mira paint on 25 May, 2023?": {start(2023, 5, 25), end(2023, 5, 25)},
		"title on June 2, 2026":                {start(2026, 6, 2), end(2026, 6, 2)},
		"budget in 2027":                       {start(2027, 1, 1), end(2027, 12, 31)},
		"title yesterday":                      {start(2026, 11, 30), end(2026, 11, 30)},
		"title in December":                    {start(2026, 12, 1), now}, // cut at now
		"title last week":                      {start(2026, 11, 23), end(2026, 11, 29)},
		// A part that ends with its month or year: that end, as certain.
		"in late February 2024":                       {start(2024, 2, 20), end(2024, 2, 29)},
		"at the end of 2025":                          {start(2025, 9, 1), end(2025, 12, 31)},
		"in the second half of 2022":                  {start(2022, 7, 1), end(2022, 12, 31)},
		"during the last week of August 2023":         {start(2023, 8, 25), end(2023, 8, 31)},
		"what was X at the end of last year?":         {start(2025, 9, 1), end(2025, 12, 31)},
		"title at the end of last month":              {start(2026, 11, 21), end(2026, 11, 30)},
		"title before June 3, 2026":                   {},
		"title at 2026-06-02T10:00:00Z":               {},
		"title between June 1, 2026 and June 3, 2026": {},
		"what did we believe on June 2, 2026":         {},
		"Is the wasp here?":                           {},
	} {
		f := Parse(q, now)
		require.Equal(t, stamp(want.Start), stamp(f.Period.Start), q)
		require.Equal(t, stamp(want.End), stamp(f.Period.End), q)
		require.Equal(t, want.IsZero(), f.Period.IsZero(), q)
		if !want.IsZero() {
			require.Equal(t, f.AsOf, f.Period.End, q)
			require.True(t, f.Period.Holds(want.Start) && f.Period.Holds(want.End), q)
			require.False(t, f.Period.Holds(want.Start.Add(-micro)) || f.Period.Holds(want.End.Add(micro)), q)
		}
	}
	require.False(t, Period{}.Holds(time.Time{}))
}

// TestAround: a phrase that gives no instant but names a period (a range
// with both ends, a part of a month or a year, a span counted from a day,
// a season of a year, "around X") says where to look, never what valid
// time to read at; an open range names none.
func TestAround(t *testing.T) {
	start := func(y int, m time.Month, d int) time.Time { return time.Date(y, m, d, 0, 0, 0, 0, time.UTC) }
	for q, want := range map[string]Period{
		"title between June 1, 2026 and June 3, 2026":                      {start(2026, 6, 1), end(2026, 6, 3)},
		"Where was John between August 11 and August 15 2023?":             {start(2023, 8, 11), end(2023, 8, 15)},
		"what happened between December 20 and January 5, 2026?":           {start(2025, 12, 20), end(2026, 1, 5)},
		"title from May to July 2025":                                      {start(2025, 5, 1), end(2025, 7, 31)},
		"title from June 1, 2026 to June 3, 2026":                          {start(2026, 6, 1), end(2026, 6, 3)},
		"Which tournament did Nate win in the beginning of November 2022?": {start(2022, 11, 1), end(2022, 11, 10)},
		"what did Mira say in early June?":                                 {start(2026, 6, 1), end(2026, 6, 10)},
		"in mid-June 2026":                                                 {start(2026, 6, 11), end(2026, 6, 20)},
		"in mid June 2026":                                                 {start(2026, 6, 11), end(2026, 6, 20)},
		"in the first half of September 2022":                              {start(2022, 9, 1), end(2022, 9, 15)},
		"in the second week of November":                                   {start(2026, 11, 8), end(2026, 11, 14)},
		"the week before June 3, 2026?":                                    {start(2026, 5, 27), end(2026, 6, 2)},
		"the puppy she got two weeks before August 11, 2023?":              {start(2023, 7, 28), end(2023, 8, 3)},
		"two days before June 3, 2026":                                     {start(2026, 6, 1), end(2026, 6, 1)},
		"a month after May 2, 2026":                                        {start(2026, 5, 3), end(2026, 6, 2)},
		"a month before March 31, 2026":                                    {start(2026, 2, 28), end(2026, 3, 30)},
		"two months before March 31, 2026":                                 {start(2026, 1, 31), end(2026, 2, 27)},
		"between early June and late July 2025":                            {start(2025, 6, 1), end(2025, 7, 31)},
		"in summer 2021":                                                   {start(2021, 6, 1), end(2021, 8, 31)},
		"in the fall of 2021":                                              {start(2021, 9, 1), end(2021, 11, 30)},
		"title around June 3, 2026":                                        {start(2026, 6, 3), end(2026, 6, 3)},
		"around the end of 2025":                                           {start(2025, 9, 1), end(2025, 12, 31)},
		"title around 2026-06-02T10:00:00Z":                                {},
		// An instant wins: its period is Period, and Around is zero.
		"in early June, on June 2, 2026": {},
		// Open ranges, winter (which of two years?), and no time at all.
		"title since June 2, 2026":                    {},
		"title until June 3, 2026":                    {},
		"title between June 3, 2026 and June 1, 2026": {},
		"title between June 1, 2026 or June 3, 2026":  {},
		"in winter 2021":                              {},
		"title before the end of 2025":                {},
		"title on or before the end of 2025":          {},
		"title prior to early June":                   {},
		"a week before mid-June 2025":                 {},
		"between February 29 and March 3, 2023":       {},
		"two hours before June 3, 2026":               {},
		"a few days before June 3, 2026":              {},
		"a couple of days before June 3, 2026":        {},
		"several weeks before June 3, 2026":           {},
		"many years after May 1, 2020":                {},
		"some days after May 1":                       {},
		"days before June 3, 2026":                    {},
		"some day before June 3, 2026":                {},
		"day before June 3, 2026":                     {start(2026, 6, 2), end(2026, 6, 2)},
		"3 weeks after May 1, 2026":                   {start(2026, 5, 16), end(2026, 5, 22)},
		"what did Mira do in May to July 2025?":       {},
		"in 2024 through 2025":                        {},
		"in June 2025 till August":                    {},
		"on Monday to Friday":                         {},
		"in 2000 to 3000 words":                       {},
		"title since early June 2026":                 {},
		"done by the end of 2025":                     {},
		"the end of the day":                          {},
		"in early 1000 words":                         {},
		"in the beginning of June 5":                  {},
		"Is the wasp here?":                           {},
	} {
		f := Parse(q, now)
		require.Equal(t, stamp(want.Start), stamp(f.Around.Start), q)
		require.Equal(t, stamp(want.End), stamp(f.Around.End), q)
		if q != "in early June, on June 2, 2026" {
			require.True(t, f.AsOf.IsZero(), "%q gave AsOf %s", q, f.AsOf)
			require.True(t, f.Period.IsZero(), q)
		}
	}
}

// TestPartsHaveBegun: a part of a month written without its year is the
// latest such part that has begun by now.
func TestPartsHaveBegun(t *testing.T) {
	june5 := time.Date(2026, 6, 5, 12, 0, 0, 0, time.UTC)
	f := Parse("what did we do in late June?", june5)
	require.Equal(t, end(2025, 6, 30), f.AsOf)
	require.Equal(t, time.Date(2025, 6, 21, 0, 0, 0, 0, time.UTC), f.Period.Start)
	f = Parse("in the second week of June", june5)
	require.Equal(t, Period{time.Date(2025, 6, 8, 0, 0, 0, 0, time.UTC), end(2025, 6, 14)}, f.Around)
	f = Parse("in early June", june5) // begun: this June's
	require.Equal(t, Period{time.Date(2026, 6, 1, 0, 0, 0, 0, time.UTC), end(2026, 6, 10)}, f.Around)
}

// TestLocation reads days in now's location, not in UTC.
func TestLocation(t *testing.T) {
	east := time.FixedZone("UTC-5", -5*3600)
	n := time.Date(2026, 12, 1, 23, 30, 0, 0, east) // already December 2 in UTC
	f := Parse("title yesterday", n)
	require.Equal(t, time.Date(2026, 11, 30, 23, 59, 59, 999999000, east), f.AsOf)
	require.Equal(t, east, f.AsOf.Location())
	f = Parse("title at 2026-06-02T10:00:00Z", n)
	require.Equal(t, time.Date(2026, 6, 2, 5, 0, 0, 0, east), f.AsOf)
}

// TestMonthEnds moves back by months without spilling into the next month.
func TestMonthEnds(t *testing.T) {
	leap := time.Date(2028, 2, 29, 12, 0, 0, 0, time.UTC)
	require.Equal(t, end(2027, 2, 28), Parse("a year ago", leap).AsOf)
	march31 := time.Date(2026, 3, 31, 12, 0, 0, 0, time.UTC)
	require.Equal(t, end(2026, 2, 28), Parse("a month ago", march31).AsOf)
	require.Equal(t, end(2026, 2, 28), Parse("last month", march31).AsOf)
}

func stamp(t time.Time) string {
	if t.IsZero() {
		return "zero"
	}
	return t.Format(time.RFC3339Nano)
}

func TestMigration(t *testing.T) {
	for q, why := range map[string]string{
		"What was the title before the migration?":        "before the migration",
		"title before the schema migration":               "before the schema migration",
		"title before the schema change":                  "before the schema change",
		"title prior to the latest schema change":         "prior to the latest schema change",
		"before the migration, as we believed on June 4?": "before the migration",
	} {
		f := Parse(q, now)
		require.True(t, f.BeforeMigration, q)
		require.Equal(t, why, f.KnownAtWhy, q)
		require.True(t, f.KnownAt.IsZero(), q)
		require.True(t, f.Past, q)
	}
	// "the change" alone may be any change of the value.
	require.False(t, Parse("title before the change", now).BeforeMigration)
	// The first phrase of the axis counts.
	f := Parse("title as we believed on June 4 before the migration", now)
	require.False(t, f.BeforeMigration)
	require.Equal(t, "as we believed on June 4", f.KnownAtWhy)
}

// TestIgnored lists phrases that must give no instant: ambiguous, invalid,
// ranges, and "may" the verb.
func TestIgnored(t *testing.T) {
	for _, q := range []string{
		"title on 6/2/2026",
		"title on 02.06.2026",
		"May I ask what her title is?",
		"I may have said so",
		"things put in may be lost",
		"it may or may not hold in may or june",
		"title May 2026",
		"title June 2",
		"title Monday",
		"title count 2026",
		"title 2",
		"on February 30, 2026",
		"on June 31",
		"on June 31, 2026",
		"on 2026-13-01",
		"on 2026-02-30",
		"on 0000-01-01",
		"in 0000",
		"in 10000",
		"on June 2, 10000",
		"on June 2, 0000",
		"in May 0",
		"in May 300",
		"summarize in 1000 words",
		"in May 2000 people signed up",
		"In March 5 people left",
		"In May, 2000 people signed up",
		"On June 2, 2000 people came",
		"in 2025 words",
		"two days before June 3, 2026",
		"the week before May",
		"title since June 2, 2026",
		"title after June 2, 2026",
		"title until June 3, 2026",
		"title by June 3, 2026",
		"title around June 3, 2026",
		"title between June 1, 2026 and June 3, 2026",
		"title from June 1, 2026 to June 3, 2026",
		"title after yesterday",
		"title in May last year",
		"title last year in May",
		"title on Monday last week",
		"title Monday last week",
		"title yesterday, 2026-06-02",
		"what changed in the last week",
		"sitting on sun loungers",
		"on Tuesday, June 1, 2026",
		"on Monday, June 31, 2026",
		"title at 2026-06-02T25:00:00Z",
		"title at 2026-06-02T10:00",
		"title 99999999 days ago",
		"last year", // from year 1, below
	} {
		n := now
		if q == "last year" {
			n = time.Date(1, 6, 1, 0, 0, 0, 0, time.UTC)
		}
		f := Parse(q, n)
		require.True(t, f.AsOf.IsZero(), "%q gave AsOf %s (%q)", q, f.AsOf, f.AsOfWhy)
		require.Empty(t, f.AsOfWhy, q)
		require.True(t, f.KnownAt.IsZero(), q)
		require.False(t, f.BeforeMigration, q)
	}
}

func FuzzParse(f *testing.F) {
	for _, c := range cases {
		f.Add(c.q, int64(0))
	}
	f.Add("before the schema change as we believed on 2026-06-04", int64(-86400*400))
	f.Add("on Monday, the 2nd of Sept., 2025", int64(86400*1000))
	f.Fuzz(func(t *testing.T, q string, shift int64) {
		// now ranges over about ±30 years around the table's now.
		n := now.Add(time.Duration(shift%(1<<30)) * time.Second)
		a := Parse(q, n)
		require.Equal(t, a, Parse(q, n), "deterministic")
		if !a.AsOf.IsZero() {
			require.Equal(t, time.UTC, a.AsOf.Location())
			require.NotEmpty(t, a.AsOfWhy)
			require.True(t, strings.Contains(q, a.AsOfWhy), "AsOfWhy %q not in q", a.AsOfWhy)
		} else {
			require.Empty(t, a.AsOfWhy)
		}
		if !a.KnownAt.IsZero() || a.BeforeMigration {
			require.NotEmpty(t, a.KnownAtWhy)
			require.True(t, strings.Contains(q, a.KnownAtWhy), "KnownAtWhy %q not in q", a.KnownAtWhy)
		} else {
			require.Empty(t, a.KnownAtWhy)
		}
		if !a.KnownAt.IsZero() {
			require.Equal(t, time.UTC, a.KnownAt.Location())
			require.False(t, a.BeforeMigration)
		}
		if !a.AsOf.IsZero() && a.AsOf.Before(n.Truncate(time.Microsecond)) || !a.KnownAt.IsZero() || a.BeforeMigration {
			require.True(t, a.Past)
		}
		if !a.Around.IsZero() {
			require.True(t, a.Period.IsZero(), "Around with Period")
			require.True(t, a.Around.Start.Before(a.Around.End), "Around %v", a.Around)
		}
	})
}
