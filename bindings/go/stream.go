package aimux

import (
	"bytes"
	"context"
	"encoding/json"
	"runtime"
	"sync"
	"sync/atomic"
)

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
// (Close may be called from any):
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
	s := &EventStream{core: core, ctx: ctx}
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
		s.done = true
		return false
	}
	if err := s.ctx.Err(); err != nil {
		s.done = true
		if !s.finished {
			s.err = err
		}
		return false
	}
	ev, err := streamNext(s.core.handle)
	runtime.KeepAlive(s)
	if err != nil {
		s.done = true
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
		s.done = true
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
