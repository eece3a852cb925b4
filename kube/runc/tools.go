//go:build tools

// Package tools keeps runc's main package (the root of github.com/opencontainers/runc) in this module's requirements
// (go mod tidy). It is never compiled: scripts/runtime-build.sh builds the package by path.
package tools

import _ "github.com/opencontainers/runc"
