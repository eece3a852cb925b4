//go:build tools

// Package tools keeps etcd's main package (the root of go.etcd.io/etcd/server/v3) in this module's requirements
// (go mod tidy). It is never compiled: scripts/kube-build.sh builds the package by path.
package tools

import _ "go.etcd.io/etcd/server/v3"
