package storetest

import "testing"

func Benchmark(b *testing.B, newStore Factory) {}
