// Package workload generates the benchmark workloads shared by the store
// benchmarks (go test -bench) and `sgam bench`: the reference recipe's
// workload, so the two can be compared in one run.
package workload

import (
	"fmt"
	"strconv"
	"time"

	"github.com/sgam-dev/sgam"
)

// Tenant is the tenant every workload writes.
const Tenant = "acme"

// Subjects is the number of distinct subjects: fact i writes subject
// i % Subjects, as the reference recipe does.
const Subjects = 1000

// Base is the valid time of fact 0; fact i is valid from Base + i seconds.
var Base = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// Key returns the key fact i writes.
func Key(i int) sgam.Key {
	return sgam.Key{Tenant: Tenant, Subject: "s" + strconv.Itoa(i%Subjects), Attribute: "a"}
}

// ValidFrom returns the valid_from of fact i.
func ValidFrom(i int) time.Time { return Base.Add(time.Duration(i) * time.Second) }

// Fact returns assertion i: a new value for subject i % Subjects, later than
// every earlier value of that subject, so that each one after the first
// Subjects replaces (closes) the subject's open row.
func Fact(i int) sgam.Assertion {
	return sgam.Assertion{
		Key:       Key(i),
		Value:     []byte(`"v` + strconv.Itoa(i) + `"`),
		ValidFrom: ValidFrom(i),
		Source:    fmt.Sprintf("e%d", i/10),
	}
}

// Batch returns assertions [from, from+n).
func Batch(from, n int) []sgam.Assertion {
	out := make([]sgam.Assertion, n)
	for j := range out {
		out[j] = Fact(from + j)
	}
	return out
}
