package aimux

import (
	"context"
	"testing"
)

// BenchmarkStreamEvents reads a 20,000-delta stream from tests/fault_server.py (mode=chunks)
// through EventStream: batched (aimux_stream_next_batch) and one aimux_stream_next per event,
// alternated round by round. Reports events/s; asserts nothing about speed (not run by
// `make test-go`):
//
//	go test -run '^$' -bench StreamEvents -benchtime 5x -count 5
func BenchmarkStreamEvents(b *testing.B) {
	f := newFaultServer(b)
	params := f.params("mode=chunks;n=20000")
	for _, mode := range []struct {
		name  string
		batch int
	}{{"batch", 1024}, {"per-event", 0}} {
		b.Run(mode.name, func(b *testing.B) {
			events := 0
			for i := 0; i < b.N; i++ {
				saved := streamBatchEvents
				streamBatchEvents = mode.batch
				s, err := Stream(context.Background(), "stream_text", params)
				streamBatchEvents = saved
				if err != nil {
					b.Fatal(err)
				}
				for s.Next() {
					events++
				}
				if s.Err() != nil {
					b.Fatal(s.Err())
				}
				_ = s.Close()
			}
			b.ReportMetric(float64(events)/b.Elapsed().Seconds(), "events/s")
		})
	}
}
