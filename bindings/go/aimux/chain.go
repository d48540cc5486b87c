package aimux

import "errors"

// Link is one link of a native chain as decode-chain prints it.
type Link struct {
	Kind    string  `json:"kind"`
	Code    int     `json:"code"`
	Name    *string `json:"name"`
	Message string  `json:"message"`
}

// ChainLinks walks err's chain with errors.Unwrap and describes each *Error / *SourceError
// link (other error types are described as kind "go", code 0).
func ChainLinks(err error) []Link {
	links := []Link{}
	for ; err != nil; err = errors.Unwrap(err) {
		switch e := err.(type) {
		case *Error:
			l := Link{Kind: e.Kind, Code: e.Code, Message: e.Message}
			if e.HasName() {
				name := e.Name
				l.Name = &name
			}
			links = append(links, l)
		case *SourceError:
			l := Link{Kind: "source", Code: 0, Message: e.Message}
			if e.HasType() {
				t := e.Type
				l.Name = &t
			}
			links = append(links, l)
		default:
			links = append(links, Link{Kind: "go", Message: err.Error()})
		}
	}
	return links
}
