#!/usr/bin/env -S MALLOC_ARENA_MAX=2 node --max-semi-space-size=1
// Entry point: the compiled CLI lives in dist/ (built by `npm ci` through the prepare script).
// A 1 MB young generation keeps the agent's peak RSS near its working set (V8 otherwise grows it to
// 128 MB under a burst of pod starts or steady probing), and two malloc arenas keep the threads' native
// allocations from fragmenting into more; run this file directly so both apply.
import '../dist/src/cli/main.js';
