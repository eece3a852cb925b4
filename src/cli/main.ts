// The `nodelet` command: runs the agent (default) or talks to a running one (`nodelet pods`).
import { join, resolve } from 'node:path';
import { Agent, AgentConfigError, statusSocketPath } from '../agent/agent.js';
import type { AgentConfig } from '../agent/agent-config.js';
import { KubeletConfigError, loadKubeletConfiguration, resolveKubeletConfiguration, type KubeletConfiguration } from '../agent/kubelet-config.js';
import { fetchPods, watchPods } from '../agent/status-api.js';
import { KubeconfigError } from '../kubeapi/kubeconfig.js';
import { configureLogger, type LogFormat, type Logger } from '../core/log.js';
import { joinFlags, joinUsage } from './join-flags.js';
import { agentFlags, defaultCniConfDir, flagUsage, FlagError, parseFlags, type FlagSpec } from './flags.js';
import { parseGoDuration } from '../core/duration.js';
import { canonicalIP } from '../core/ip.js';
import { formatPodJson, formatPodTable, PodWatchPrinter } from './print-pods.js';

const podsFlags: FlagSpec[] = [
  { name: 'root-dir', kind: 'string', default: '/var/lib/nodelet', help: 'Root dir of the running agent (its status socket is there)' },
  { name: 'output', kind: 'string', default: '', help: 'Output format: wide or json (-o)' },
  { name: 'o', kind: 'string', default: '', help: 'Short for --output' },
  { name: 'watch', kind: 'bool', default: '', help: 'After listing the pods, print each change until interrupted (-w)' },
  { name: 'w', kind: 'bool', default: '', help: 'Short for --watch' },
];

const usage = `nodelet: a kubelet-style node agent for containerd

Usage:
  nodelet --pod-manifest-path DIR --container-runtime-endpoint unix:///PATH [flags]
  nodelet --kubeconfig FILE [--hostname-override NAME] [--node-ip IP] [--config FILE] [flags]
  nodelet pods [-o wide|json] [-w] [--root-dir DIR]
  ${joinUsage}

Agent flags:
${flagUsage(agentFlags)}

Join flags (kubeadm join's; agent flags are passed on to the agent join starts):
${flagUsage(joinFlags)}
`;

function verbosityLevel(v: number): string {
  return v >= 4 ? 'trace' : v >= 2 ? 'debug' : 'info';
}

/** The agent's settings: flags, with the KubeletConfiguration's values for the settings it carries (flags win when given). */
function agentConfig(values: Map<string, string>, kubelet: KubeletConfiguration): AgentConfig {
  const get = (name: string) => values.get(name) ?? '';
  return {
    kubeconfig: get('kubeconfig'),
    configFile: get('config'),
    bootstrapKubeconfig: get('bootstrap-kubeconfig'),
    podManifestPath: kubelet.staticPodPath,
    runtimeEndpoint: kubelet.containerRuntimeEndpoint,
    rootDir: get('root-dir'),
    hostnameOverride: get('hostname-override'),
    nodeIP: nodeIPFlag(get('node-ip')),
    podCIDR: kubelet.podCIDR,
    cniConfDir: get('cni-conf-dir'),
    podCidrInConfDir: resolve(get('cni-conf-dir')) === defaultCniConfDir || kubelet.podCIDR !== '',
    cniBinDirs: get('cni-bin-dir').split(',').map((d) => d.trim()).filter(Boolean),
    cniCacheDir: get('cni-cache-dir'),
    cniSocket: get('cni-socket'),
    spawnHelper: get('spawn-helper'),
    podLogsDir: kubelet.podLogsDir,
    certDir: get('cert-dir') || join(get('root-dir'), 'pki'),
    runtimeRequestTimeoutMs: kubelet.runtimeRequestTimeoutMs,
    syncFrequencyMs: kubelet.syncFrequencyMs,
    fileCheckFrequencyMs: kubelet.fileCheckFrequencyMs,
    relistPeriodMs: parseGoDuration(get('relist-period')),
    imageGCPeriodMs: positiveDuration('image-gc-period', get('image-gc-period')),
    housekeepingIntervalMs: positiveDuration('housekeeping-interval', get('housekeeping-interval')),
    kubelet,
  };
}

/** --node-ip as kubelet parses it: empty, or an IP address. */
function nodeIPFlag(text: string): string {
  if (text && !canonicalIP(text)) throw new FlagError(`invalid --node-ip "${text}": must be a valid IP address`);
  return text;
}

function positiveDuration(flag: string, text: string): number {
  const ms = parseGoDuration(text);
  if (ms <= 0) throw new FlagError(`invalid --${flag} "${text}": must be greater than 0`);
  return ms;
}

/** The logger the agent's --logging-format and --v ask for. */
function agentLogger(values: Map<string, string>): Logger {
  const format = values.get('logging-format') as LogFormat | '';
  if (format && format !== 'json' && format !== 'text') throw new FlagError(`invalid --logging-format "${format}": use json or text`);
  return configureLogger({ ...(format ? { format } : {}), level: verbosityLevel(Number(values.get('v'))) });
}

