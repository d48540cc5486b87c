package aimux

import (
	"bytes"
	"context"
	"encoding/json"
	"runtime"
	"sync"
	"sync/atomic"
	"time"
)

// streamBatchEvents is the most events a stream takes per crossing into the library
// (aimux_stream_next_batch; the library's queue bound). 0 reads one event per aimux_stream_next,
// as a library without the batch functions is read (the tests compare the two).
var streamBatchEvents = 1024

// touchInterval: while a stream hands out events it already holds, Next reads the library
// (aimux_stream_poll, one event at most) at least this often, so the core's idle reaper
// (AIMUX_STREAM_IDLE_TIMEOUT_MS) sees a consumer that keeps calling Next as reading, as it does
// one that reads each event from the library.
const touchInterval = 100 * time.Millisecond

// streamCore is what the cleanup of an unreachable Stream needs (it must not reference the
// Stream itself).
type streamCore struct {
	handle    uint64
	stop      chan struct{}
	watchDone chan struct{}
	closeOnce sync.Once
	closed    atomic.Bool
}

func (c *streamCore) close() {
	c.closeOnce.Do(func() {
		c.closed.Store(true)
		close(c.stop)
		<-c.watchDone
		streamCancel(c.handle) // wakes a Next blocked in another goroutine
		streamFree(c.handle)
	})
}

// EventStream is a running streaming op, returned by Stream. Use it from one goroutine
// (Close may be called from any). Events are taken from the library several per call
// (aimux_stream_next_batch) and handed out one per Next, each exactly the bytes
// aimux_stream_next gives, in the same order; events taken and not handed out yet are dropped
// once the stream is closed or its context ends (Next then returns false, as before):
//
//	s, err := aimux.Stream(ctx, "stream_text", params)
//	if err != nil { … }
//	defer s.Close()
//	for s.Next() { use(s.Event()) }
//	if err := s.Err(); err != nil { … }
type EventStream struct {
	core     *streamCore
	ctx      context.Context
	event    json.RawMessage
	err      error
	done     bool
	finished bool // a finish event was delivered: a later cancellation is not an error
	batch    int  // at most this many events per crossing; 0: one aimux_stream_next per event
	// events taken from the library and not handed out yet (consumer goroutine only)
	held     []byte            // the batch being handed out, "[e1,e2,...]", from pos; or nil
	pos      int               // where its next event starts
	polled   []json.RawMessage // events a touch took, after the batch's
	ended    bool              // no event follows the held ones
	lastRead time.Time         // the last call into the library
}

// Stream starts a streaming op ("stream_text"). Failures before the first event come back here
// as an *Error. Cancelling ctx cancels the stream (aimux_stream_cancel): a blocked Next wakes up,
// returns false, and Err reports ctx.Err().
func Stream(ctx context.Context, op string, params any) (*EventStream, error) {
	ctx, p, err := prepare(ctx, op, params)
	if err != nil {
		return nil, err
	}
	type result struct {
		h   uint64
		err error
	}
	start := func() result {
		h, err := streamStart(op, p)
		return result{h, err}
	}
	var r result
	if ctx.Done() == nil {
		r = start()
	} else {
		ch := make(chan result, 1)
		go func() { ch <- start() }()
		select {
		case r = <-ch:
		case <-ctx.Done():
			go func() { // release the stream once the abandoned start completes
				if r := <-ch; r.err == nil {
					streamFree(r.h)
				}
			}()
			return nil, ctx.Err()
		}
	}
	if r.err != nil {
		return nil, r.err
	}
	if r.h == 0 {
		return nil, newLocalError(KindBinding, CodeInternal, "aimux: aimux_stream returned neither a handle nor an error")
	}
	core := &streamCore{handle: r.h, stop: make(chan struct{}), watchDone: make(chan struct{})}
	go func() {
		defer close(core.watchDone)
		select {
		case <-ctx.Done():
			streamCancel(core.handle)
		case <-core.stop:
		}
	}()
	s := &EventStream{core: core, ctx: ctx, batch: streamBatchEvents}
	if !batchesLoaded() {
		s.batch = 0
	}
	// A Stream dropped without Close is still released (eventually).
	runtime.AddCleanup(s, func(c *streamCore) { go c.close() }, core)
	return s, nil
}

