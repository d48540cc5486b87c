package aimux

import (
	"context"
	"testing"
	"time"
)

// TestStringsAndErrorsFreedOnce runs last (file order): after every other test, and a workload
// of its own, each string and error the library handed out has been freed exactly once. The C
// wrappers count both sides (Counts).
func TestStringsAndErrorsFreedOnce(t *testing.T) {
	ctx := context.Background()
	params := demoParams(t)
	for i := 0; i < 10; i++ {
		_, _ = Call(ctx, "aimux.version", nil)
		_, _ = Call(ctx, "no.such.op", nil)
		_, _ = Call(ctx, "generate_text", params)
		_, _ = Stream(ctx, "aimux.version", nil)
		if s, err := Stream(ctx, "stream_text", params); err == nil {
			for s.Next() {
			}
			_ = s.Close()
		}
		if s, err := Stream(ctx, "stream_text", params); err == nil {
			s.Next()
			_ = s.Close() // closed mid-stream
			s.Next()
		}
	}
	// Abandoned calls of other tests may still be finishing in the background: wait.
	deadline := time.Now().Add(time.Minute) // a bound for a broken run: a loaded machine is slow
	for {
		so, sf, eo, ef := Counts()
		if so == sf && eo == ef && so > 0 && eo > 0 {
			t.Logf("strings %d out / %d freed, errors %d out / %d freed", so, sf, eo, ef)
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("strings out %d freed %d, errors out %d freed %d", so, sf, eo, ef)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
