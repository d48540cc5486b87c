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

// BenchmarkStreamDrain is the consumer's side alone: 20 streams of 1,000 deltas are opened and
// left to fill their queues (under the core's 1,024 bound) with the timer stopped, then drained
// one after the other, batched and per event.
//
//	go test -run '^$' -bench StreamDrain -benchtime 3x -count 5
func BenchmarkStreamDrain(b *testing.B) {
	f := newFaultServer(b)
	params := f.params("mode=chunks;n=1000")
	for _, mode := range []struct {
		name  string
		batch int
	}{{"batch", 1024}, {"per-event", 0}} {
		b.Run(mode.name, func(b *testing.B) {
			events := 0
			for i := 0; i < b.N; i++ {
				b.StopTimer()
				saved := streamBatchEvents
				streamBatchEvents = mode.batch
				streams := make([]*EventStream, 20)
				for j := range streams {
					s, err := Stream(context.Background(), "stream_text", params)
					if err != nil {
						b.Fatal(err)
					}
					streams[j] = s
				}
				streamBatchEvents = saved
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
