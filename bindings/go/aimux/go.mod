module github.com/aimux-ops/aimux-ops/bindings/go/aimux

go 1.24