// Next waits for the next event; it returns false at the end of the stream, after an error
// event (see Err), after cancellation, or after Close.
func (s *EventStream) Next() bool {
	if s.done {
		return false
	}
	s.event = nil
	if s.core.closed.Load() {
		s.stop()
		return false
	}
	if err := s.ctx.Err(); err != nil {
		s.stop()
		if !s.finished {
			s.err = err
		}
		return false
	}
	ev, err := s.read()
	runtime.KeepAlive(s)
	if err != nil {
		s.stop()
		if !s.core.closed.Load() { // a handle freed by a concurrent Close is not an error
			s.err = err
		}
		return false
	}
	if ev == nil { // ended
		s.done = true
		if err := s.ctx.Err(); err != nil && !s.finished {
			s.err = err
		}
		return false
	}
	var head struct {
		Type  string          `json:"type"`
		Error json.RawMessage `json:"error"`
	}
	if json.Unmarshal(ev, &head) == nil && head.Type == "error" {
		s.stop()
		if len(bytes.TrimSpace(head.Error)) > 0 {
			s.err = DecodeError(head.Error)
		} else {
			s.err = DecodeError(ev)
		}
		return false
	}
	s.finished = head.Type == "finish"
	s.event = ev
	return true
}

// stop ends the iteration: Next returns false from now on; held events are dropped.
func (s *EventStream) stop() {
	s.done = true
	s.held, s.polled = nil, nil
}

// read returns the next event (nil at the end): a held one, else the next batch's first.
func (s *EventStream) read() (json.RawMessage, error) {
	h := s.core.handle
	if s.batch <= 0 {
		return streamNext(h)
	}
	if s.held != nil || len(s.polled) > 0 {
		if now := time.Now(); now.Sub(s.lastRead) >= touchInterval {
			// a read the reaper counts; its event goes after the held ones; its error (the
			// stream is then over) is returned now, as the next read of one event would
			batch, ended, err := streamBatch(h, 1, false)
			s.lastRead = now
			if err != nil {
				return nil, err
			}
			if len(batch) >= 2 {
				s.polled = append(s.polled, json.RawMessage(batch[1:len(batch)-1]))
			}
			s.ended = s.ended || ended
		}
		return s.takeHeld(), nil
	}
	if s.ended {
		return nil, nil
	}
	batch, ended, err := streamBatch(h, s.batch, true)
	s.lastRead = time.Now()
	if err != nil || batch == nil {
		return nil, err // nil, nil: the end
	}
	s.held, s.pos, s.ended = batch, 1, ended
	return s.takeHeld(), nil
}

// takeHeld hands out the next held event (a copy of its bytes): the batch's, then the polled.
func (s *EventStream) takeHeld() json.RawMessage {
	if s.held == nil {
		ev := s.polled[0]
		s.polled[0] = nil
		s.polled = s.polled[1:]
		return ev
	}
	end := eventEnd(s.held, s.pos)
	ev := json.RawMessage(append([]byte(nil), s.held[s.pos:end]...))
	s.pos = end + 1
	if s.pos >= len(s.held) {
		s.held = nil
	}
	return ev
}

// eventEnd is, in a batch "[e1,e2,...]", the index of the ',' or ']' that ends the event
// starting at b[pos]: depth 0, outside strings (the library's own scanner, so an event's bytes
// are exactly what aimux_stream_next returns).
func eventEnd(b []byte, pos int) int {
	depth := 0
	for i := pos; i < len(b); i++ {
		switch b[i] {
		case '"':
			for i++; i < len(b) && b[i] != '"'; i++ {
				if b[i] == '\\' {
					i++
				}
			}
		case '{', '[':
			depth++
		case '}', ']':
			if depth == 0 {
				return i
			}
			depth--
		case ',':
			if depth == 0 {
				return i
			}
		}
	}
	return len(b) // malformed: the rest (never for the library's arrays)
}

// Event returns the event read by the last successful Next ({"type": "text-delta", …}).
func (s *EventStream) Event() json.RawMessage { return s.event }

// Err returns the error that ended the stream: an *Error (from an error event or the library)
// or ctx.Err(); nil after a normal end or Close.
func (s *EventStream) Err() error { return s.err }

// Close cancels the stream if it is still running and releases it. Safe to call more than
// once and from any goroutine.
func (s *EventStream) Close() error {
	s.core.close()
	return nil
}
