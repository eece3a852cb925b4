// The bench's command line: its options, their parsing and the usage text.

export type Phase = 'startup' | 'probes' | 'cluster' | 'api' | 'pull';
/** Beside nodelet: the raw CRI floor (always) and the real kubelet (skipped with --peers floor). */
export type Peer = 'floor' | 'kubelet';

export interface Options {
  /** The phases to run: all by default. */
  phases: Set<Phase>;
  peers: Set<Peer>;
  reps: number;
  pods: number;
  /** The large burst: this many pods at once (0: not measured), --big-reps times. */
  bigPods: number;
  bigReps: number;
  /** The density phase: the steady state with the --big-pods pods running, this long (0: not measured). */
  densitySeconds: number;
  probePods: number;
  probeSeconds: number;
  /** Diagnosis: where to write a CPU profile of the agent over the probe-load window ('' for none). */
  agentCpuProf: string;
  /** Diagnosis: where to write a sampling heap profile (what the window's allocations left alive) ('' for none). */
  agentHeapProf: string;
  json: boolean;
  /** Measure even while other agents or test runs are active (their load is noise; each is noted), instead of waiting. */
  noWait: boolean;
  /** Cluster phase: the pods get the default service account token volume (as kube's admission gives any pod). */
  saToken: boolean;
  agentV: number;
  agentLog: string;
  kubeletLog: string;
  /** The agent's KubeletConfiguration (--config), e.g. cgroupDriver systemd beside a containerd with SystemdCgroup ('' for none). */
  agentConfig: string;
}

export const usage = `usage: node dist/bench/bench.js [--only startup|probes|cluster|api|pull] [--peers floor[,kubelet]] [--reps N] [--pods N] [--big-pods N]
         [--big-reps N] [--density-seconds N] [--probe-pods N] [--probe-seconds N] [--json] [--no-wait] [--sa-token] [--agent-v N] [--agent-log FILE] [--kubelet-log FILE]
         [--agent-config FILE] [--agent-cpu-prof FILE] [--agent-heap-prof FILE]
  --only P     run only these phases (comma-separated): startup (floor vs nodelet start-up latency, peak RSS), probes (the agent's CPU and
               RSS with probed pods running) or cluster (pod startup SLI through the real API server vs the floor, API
               requests per pod) or api (the kubelet API through the real control plane: exec and /run round trips, logs -f
               latency, scrape cost with 110 pods) or pull (a 50 MiB image from a loopback registry through nodelet vs ctr
               images pull into a fresh store, 10 pods of one new image at once); all five by default, in that order
  --peers L    nodelet's peers: floor (the raw CRI floor, always) and kubelet (the real kubelet of npm run kube:build, standalone on a
               containerd of its own, in the startup and probes phases); default floor,kubelet
  --reps N     repetitions of each start-up measurement (default 5)
  --pods N     pods started at once in the parallel case (default 30)
  --big-pods N pods started at once in the large case (default 110, kubelet's maxPods; 0: not measured)
  --big-reps N repetitions of the large case (default 3); their removal (all at once, until nothing is left) is timed
               beside the floor's own teardown
  --density-seconds N  after the last large case's start, nodelet's steady state with all of them running this long:
               relist duration (its /metrics, kubelet API on a loopback port), CPU and RSS (default 120; 0: not measured)
  --probe-pods N     pods running during the probe-load window (default 30)
  --probe-seconds N  length of the probe-load window (default 120)
  --json       print the figures as JSON on stdout (the table then goes to stderr)
  --no-wait    start even while other nodelet agents or test runs are active (on their own containerd and CNI socket:
               an agent on the rig's main one is still waited for); their CPU load is noise in the figures, and each is noted
  --sa-token   cluster phase: let the API pods mount the default service account token (kube's default; the floor's pods
               and the other phases' have no volume), so the figures include the token and kube-root-ca.crt requests
  --agent-v N  the agent's log verbosity (-v), for diagnosis only (default 0)
  --agent-log FILE  also write the agent's log lines to FILE, for diagnosis
  --agent-config FILE  the agent's KubeletConfiguration (--config): its cgroupDriver must be the rig's containerd's
               (systemd where scripts/runtime.sh ran with NODELET_CGROUP_DRIVER=systemd, as in the VM's bench), and on
               a cgroup v1 host it must set failCgroupV1: false (without this option the agent gets a file saying so)
  --kubelet-log FILE  also write kubelet's log (-v 2) to FILE, for diagnosis
  --agent-cpu-prof FILE  diagnosis: start the agent with an inspector on a loopback port and write a V8 CPU profile of
               the probe-load window to FILE (a .cpuprofile, for Chrome DevTools); a summary is printed. The profiler's own
               cost is in the CPU figures of that run. In the api phase: one profile per scraped path (FILE-<path>), and
               the agent's JS heap before and after a full GC once each path's scrapes end.
  --agent-heap-prof FILE  diagnosis: the same inspector; a V8 sampling heap profile of the window written to FILE (a
               .heapprofile: the allocations of the window still alive after a full GC at its end), with the agent's
               JS heap / native split every 10 s and its RSS after that GC. Either option adds those memory figures.
               In the api phase: one per scraped path (FILE-<path>), as --agent-cpu-prof.
With -v 2 or more the agent logs every successful probe, and the bench counts the probe runs (the logging costs CPU).
Needs the rig's containerds: bash scripts/runtime.sh up && NODELET_RUNTIME_INSTANCE=floor bash scripts/runtime.sh up
  (and with kubelet NODELET_RUNTIME_INSTANCE=kubelet bash scripts/runtime.sh up, and its binary: npm run kube:build)`;