/**
 * An AbortSignal that SIGINT or SIGTERM aborts. Until then a stray rejected promise (a bug: the sources, workers and
 * controllers catch their own errors) is logged, not fatal: the pods the agent runs are worth more than a clean exit.
 */
function shutdownSignal(log: Logger): AbortSignal {
  process.on('unhandledRejection', (err) => log.error({ err }, 'Unhandled promise rejection (a bug); the agent keeps running'));
  const controller = new AbortController();
  for (const sig of ['SIGINT', 'SIGTERM'] as const) {
    process.once(sig, () => {
      log.info({ signal: sig }, 'Shutting down');
      controller.abort();
    });
  }
  return controller.signal;
}

/** `nodelet join`: joins the cluster, then runs the agent with what it wrote. */
async function joinAndRun(argv: string[]): Promise<number> {
  const log = agentLogger(parseFlags(argv, [...joinFlags, ...agentFlags]).values);
  const signal = shutdownSignal(log);
  let agentArgv: string[];
  try {
    // Loaded only for a join: the agent does not carry discovery and bootstrap code it never runs.
    agentArgv = await (await import('./join.js')).joinCluster(argv, log, signal);
  } catch (err) {
    if (err instanceof FlagError) throw err;
    // For the person who ran it, as kubeadm prints a failed join: the message itself, not a (quoted) log line.
    process.stderr.write(`nodelet join failed: ${(err as Error).message}\n`);
    return err instanceof Error && err.name === 'BootstrapInputError' ? 2 : 1;
  }
  return runAgent(agentArgv, { log, signal });
}

async function runAgent(argv: string[], started?: { log: Logger; signal: AbortSignal }): Promise<number> {
  const { values, positional, explicit } = parseFlags(argv, agentFlags);
  if (positional.length > 0) throw new FlagError(`unexpected argument: ${positional[0]}`);
  const log = started?.log ?? agentLogger(values);
  const signal = started?.signal ?? shutdownSignal(log);
  try {
    const configFile = values.get('config');
    const file = configFile ? await loadKubeletConfiguration(configFile) : undefined;
    // Fields accepted but not honoured: one warning each, naming the field (as kubelet logs its lenient decoding).
    for (const warning of file?.warnings ?? []) log.warn(warning);
    const kubelet = resolveKubeletConfiguration(file, values, explicit);
    await new Agent(agentConfig(values, kubelet), log).run(signal);
    return 0;
  } catch (err) {
    // A bad flag value found with the configuration file's values: told as the flags' errors are, with usage.
    if (err instanceof FlagError) throw err;
    if (err instanceof AgentConfigError || err instanceof KubeconfigError || err instanceof KubeletConfigError) {
      log.fatal(err.message);
      return 2;
    }
    log.fatal({ err }, 'nodelet failed');
    return 1;
  }
}

async function listPods(argv: string[]): Promise<number> {
  const { values, positional } = parseFlags(argv, podsFlags);
  if (positional.length > 0) throw new FlagError(`unexpected argument: ${positional[0]}`);
  const output = values.get('output') || values.get('o') || '';
  if (output !== '' && output !== 'wide' && output !== 'json') throw new FlagError(`unknown output format "${output}": use wide or json`);
  const socket = statusSocketPath(values.get('root-dir')!);
  if (values.get('watch') === 'true' || values.get('w') === 'true') return watchPodList(socket, output);
  const pods = await fetchPods(socket);
  if (output === 'json') {
    process.stdout.write(formatPodJson(pods));
  } else if (pods.length === 0) {
    process.stderr.write('No resources found\n');
  } else {
    process.stdout.write(formatPodTable(pods, { wide: output === 'wide', now: new Date(), showNamespace: true }));
  }
  return 0;
}

/** `nodelet pods -w`: the pods, then their changes as the agent's watch tells them, until SIGINT or SIGTERM. */
async function watchPodList(socket: string, output: '' | 'wide' | 'json'): Promise<number> {
  const interrupted = new AbortController();
  for (const sig of ['SIGINT', 'SIGTERM'] as const) process.once(sig, () => interrupted.abort());
  const printer = new PodWatchPrinter({ output, showNamespace: true });
  await watchPods(socket, { signal: interrupted.signal, sendInitialEvents: true }, (event) => {
    process.stdout.write(printer.print(event, new Date()));
  });
  return 0;
}

async function main(argv: string[]): Promise<number> {
  if (argv[0] === '-h' || argv[0] === '--help' || argv[0] === 'help') {
    process.stdout.write(usage);
    return 0;
  }
  try {
    if (argv[0] === 'pods') return await listPods(argv.slice(1));
    if (argv[0] === 'join') return await joinAndRun(argv.slice(1));
    return await runAgent(argv);
  } catch (err) {
    if (err instanceof FlagError) {
      process.stderr.write(`nodelet: ${err.message}\nRun 'nodelet --help' for usage.\n`);
      return 2;
    }
    process.stderr.write(`nodelet: ${err instanceof Error ? err.message : String(err)}\n`);
    return 1;
  }
}

process.exit(await main(process.argv.slice(2)));
