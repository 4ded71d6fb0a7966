package sgam_test

import (
	"context"
	"fmt"
	"log"
	"os"
	"path/filepath"
	"time"

	"github.com/sgam-dev/sgam"
	"github.com/sgam-dev/sgam/store"
)

// Open the embedded store, capture what a user said, record a fact on its
// evidence, and read it back.
func Example() {
	ctx := context.Background()

	// The embedded store is one SQLite file, created if missing. (A
	// postgres:// URL in its place opens the PostgreSQL store.)
	dir, err := os.MkdirTemp("", "sgam-example")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	// A fixed clock makes transaction time, and so this output, the same
	// on every run; leave Clock out to use the system clock.
	clock := &sgam.ManualClock{}
	clock.Set(time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC))
	st, err := store.Open(ctx, filepath.Join(dir, "memory.db"), store.Options{Clock: clock})
	if err != nil {
		log.Fatal(err)
	}
	defer st.Close()

	// An episode is the raw input, kept as it came. Every read and write
	// names its tenant.
	_, err = st.AddEpisode(ctx, sgam.Episode{Tenant: "acme", ID: "e1", Content: "Mira lives in Oslo."})
	if err != nil {
		log.Fatal(err)
	}

	// A fact: a value of one attribute of one subject, true in the world
	// from ValidFrom on, on the evidence of episode e1. Values are JSON.
	mira := sgam.Key{Tenant: "acme", Subject: "mira", Attribute: "city"}
	_, err = st.Assert(ctx, sgam.Assertion{Key: mira, Value: []byte(`"Oslo"`),
		ValidFrom: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC), Source: "e1"})
	if err != nil {
		log.Fatal(err)
	}

	// The zero At reads the current state: true now, as believed now.
	f, err := st.Get(ctx, mira, sgam.At{})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("%s = %s since %s, on the evidence of %v\n", f.Key(), f.Value, f.ValidFrom.Format(time.DateOnly), f.Sources)
	// Output:
	// acme/mira.city = "Oslo" since 2026-01-01, on the evidence of [e1]
}

// Correct a fact, and read along both time axes: valid time (AsOf, what
// was true in the world then) and transaction time (KnownAt, what the
// store believed then). A correction does not erase what was believed:
// the old belief stays readable at its transaction time.
func ExampleAt() {
	ctx := context.Background()
	dir, err := os.MkdirTemp("", "sgam-example")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	clock := &sgam.ManualClock{}
	st, err := store.Open(ctx, filepath.Join(dir, "memory.db"), store.Options{Clock: clock})
	if err != nil {
		log.Fatal(err)
	}
	defer st.Close()
	day := func(month time.Month, d int) time.Time { return time.Date(2026, month, d, 0, 0, 0, 0, time.UTC) }
	mira := sgam.Key{Tenant: "acme", Subject: "mira", Attribute: "city"}

	// On January 10 we learn that Mira has lived in Oslo since January 1.
	clock.Set(day(time.January, 10))
	if _, err := st.Assert(ctx, sgam.Assertion{Key: mira, Value: []byte(`"Oslo"`), ValidFrom: day(time.January, 1), Source: "e1"}); err != nil {
		log.Fatal(err)
	}

	// On March 1 she tells us she moved to Bergen back on February 1:
	// the Oslo row is closed at February 1 (as a new row; the old one is
	// retracted, not changed) and Bergen holds from then on.
	clock.Set(day(time.March, 1))
	if _, err := st.Assert(ctx, sgam.Assertion{Key: mira, Value: []byte(`"Bergen"`), ValidFrom: day(time.February, 1), Source: "e2"}); err != nil {
		log.Fatal(err)
	}

	for _, read := range []struct {
		what string
		at   sgam.At
	}{
		{"now", sgam.At{}},
		{"on January 15, as we know it now", sgam.At{AsOf: day(time.January, 15)}},
		{"on February 15, as we know it now", sgam.At{AsOf: day(time.February, 15)}},
		{"on February 15, as we believed it on February 20", sgam.At{AsOf: day(time.February, 15), KnownAt: day(time.February, 20)}},
		{"on January 15, as we believed it on January 5", sgam.At{AsOf: day(time.January, 15), KnownAt: day(time.January, 5)}},
	} {
		f, err := st.Get(ctx, mira, read.at)
		if err != nil {
			log.Fatal(err)
		}
		if f == nil { // no value: here, none was recorded yet
			fmt.Printf("%s: unknown\n", read.what)
			continue
		}
		fmt.Printf("%s: %s\n", read.what, f.Value)
	}

	// History shows every row, retracted ones too, in the order written:
	// the first Oslo row was believed from January 10 to March 1.
	rows, err := st.History(ctx, mira)
	if err != nil {
		log.Fatal(err)
	}
	for _, r := range rows {
		to, retracted := "open", "still believed"
		if r.ValidTo != nil {
			to = r.ValidTo.Format(time.DateOnly)
		}
		if r.RetractedAt != nil {
			retracted = "retracted " + r.RetractedAt.Format(time.DateOnly)
		}
		fmt.Printf("%-8s valid %s to %-10s recorded %s, %s\n", r.Value, r.ValidFrom.Format(time.DateOnly), to, r.RecordedAt.Format(time.DateOnly), retracted)
	}
	// Output:
	// now: "Bergen"
	// on January 15, as we know it now: "Oslo"
	// on February 15, as we know it now: "Bergen"
	// on February 15, as we believed it on February 20: "Oslo"
	// on January 15, as we believed it on January 5: unknown
	// "Oslo"   valid 2026-01-01 to open       recorded 2026-01-10, retracted 2026-03-01
	// "Oslo"   valid 2026-01-01 to 2026-02-01 recorded 2026-03-01, still believed
	// "Bergen" valid 2026-02-01 to open       recorded 2026-03-01, still believed
}
