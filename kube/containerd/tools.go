//go:build tools

// Package tools keeps containerd's commands in this module's requirements (go mod tidy). It is never compiled:
// scripts/runtime-build.sh builds the packages by path.
package tools

import (
	_ "github.com/containerd/containerd/v2/cmd/containerd"
	_ "github.com/containerd/containerd/v2/cmd/containerd-shim-runc-v2"
	_ "github.com/containerd/containerd/v2/cmd/ctr"
)
