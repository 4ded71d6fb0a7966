package bench

import (
	"context"
	"os"
	"strconv"
	"testing"
)

// TestExtractBench runs the extraction benchmark small, as a test of the
// benchmark itself.
func TestExtractBench(t *testing.T) {
	res, err := Extract(context.Background(), ExtractOptions{Dir: t.TempDir(), Facts: 2000, Episodes: 20, Workers: 4, Latency: 0, ThroughputEpisodes: 20})
	if err != nil {
		t.Fatal(err)
	}
	if res.CallsPerEpisode != 1 || res.AgainCalls != 0 {
		t.Fatalf("calls %.2f per episode, %d again", res.CallsPerEpisode, res.AgainCalls)
	}
	if res.PromptBytes != res.PromptBytesSmall {
		t.Fatalf("the prompt grew with the store: %.0f bytes, %.0f in the small one", res.PromptBytes, res.PromptBytesSmall)
	}
}

// BenchmarkExtract is the pipeline's cost per episode (go test -bench
// Extract -cpuprofile ...).
func BenchmarkExtract(b *testing.B) {
	res, err := Extract(context.Background(), ExtractOptions{Dir: b.TempDir(), Facts: benchFacts(), Episodes: max(b.N, 10), Workers: 1})
	if err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(float64(res.PerEpisode.Microseconds()), "us/episode")
}

// benchFacts is the store size of BenchmarkExtract: $SGAM_BENCH_FACTS, or
// 10,000.
func benchFacts() int {
	if n, err := strconv.Atoi(os.Getenv("SGAM_BENCH_FACTS")); err == nil && n >= 1000 {
		return n / 1000 * 1000
	}
	return 10000
}
