// npm run control-plane -- up --dir DIR [--apiserver-port N] [--etcd-client-port N] [--etcd-peer-port N]
//                              [--etcd-metrics-port N] [--controller-manager-port N] [--scheduler-port N]
//                              [--service-cidr CIDR] [--cluster-cidr CIDR] [--node-cidr-mask-size N] [--bin-dir DIR]
//                              [--signing-duration DURATION]
// npm run control-plane -- down --dir DIR
// npm run control-plane -- node-credentials --dir DIR NAME
import { parseArgs } from 'node:util';
import { down, nodeCredentials, runningPids, up, type UpOptions } from './control-plane.js';

const USAGE = `usage: control-plane up --dir DIR [--apiserver-port N] [--etcd-client-port N] [--etcd-peer-port N]
                        [--etcd-metrics-port N] [--controller-manager-port N] [--scheduler-port N]
                        [--service-cidr CIDR] [--cluster-cidr CIDR] [--node-cidr-mask-size N] [--bin-dir DIR]
                        [--signing-duration DURATION]
       control-plane down --dir DIR
       control-plane status --dir DIR
       control-plane node-credentials --dir DIR NAME`;

async function main(argv: string[]): Promise<number> {
  const { values, positionals } = parseArgs({
    args: argv,
    allowPositionals: true,
    options: {
      dir: { type: 'string' },
      'bin-dir': { type: 'string' },
      'apiserver-port': { type: 'string' },
      'etcd-client-port': { type: 'string' },
      'etcd-peer-port': { type: 'string' },
      'etcd-metrics-port': { type: 'string' },
      'controller-manager-port': { type: 'string' },
      'scheduler-port': { type: 'string' },
      'service-cidr': { type: 'string' },
      'cluster-cidr': { type: 'string' },
      'node-cidr-mask-size': { type: 'string' },
      'signing-duration': { type: 'string' },
      help: { type: 'boolean', short: 'h' },
    },
  });
  const [command, ...rest] = positionals;
  if (values.help || !command) {
    console.log(USAGE);
    return values.help ? 0 : 2;
  }
  const dir = values.dir;
  if (!dir) throw new Error(`--dir is required\n${USAGE}`);
  const num = (name: keyof typeof values): number | undefined => {
    const v = values[name];
    if (v === undefined) return undefined;
    const n = Number(v);
    if (!Number.isInteger(n) || n <= 0 || n > 65535) throw new Error(`--${name}: not a port or size: ${String(v)}`);
    return n;
  };
  switch (command) {
    case 'up': {
      const opts: UpOptions = {
        dir,
        binDir: values['bin-dir'],
        apiServerPort: num('apiserver-port'),
        etcdClientPort: num('etcd-client-port'),
        etcdPeerPort: num('etcd-peer-port'),
        etcdMetricsPort: num('etcd-metrics-port'),
        controllerManagerPort: num('controller-manager-port'),
        schedulerPort: num('scheduler-port'),
        serviceCidr: values['service-cidr'],
        clusterCidr: values['cluster-cidr'],
        nodeCidrMaskSize: num('node-cidr-mask-size'),
        signingDuration: values['signing-duration'],
        log: (line) => console.error(line),
      };
      const cp = await up(opts);
      console.log(`API server ${cp.server} is ready (binaries in ${cp.binDir})`);
      console.log(`kubectl --kubeconfig ${cp.adminKubeconfig} get nodes`);
      console.log(`join: ${cp.joinCommand}`);
      console.log(`logs in ${cp.dir}/logs; stop with: npm run control-plane -- down --dir ${cp.dir}`);
      return 0;
    }
    case 'down': {
      const stopped = await down(dir, (line) => console.error(line));
      console.log(stopped.length ? `stopped ${stopped.join(', ')}` : 'nothing was running');
      return 0;
    }
    case 'status': {
      const pids = await runningPids(dir);
      for (const [component, pid] of Object.entries(pids)) console.log(`${component} ${pid}`);
      return Object.keys(pids).length ? 0 : 1;
    }
    case 'node-credentials': {
      const [name] = rest;
      if (!name) throw new Error(`node-credentials needs a node name\n${USAGE}`);
      console.log(await nodeCredentials(dir, name));
      return 0;
    }
    default:
      throw new Error(`unknown command ${command}\n${USAGE}`);
  }
}

main(process.argv.slice(2)).then(
  (code) => { process.exitCode = code; },
  (err: unknown) => {
    console.error(`control-plane: ${err instanceof Error ? err.message : String(err)}`);
    process.exitCode = 1;
  },
);
