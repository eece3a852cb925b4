//go:build tools

// Package tools keeps CoreDNS's main package (the root of github.com/coredns/coredns) in this module's requirements
// (go mod tidy). It is never compiled: scripts/addons-build.sh builds the package by path.
package tools

import _ "github.com/coredns/coredns"