export function parseOptions(argv: string[]): Options {
  const opts: Options = {
    phases: new Set(['startup', 'probes', 'cluster', 'api', 'pull']), peers: new Set(['floor', 'kubelet']), reps: 5, pods: 30, bigPods: 110, bigReps: 3, densitySeconds: 120, probePods: 30, probeSeconds: 120, agentCpuProf: '', agentHeapProf: '',
    json: false, noWait: false, saToken: false, agentV: 0, agentLog: '', kubeletLog: '', agentConfig: '',
  };
  const int = intFlag;
  eachFlag(argv, (flag, value, arg) => {
    switch (flag) {
      case '--reps': opts.reps = int(flag, value(), 1); break;
      case '--pods': opts.pods = int(flag, value(), 1); break;
      case '--big-pods': opts.bigPods = int(flag, value(), 0); break;
      case '--big-reps': opts.bigReps = int(flag, value(), 1); break;
      case '--density-seconds': opts.densitySeconds = int(flag, value(), 0); break;
      case '--peers': {
        const peers = (value() ?? '').split(',').filter(Boolean);
        if (!peers.includes('floor') || peers.some((p) => p !== 'floor' && p !== 'kubelet')) throw new UsageError('--peers needs floor, optionally with kubelet');
        opts.peers = new Set(peers as Peer[]);
        break;
      }
      case '--probe-pods': opts.probePods = int(flag, value(), 1); break;
      case '--probe-seconds': opts.probeSeconds = int(flag, value(), 10); break;
      case '--only': {
        const phases = (value() ?? '').split(',');
        if (phases.some((p) => !['startup', 'probes', 'cluster', 'api', 'pull'].includes(p))) throw new UsageError('--only needs startup, probes, cluster, api or pull (or several, comma-separated)');
        opts.phases = new Set(phases as Phase[]);
        break;
      }
      case '--agent-cpu-prof': opts.agentCpuProf = value() ?? ''; if (!opts.agentCpuProf) throw new UsageError('--agent-cpu-prof needs a file'); break;
      case '--agent-heap-prof': opts.agentHeapProf = value() ?? ''; if (!opts.agentHeapProf) throw new UsageError('--agent-heap-prof needs a file'); break;
      case '--agent-v': opts.agentV = int(flag, value(), 0); break;
      case '--agent-log': opts.agentLog = value() ?? ''; if (!opts.agentLog) throw new UsageError('--agent-log needs a file'); break;
      case '--agent-config': opts.agentConfig = value() ?? ''; if (!opts.agentConfig) throw new UsageError('--agent-config needs a file'); break;
      case '--kubelet-log': opts.kubeletLog = value() ?? ''; if (!opts.kubeletLog) throw new UsageError('--kubelet-log needs a file'); break;
      case '--json': opts.json = true; break;
      case '--no-wait': opts.noWait = true; break;
      case '--sa-token': opts.saToken = true; break;
      case '-h': case '--help': throw new UsageError('', 0);
      default: throw new UsageError(`unknown argument: ${arg}`);
    }
  });
  // The agent's pod subnet is a /24: leave room for pods of someone else's tests on the same containerd.
  if (opts.pods > 200 || opts.probePods > 200 || opts.bigPods > 200) throw new UsageError('--pods, --big-pods and --probe-pods are limited to 200 (the pod subnets are /24)');
  return opts;
}

/** Walks a command line of `--flag VALUE` and `--flag=VALUE`: `handle` gets each flag, its value (taken on demand) and the argument. */
export function eachFlag(argv: string[], handle: (flag: string, value: () => string | undefined, arg: string) => void): void {
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i]!;
    const [flag, inline] = arg.split('=', 2) as [string, string | undefined];
    handle(flag, () => inline ?? argv[++i], arg);
  }
}

export function intFlag(flag: string, value: string | undefined, min: number): number {
  if (value === undefined || !/^\d+$/.test(value) || Number(value) < min) throw new UsageError(`${flag} needs an integer >= ${min}`);
  return Number(value);
}

/** Parses the command line; on a usage error prints it with the usage text and gives the exit status instead. */
export function parseCommandLine<T>(command: string, usageText: string, parse: (argv: string[]) => T): { opts: T } | { exitCode: number } {
  try {
    return { opts: parse(process.argv.slice(2)) };
  } catch (err) {
    if (!(err instanceof UsageError)) throw err;
    if (err.message) process.stderr.write(`${command}: ${err.message}\n`);
    (err.exitCode === 0 ? process.stdout : process.stderr).write(`${usageText}\n`);
    return { exitCode: err.exitCode };
  }
}

export class UsageError extends Error {
  constructor(message: string, readonly exitCode = 2) {
    super(message);
  }
}
