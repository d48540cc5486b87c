// Command aimux-gen writes zz_generated.go of package aimux from schema/manifest.json.
//
//	go run ./cmd/aimux-gen -manifest ../../schema/manifest.json -o zz_generated.go
//	go run ./cmd/aimux-gen -check   # exit 1 when the committed file has drifted
package main

import (
	"bytes"
	"flag"
	"fmt"
	"os"

	"github.com/aimux-ops/aimux-ops/bindings/go/internal/gen"
)

func main() {
	manifest := flag.String("manifest", "../../schema/manifest.json", "path of schema/manifest.json")
	out := flag.String("o", "zz_generated.go", "output file")
	check := flag.Bool("check", false, "compare with the output file instead of writing it")
	flag.Parse()

	in, err := os.ReadFile(*manifest)
	if err != nil {
		fmt.Fprintln(os.Stderr, "aimux-gen:", err)
		os.Exit(2)
	}
	src, err := gen.Generate(in)
	if err != nil {
		fmt.Fprintln(os.Stderr, "aimux-gen:", err)
		os.Exit(2)
	}
	if *check {
		cur, err := os.ReadFile(*out)
		if err != nil || !bytes.Equal(cur, src) {
			fmt.Fprintf(os.Stderr, "aimux-gen: %s is out of date with %s; run `go generate` in bindings/go\n", *out, *manifest)
			os.Exit(1)
		}
		return
	}
	if err := os.WriteFile(*out, src, 0o644); err != nil {
		fmt.Fprintln(os.Stderr, "aimux-gen:", err)
		os.Exit(2)
	}
}
