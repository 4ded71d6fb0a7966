package bench

import (
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/sgam-dev/sgam/recall"
	sgamserver "github.com/sgam-dev/sgam/server"
	"github.com/sgam-dev/sgam/store"
)

// BenchmarkServeRecall is a recall of `sgam bench http`'s workload (its
// seed: SGAM_BENCH_FACTS facts, one episode per 100) asked in process
// (one at a time: "recall"; by 16 workers on 2 cores, as `sgam bench
// http` asks: "recall_parallel") and through the server's handler with no
// network
// ("handler": the key check, decoding, encoding, logging and metrics
// besides): their difference is what HTTP costs above recall.
func BenchmarkServeRecall(b *testing.B) {
	facts := 100_000
	if v, err := strconv.Atoi(os.Getenv("SGAM_BENCH_FACTS")); err == nil && v > 0 {
		facts = v
	}
	db := filepath.Join(b.TempDir(), "serve.db")
	opts := HTTPOptions{Facts: facts, Tenant: "bench", Progress: func(string, int, int) {}}
	token, questions, _, err := seed(b.Context(), db, opts)
	if err != nil {
		b.Fatal(err)
	}
	s, err := store.Open(b.Context(), db, store.Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	b.Run("recall", func(b *testing.B) {
		r := recall.New(s)
		for i := 0; b.Loop(); i++ {
			q, _ := strconv.Unquote(questions[i%len(questions)])
			if _, err := r.Recall(b.Context(), recall.Query{Tenant: "bench", Question: q}); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("recall_parallel", func(b *testing.B) {
		r := recall.New(s)
		var n atomic.Int64
		b.SetParallelism(8) // 16 workers on 2 cores, as sgam bench http
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				q, _ := strconv.Unquote(questions[int(n.Add(1))%len(questions)])
				if _, err := r.Recall(b.Context(), recall.Query{Tenant: "bench", Question: q}); err != nil {
					b.Error(err) // not Fatal: this is not the benchmark's goroutine
					return
				}
			}
		})
	})
	h, err := sgamserver.New(sgamserver.Config{Store: s, Logger: slog.New(slog.NewJSONHandler(discard{}, nil))})
	if err != nil {
		b.Fatal(err)
	}
	b.Run("loopback", func(b *testing.B) {
		srv := httptest.NewServer(h)
		defer srv.Close()
		client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 16}}
		var n atomic.Int64
		b.SetParallelism(8) // 16 workers on 2 cores, as sgam bench http
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				i := n.Add(1)
				req, _ := http.NewRequest("POST", srv.URL+"/v1/recall", strings.NewReader(`{"question":`+questions[int(i)%len(questions)]+`}`))
				req.Header.Set("Authorization", "Bearer "+token)
				res, err := client.Do(req)
				if err != nil {
					b.Fatal(err)
				}
				io.Copy(io.Discard, res.Body)
				res.Body.Close()
				if res.StatusCode != http.StatusOK {
					b.Fatal(res.Status)
				}
			}
		})
	})
	b.Run("handler", func(b *testing.B) {
		b.ReportAllocs()
		for i := 0; b.Loop(); i++ {
			r := httptest.NewRequest("POST", "/v1/recall", strings.NewReader(`{"question":`+questions[i%len(questions)]+`}`))
			r.Header.Set("Authorization", "Bearer "+token)
			w := httptest.NewRecorder()
			h.ServeHTTP(w, r)
			if w.Code != http.StatusOK {
				b.Fatal(w.Code, w.Body.String())
			}
		}
	})
}

type discard struct{}

func (discard) Write(p []byte) (int, error) { return len(p), nil }
