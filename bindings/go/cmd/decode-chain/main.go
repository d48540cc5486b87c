// Command decode-chain reads one envelope JSON on stdin, decodes it with the Go binding's
// decoder (no libaimux needed), walks the native cause chain with errors.Unwrap and prints one
// JSON array: [{"kind", "code", "name", "message"}] (CONTRACT §4).
package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"

	aimux "github.com/aimux-ops/aimux-ops/bindings/go"
)

func main() {
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
