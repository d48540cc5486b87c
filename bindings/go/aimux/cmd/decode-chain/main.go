// Command decode-chain reads one envelope JSON on stdin, decodes it with the Go binding's
// decoder (no libaimux needed), walks the native cause chain with errors.Unwrap and prints one
// JSON array: [{"kind", "code", "name", "message"}] (CONTRACT §4).
//
// With --lines it is long-lived (DESIGN.md "decode-chain"): one envelope per stdin line, one
// answer line each: {"chain": [...], "root": {"retryable", "retryAfterMs"}}, or
// {"rejected": {"code", "message"}} when the decoder refuses the envelope.
package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"

	"github.com/aimux-ops/aimux-ops/bindings/go/aimux"
)

type root struct {
	Retryable    bool   `json:"retryable"`
	RetryAfterMs *int64 `json:"retryAfterMs"`
}

type rejection struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
}

type answer struct {
	Chain    []aimux.Link `json:"chain,omitempty"`
	Root     *root        `json:"root,omitempty"`
	Rejected *rejection   `json:"rejected,omitempty"`
}

func answerFor(envelope []byte) answer {
	decoded, rejected := aimux.ParseEnvelope(envelope)
	if rejected != nil {
		return answer{Rejected: &rejection{rejected.Code, rejected.Message}}
	}
	a := answer{Chain: aimux.ChainLinks(decoded), Root: &root{}}
	if e, ok := decoded.(*aimux.Error); ok {
		a.Root.Retryable = e.Retryable
		if e.HasRetryAfter {
			ms := e.RetryAfter.Milliseconds()
			a.Root.RetryAfterMs = &ms
		}
	}
	return a
}

func main() {
	if len(os.Args) == 2 && os.Args[1] == "--lines" {
		in := bufio.NewReaderSize(os.Stdin, 1<<20)
		out := bufio.NewWriter(os.Stdout)
		for {
			line, err := in.ReadBytes('\n')
			if len(line) > 0 && len(bytesTrim(line)) > 0 {
				b, merr := json.Marshal(answerFor(line))
				if merr != nil {
					fmt.Fprintln(os.Stderr, "decode-chain:", merr)
					os.Exit(2)
				}
				out.Write(append(b, '\n'))
				out.Flush()
			}
			if err == io.EOF {
				return
			}
			if err != nil {
				fmt.Fprintln(os.Stderr, "decode-chain:", err)
				os.Exit(2)
			}
		}
	}
	if len(os.Args) > 1 {
		fmt.Fprintln(os.Stderr, "usage: decode-chain [--lines]")
		os.Exit(2)
	}
	in, err := io.ReadAll(os.Stdin)
	if err != nil {
		fmt.Fprintln(os.Stderr, "decode-chain:", err)
		os.Exit(2)
	}
	out, err := json.Marshal(aimux.ChainLinks(aimux.DecodeError(in)))
	if err != nil {
		fmt.Fprintln(os.Stderr, "decode-chain:", err)
		os.Exit(2)
	}
	os.Stdout.Write(append(out, '\n'))
}

func bytesTrim(b []byte) []byte {
	for len(b) > 0 && (b[0] == ' ' || b[0] == '\t' || b[0] == '\r' || b[0] == '\n') {
		b = b[1:]
	}
	for len(b) > 0 && (b[len(b)-1] == ' ' || b[len(b)-1] == '\t' || b[len(b)-1] == '\r' || b[len(b)-1] == '\n') {
		b = b[:len(b)-1]
	}
	return b
}
