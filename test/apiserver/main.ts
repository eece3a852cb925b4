// `npm run test-apiserver -- --dir DIR --node NAME [--port N] [--audit-log-path FILE]`: the test API server in the foreground.
import { copyFile } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { startTestApiServer } from './test-apiserver.js';

const USAGE = 'usage: npm run test-apiserver -- --dir DIR --node NAME [--port N] [--audit-log-path FILE]';

async function main(): Promise<void> {
  let values;
  try {
    ({ values } = parseArgs({
      options: {
        dir: { type: 'string' },
        node: { type: 'string', multiple: true },
        port: { type: 'string' },
        'audit-log-path': { type: 'string' },
        help: { type: 'boolean' },
      },
      strict: true,
    }));
  } catch (err) {
    console.error(`${err instanceof Error ? err.message : String(err)}\n${USAGE}`);
    process.exit(2);
  }
  if (values.help) {
    console.log(USAGE);
    return;
  }
  if (!values.dir || !values.node || values.node.length === 0) {
    console.error(USAGE);
    process.exit(2);
  }
  const dir = resolve(values.dir);
  const port = values.port === undefined ? 6443 : Number(values.port);
  if (!Number.isInteger(port) || port < 0 || port > 65535) {
    console.error(`--port: not a port: ${values.port}\n${USAGE}`);
    process.exit(2);
  }
  const nodes = values.node;
  const server = await startTestApiServer({
    dir,
    nodeNames: nodes,
    port,
    ...(values['audit-log-path'] ? { auditLogPath: resolve(values['audit-log-path']) } : {}),
  });
  // The first node's identity is also DIR/node.kubeconfig, the name nodelet's docs use.
  const nodeKubeconfig = join(dir, 'node.kubeconfig');
  await copyFile(server.nodeKubeconfig(nodes[0] as string), nodeKubeconfig);
  console.log(`test API server (kube-apiserver v1.32 subset) serving at ${server.url}, state in ${dir}`);
  console.log(`  kubectl:  kubectl --kubeconfig ${server.adminKubeconfig} get nodes`);
  console.log(`  nodelet:  nodelet --kubeconfig ${nodeKubeconfig} --hostname-override ${nodes[0] as string}`);
  for (const n of nodes.slice(1)) console.log(`  node ${n}: ${server.nodeKubeconfig(n)}`);
  console.log('  bind a pod as the scheduler would:');
  console.log(`    echo '{"apiVersion":"v1","kind":"Binding","metadata":{"name":"POD"},"target":{"kind":"Node","name":"${nodes[0] as string}"}}' | kubectl --kubeconfig ${server.adminKubeconfig} create --raw /api/v1/namespaces/default/pods/POD/binding -f -`);
  console.log('Ctrl-C stops it; the state survives a restart with the same --dir.');
  const stop = (): void => {
    void server.suspend().then(() => process.exit(0));
  };
  process.once('SIGINT', stop);
  process.once('SIGTERM', stop);
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
