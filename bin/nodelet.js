#!/usr/bin/env -S MALLOC_ARENA_MAX=2 node --max-semi-space-size=1 --no-concurrent-recompilation
// Entry point: the compiled CLI lives in dist/ (built by `npm ci` through the prepare script).
// A 1 MB young generation keeps the agent's peak RSS near its working set (V8 otherwise grows it to
// 128 MB under a burst of pod starts or steady probing), and two malloc arenas keep the threads' native
// allocations from fragmenting into more. Optimizing compiles run on the main thread: on a background
// thread their zone memory (6-9 MB when a burst of pod stops makes the teardown paths hot) stays in that
// thread's malloc arena after the job. Run this file directly so all of these apply.
import '../dist/src/cli/main.js';
