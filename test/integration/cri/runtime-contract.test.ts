// The CRI runtime contract against the rig's containerd (bash scripts/runtime.sh up): proves the in-memory runtime of
// the unit tests (test/unit/fakes/in-memory-runtime.ts) answers as the real one does.
import { CriClient } from '../../../src/cri/client.js';
import { isUnavailable } from '../../../src/cri/errors.js';
import { runtimeContract } from '../../contract/runtime-contract.js';

const SOCKET = '/run/nodelet/containerd/containerd.sock';

/** Waits for the rig to answer (it may still be starting) rather than starting one. */
async function connect(): Promise<CriClient> {
  const client = new CriClient(`unix://${SOCKET}`);
  const until = Date.now() + 30_000;
  for (;;) {
    try {
      await client.version({ timeoutMs: 2_000 });
      return client;
    } catch (err) {
      if (!isUnavailable(err) || Date.now() > until) {
        client.close();
        throw new Error(`containerd at ${SOCKET} is not answering: run \`bash scripts/runtime.sh up\` first`, { cause: err });
      }
      await new Promise((r) => setTimeout(r, 500));
    }
  }
}

runtimeContract(async () => {
  const client = await connect();
  return {
    runtime: client,
    // The container's own command exits: wait until containerd has seen it.
    exitContainer: async (id) => {
      const until = Date.now() + 30_000;
      while ((await client.containerStatus(id)).state !== 'CONTAINER_EXITED') {
        if (Date.now() > until) throw new Error(`container ${id} did not exit within 30 s`);
        await new Promise((r) => setTimeout(r, 100));
      }
    },
    close: () => client.close(),
  };
});
