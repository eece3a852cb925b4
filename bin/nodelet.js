#!/bin/sh
":" //; node="$(dirname "$(readlink -f "$0")")/../node_modules/node/bin/node"; [ -x "$node" ] || { echo "nodelet: the project's Node is missing at $node (run npm ci in $(dirname "$(readlink -f "$0")")/..)" >&2; exit 127; }; MALLOC_ARENA_MAX=2 MALLOC_MMAP_THRESHOLD_=32768 exec "$node" --max-semi-space-size=1 --max-old-space-size=512 --jitless --use-openssl-ca "$0" "$@"
// Entry point: the compiled CLI lives in dist/ (built by `npm ci` through the prepare script).
// Run as a program, this file is first read by sh (the line above): it starts the Node the project pins through npm
// (node_modules/node), never whatever `node` comes first on PATH (the system's may be end-of-life, a bare machine or a
// systemd unit has none), and then this same file as JavaScript, where that line is only a string and a comment.
// V8 without a JIT (--jitless: its interpreter and its built-ins only, no Sparkplug, Maglev or TurboFan code, regular
// expressions interpreted, no WebAssembly): the agent's JavaScript is glue between system calls, gRPC and JSON, and the
// optimizing compilers bought it no CPU under probe load (0.07 cores either way, 30 probed pods) while costing about
// 10 MB of RSS: the compilers' own pages of the Node binary, their code and feedback on the heap (README, Benchmark).
// Nothing in the agent uses WebAssembly; Node's fetch() does (undici's HTTP parser), so the agent uses node:http.
// A 1 MB young generation keeps the agent's peak RSS near its working set (V8 otherwise grows it to
// 128 MB under a burst of pod starts or steady probing). A 512 MB old generation (the agent's live heap is about
// 30 MB with 110 pods) makes V8 grow it by at most about 1.3x its live size between full collections instead of up to
// 4x: back-to-back stats scrapes then leave RSS where it was (120 MB, not 160-190 MB, with 110 pods), for a few ms more
// of collection per scrape. Two malloc arenas keep the threads' native
// allocations from fragmenting into more, and a fixed 32 KB mmap threshold returns larger blocks to the kernel when freed
// (glibc otherwise raises the threshold as they are freed and keeps them: 1.3 MB under probe load).
// The system's CA store (OpenSSL's default paths, which kubelet's Go trusts too), not Node's bundled Mozilla roots:
// loading `tls` (grpc-js does) otherwise parses all of those, and NODE_EXTRA_CA_CERTS's, at once into about 1 MB kept
// for the process's life, for TLS clients the agent does not have (API servers come with their CA; probes do not
// verify, as kubelet's do not).
// V8's memory saver mode is switched at run time by src/agent/heap-mode.ts. Run this file directly so all of these apply.
import '../dist/src/cli/main.js';
