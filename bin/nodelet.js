#!/bin/sh
":" //; node="$(dirname "$(readlink -f "$0")")/../node_modules/node/bin/node"; [ -x "$node" ] || { echo "nodelet: the project's Node is missing at $node (run npm ci in $(dirname "$(readlink -f "$0")")/..)" >&2; exit 127; }; MALLOC_ARENA_MAX=2 MALLOC_MMAP_THRESHOLD_=32768 exec "$node" --max-semi-space-size=1 --max-old-space-size=512 --no-turbofan --no-sparkplug --no-concurrent-recompilation --use-openssl-ca "$0" "$@"
// Entry point: the compiled CLI lives in dist/ (built by `npm ci` through the prepare script).
// Run as a program, this file is first read by sh (the line above): it starts the Node the project pins through npm
// (node_modules/node), never whatever `node` comes first on PATH (the system's may be end-of-life, a bare machine or a
// systemd unit has none), and then this same file as JavaScript, where that line is only a string and a comment.
// One optimizing tier, Maglev: no TurboFan and no Sparkplug baseline code. The agent's JavaScript is glue between system
// calls, gRPC and JSON; under probe load TurboFan bought it no CPU while its pages of the Node binary, its code and the
// built-ins its code calls cost about 5 MB of RSS, and Sparkplug's baseline code 2-4 MB of code space. Maglev stays: the
// hot loops left are protobuf decoding of relists and stats (220 containers: 0.85 ms with Maglev alone, 1.2 ms with
// TurboFan too, 3.6 ms interpreted), where a stats scrape's and a 110-pod node's CPU goes. Optimizing compiles run on
// the main thread: on a background thread their zone memory (6-9 MB when a burst of pod stops makes the teardown paths
// hot) stays in that thread's malloc arena after the job.
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
