package aimux

import (
	"context"
	"testing"
	"time"
)

// BenchmarkStreamEvents reads a 20,000-delta stream from tests/fault_server.py (mode=chunks)
// through EventStream: batched (aimux_stream_next_batch) and one aimux_stream_next per event,
// alternated round by round. Reports events/s; asserts nothing about speed (not run by
// `make test-go`):
//
//	go test -run '^$' -bench StreamEvents -benchtime 5x -count 5
//
// the two ways the benchmarks read: batched, and one aimux_stream_next per event
var benchReadModes = []struct {
	name  string
	batch int
}{{"batch", 1024}, {"per-event", 0}}

// openBatched opens a stream that reads `batch` events per crossing (0: one per event).
func openBatched(b *testing.B, params map[string]any, batch int) *EventStream {
	saved := streamBatchEvents
	streamBatchEvents = batch
	defer func() { streamBatchEvents = saved }()
	s, err := Stream(context.Background(), "stream_text", params)
	if err != nil {
		b.Fatal(err)
	}
	return s
}

func BenchmarkStreamEvents(b *testing.B) {
	f := newFaultServer(b)
	params := f.params("mode=chunks;n=20000")
	for _, mode := range benchReadModes {
		b.Run(mode.name, func(b *testing.B) {
			events := 0
			for i := 0; i < b.N; i++ {
				s := openBatched(b, params, mode.batch)
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

// BenchmarkStreamDrain is the consumer's side alone: 20 streams of 1,000 deltas are opened and
// left to fill their queues (under the core's 1,024 bound) with the timer stopped, then drained
// one after the other, batched and per event.
//
//	go test -run '^$' -bench StreamDrain -benchtime 3x -count 5
func BenchmarkStreamDrain(b *testing.B) {
	f := newFaultServer(b)
	params := f.params("mode=chunks;n=1000")
	for _, mode := range benchReadModes {
		b.Run(mode.name, func(b *testing.B) {
			events := 0
			for i := 0; i < b.N; i++ {
				b.StopTimer()
				streams := make([]*EventStream, 20)
				for j := range streams {
					streams[j] = openBatched(b, params, mode.batch)
				}
				time.Sleep(1500 * time.Millisecond) // the producers fill the queues
				b.StartTimer()
				for _, s := range streams {
					for s.Next() {
						events++
					}
					_ = s.Close()
				}
			}
			b.ReportMetric(float64(events)/b.Elapsed().Seconds(), "events/s")
		})
	}
}
