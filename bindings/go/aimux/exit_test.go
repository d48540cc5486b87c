package aimux

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"testing"
	"time"
)

// TestAProgramThatExitsWhileStreamsRunEndsWithItsOwnExitCode: a Go program that exits while the
// core's streams are busy (its reader threads and stream loop reading, their queues filling) ends
// with its own exit code, every time. Go's runtime ends the process with exit_group and runs no C
// exit handler (neither on os.Exit nor on a return from main), so the exit handlers' hazard that
// native/tests/test_guest.c `exit` and the Java and Node exit tests cover does not arise here
// (DESIGN.md "The host's exit"); what this shows is that nothing else does: the streams open, read
// and are left running, and the exit is the program's own, not a crash, a hang or another code.
func TestAProgramThatExitsWhileStreamsRunEndsWithItsOwnExitCode(t *testing.T) {
	if os.Getenv("AIMUX_GO_HELPER") == "exit" {
		exitWhileStreamsRun(os.Getenv("AIMUX_GO_BASE"))
		return
	}
	f := newFaultServer(t)
	for round := 0; round < 3; round++ {
		// a safety bound for a child that hangs, not a speed claim
		ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
		cmd := exec.CommandContext(ctx, os.Args[0],
			"-test.run=^TestAProgramThatExitsWhileStreamsRunEndsWithItsOwnExitCode$", "-test.count=1")
		cmd.Env = append(os.Environ(), "AIMUX_GO_HELPER=exit", "AIMUX_GO_BASE="+f.base)
		out, err := cmd.CombinedOutput()
		cancel()
		var exit *exec.ExitError
		if !errors.As(err, &exit) || exit.ExitCode() != 7 {
			t.Fatalf("round %d: the child ended with %v (want exit code 7)\n%s", round, err, out)
		}
	}
}

// exitWhileStreamsRun is the child: 20 long streams (20,000 chunks each), each read up to its
// first event and never closed (the core keeps filling their queues), then os.Exit(7). Any other
// code says which step failed.
func exitWhileStreamsRun(base string) {
	f := &faultServer{base: base}
	var open []*EventStream
	for i := 0; i < 20; i++ {
		s, err := Stream(context.Background(), "stream_text", f.params("mode=chunks;n=20000"))
		if err != nil {
			os.Exit(3)
		}
		if !s.Next() {
			os.Exit(4)
		}
		open = append(open, s)
	}
	if len(open) != 20 {
		os.Exit(5)
	}
	os.Exit(7)
}
