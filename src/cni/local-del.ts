// The shim's DEL fallback when the agent is down: deletes a sandbox's networks from the agent's result cache.
// Run as `node dist/src/cni/local-del.js` with the CNI environment and the shim's config on stdin.
// NODELET_CNI_CACHE_DIR and NODELET_CNI_BIN_DIRS override the cache directory and plugin directories
// (defaults: the agent's defaults; CNI_PATH is searched after them).
import { text } from 'node:stream/consumers';
import { logger } from '../core/log.js';
import { DEFAULT_CNI_CACHE_DIR } from './cache.js';
import { CniExecutor, DEFAULT_CNI_BIN_DIRS, parseBinDirs } from './executor.js';
import { CniError, CniErrorCode } from './types.js';

/** containerd gives a plugin's DEL its own deadline; finishing inside a minute keeps our answer the one it sees. */
const DEADLINE_MS = 60_000;

interface ShimConf {
  cniVersion: string;
  type: string;
  name: string;
}

function readShimConf(stdin: string): ShimConf {
  let parsed: unknown;
  try {
    parsed = JSON.parse(stdin);
  } catch (err) {
    throw new CniError({ code: CniErrorCode.DecodingFailure, msg: 'network configuration on stdin is not JSON', cause: err });
  }
  const conf = (typeof parsed === 'object' && parsed !== null ? parsed : {}) as Record<string, unknown>;
  return {
    cniVersion: typeof conf.cniVersion === 'string' ? conf.cniVersion : '1.0.0',
    type: typeof conf.type === 'string' ? conf.type : 'nodelet-cni',
    name: typeof conf.name === 'string' ? conf.name : '',
  };
}

/** Deletes every attachment nodelet cached for the container; returns how many there were. */
async function localDel(env: NodeJS.ProcessEnv, shim: ShimConf, signal: AbortSignal): Promise<number> {
  if (env.CNI_COMMAND !== 'DEL') {
    throw new CniError({
      code: CniErrorCode.InvalidEnvironment,
      msg: `CNI_COMMAND ${env.CNI_COMMAND ?? '(unset)'}: the local fallback only performs DEL`,
    });
  }
  const containerId = env.CNI_CONTAINERID ?? '';
  if (containerId === '') throw new CniError({ code: CniErrorCode.InvalidEnvironment, msg: 'missing environment variables: CNI_CONTAINERID' });

  const binDirs = [
    ...(env.NODELET_CNI_BIN_DIRS ? parseBinDirs(env.NODELET_CNI_BIN_DIRS) : DEFAULT_CNI_BIN_DIRS),
    ...parseBinDirs(env.CNI_PATH ?? ''),
  ];
  const executor = new CniExecutor({ binDirs, cacheDir: env.NODELET_CNI_CACHE_DIR || DEFAULT_CNI_CACHE_DIR });
  const attachments = (await executor.cachedAttachments({ containerId })).filter(
    // Only what the agent made: containerd keeps its own records (of the shim's network) in the same
    // directory, and running the shim from here would loop back into this fallback.
    (a) => a.managed && a.networkName !== shim.name && !a.config.plugins.some((p) => p.type === shim.type),
  );
  // The pod interface before loopback, as the agent tears a pod down.
  attachments.sort((a, b) => Number(a.ifName === 'lo') - Number(b.ifName === 'lo'));
  const netns = env.CNI_NETNS ?? '';
  for (const attachment of attachments) {
    await executor.delCached(attachment, { netns, signal });
  }
  return attachments.length;
}

async function main(): Promise<void> {
  let cniVersion = '1.0.0';
  try {
    const shim = readShimConf(await text(process.stdin));
    cniVersion = shim.cniVersion;
    const deleted = await localDel(process.env, shim, AbortSignal.timeout(DEADLINE_MS));
    logger.info({ sandboxId: process.env.CNI_CONTAINERID, attachments: deleted }, 'CNI DEL done without the agent');
  } catch (err) {
    const cniError =
      err instanceof CniError
        ? err
        : new CniError({ code: CniErrorCode.Internal, msg: err instanceof Error ? err.message : String(err), cause: err });
    logger.error({ err: cniError, sandboxId: process.env.CNI_CONTAINERID }, 'CNI DEL without the agent failed');
    process.stdout.write(JSON.stringify(cniError.toCniJson(cniVersion)));
    process.exitCode = 1;
  }
}

await main();
