module github.com/aimux-ops/aimux-ops/bindings/go

go 1.24
