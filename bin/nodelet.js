#!/usr/bin/env -S node --max-semi-space-size=1
// Entry point: the compiled CLI lives in dist/ (built by `npm ci` through the prepare script).
// A 1 MB young generation keeps the agent's peak RSS near its working set (V8 otherwise grows it to
// tens of MB under a burst of pod starts); run this file directly so the flag applies.
import '../dist/src/cli/main.js';
