#!/usr/bin/env node
// Entry point: the compiled CLI lives in dist/ (built by `npm ci` through the prepare script).
import '../dist/src/cli/main.js';
