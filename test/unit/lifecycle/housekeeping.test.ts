// Housekeeping's schedule on a fake clock: pod directories every 2 s, pod cgroups (once the sources have spoken) and
// network attachments and forgotten shims every minute, none beside its own previous run.
import { pino } from 'pino';
import type { GarbageCollectReport } from '../../../src/cni/executor.js';
import { Housekeeping, orphanCollectionIntervalMs, podDirSweepIntervalMs, type HousekeepingDeps } from '../../../src/lifecycle/housekeeping.js';
import type { NodeRuntimeSnapshot } from '../../../src/lifecycle/runtime-observer.js';
import { FakeClock, settle } from '../core/fake-clock.js';

/** A collection the test finishes by hand, so it can hold one "still running". */
function pending<T>(value: T) {
  const calls: { finish: () => void }[] = [];
  const run = () =>
    new Promise<T>((resolve) => {
      calls.push({ finish: () => resolve(value) });
    });
  return { calls, run, finishAll: () => calls.forEach((c) => c.finish()) };
}

function setup() {
  const clock = new FakeClock(0);
  const dirs = pending<string[]>([]);
  const cgroups = pending({ removed: [] as string[], failed: [] as { uid: string; error: string }[] });
  const network = pending<GarbageCollectReport>({ removed: [], failed: [] });
  const networkSandboxes: string[][] = [];
  const shims = pending<[]>([]);
  const shimKnownIds: string[][] = [];
  const pods = { desiredPodsKnown: false, isKnown: (_uid: string) => true };
  /** Each user namespace sweep, with what the pod directory sweep before it had finished by then. */
  const usernsSweeps: { afterDirs: number }[] = [];
  let dirsFinished = 0;
  const deps: HousekeepingDeps = {
    clock,
    log: pino({ level: 'silent' }),
    pods,
    volumes: { removeOrphanedPodDirs: () => dirs.run().finally(() => dirsFinished++) },
    userNamespaces: {
      releaseOrphans: async () => {
        usernsSweeps.push({ afterDirs: dirsFinished });
        return [];
      },
    },
    podCgroups: { garbageCollect: cgroups.run },
    podNetwork: {
      garbageCollect: (ids: Set<string>) => {
        networkSandboxes.push([...ids]);
        return network.run();
      },
    },
    shims: {
      collect: (ids: ReadonlySet<string>) => {
        shimKnownIds.push([...ids]);
        return shims.run();
      },
    },
  };
  const housekeeping = new Housekeeping(deps);
  const snapshot = (...sandboxIds: string[]) => ({ sandboxes: sandboxIds.map((id) => ({ id })), containers: [] }) as unknown as NodeRuntimeSnapshot;
  const signal = new AbortController().signal;
  /** A relist at `at` ms, after the previous collections finished. */
  const relistAt = async (at: number, ...sandboxIds: string[]) => {
    clock.time = at;
    housekeeping.afterRelist(snapshot(...sandboxIds), signal);
    await settle();
  };
  const finishAll = async () => {
    dirs.finishAll();
    cgroups.finishAll();
    network.finishAll();
    shims.finishAll();
    await settle();
  };
  return { clock, dirs, cgroups, network, networkSandboxes, shims, shimKnownIds, pods, usernsSweeps, housekeeping, snapshot, signal, relistAt, finishAll };
}

test('the first relist sweeps pod directories and the pod network; cgroups wait until the desired pods are known', async () => {
  const t = setup();
  await t.relistAt(0, 's1');
  expect(t.dirs.calls).toHaveLength(1);
  expect(t.network.calls).toHaveLength(1);
  expect(t.networkSandboxes).toEqual([['s1']]);
  expect(t.cgroups.calls).toHaveLength(0);

  await t.finishAll();
  t.pods.desiredPodsKnown = true;
  await t.relistAt(1_000);
  expect(t.cgroups.calls).toHaveLength(1);
});

test(`pod directories are swept at most every ${podDirSweepIntervalMs} ms`, async () => {
  const t = setup();
  for (const at of [0, 1_000, 1_999, 2_000, 3_000, 4_000]) {
    await t.relistAt(at);
    await t.finishAll();
  }
  expect(t.dirs.calls).toHaveLength(3); // at 0, 2 000 and 4 000
});

test('user namespace ranges of orphaned pods are released after each pod directory sweep has finished', async () => {
  const t = setup();
  await t.relistAt(0);
  expect(t.usernsSweeps).toEqual([]);
  await t.finishAll();
  await t.relistAt(2_000);
  await t.finishAll();
  expect(t.usernsSweeps).toEqual([{ afterDirs: 1 }, { afterDirs: 2 }]);
});

test(`cgroups, network attachments and forgotten shims are collected at most every ${orphanCollectionIntervalMs} ms`, async () => {
  const t = setup();
  t.pods.desiredPodsKnown = true;
  for (const at of [0, 30_000, 59_999, 60_000, 90_000, 120_000]) {
    await t.relistAt(at, `s${at}`);
    await t.finishAll();
  }
  expect(t.cgroups.calls).toHaveLength(3);
  expect(t.networkSandboxes).toEqual([['s0'], ['s60000'], ['s120000']]);
  expect(t.shimKnownIds).toEqual([['s0'], ['s60000'], ['s120000']]);
});

test('the shim collection knows every sandbox and container the relist listed', async () => {
  const t = setup();
  t.housekeeping.afterRelist({ sandboxes: [{ id: 's1' }], containers: [{ id: 'c1' }, { id: 'c2' }] } as unknown as NodeRuntimeSnapshot, t.signal);
  await settle();
  expect(t.shimKnownIds).toEqual([['s1', 'c1', 'c2']]);
});

test('a collection still running is not started again, however long it takes; the next relist after it does', async () => {
  const t = setup();
  t.pods.desiredPodsKnown = true;
  await t.relistAt(0);
  await t.relistAt(120_000);
  expect([t.dirs.calls.length, t.cgroups.calls.length, t.network.calls.length, t.shims.calls.length]).toEqual([1, 1, 1, 1]);
  await t.finishAll();
  await t.relistAt(120_001);
  expect([t.dirs.calls.length, t.cgroups.calls.length, t.network.calls.length, t.shims.calls.length]).toEqual([2, 2, 2, 2]);
});

test('a failed collection is logged and does not stop the schedule', async () => {
  const t = setup();
  const calls = { dirs: 0, userns: 0, cgroups: 0, network: 0, shims: 0 };
  const fail = (what: keyof typeof calls) => () => (calls[what]++, Promise.reject(new Error('busy')));
  const failing = new Housekeeping({
    clock: t.clock,
    log: pino({ level: 'silent' }),
    pods: { desiredPodsKnown: true, isKnown: () => true },
    volumes: { removeOrphanedPodDirs: fail('dirs') },
    userNamespaces: { releaseOrphans: fail('userns') },
    podCgroups: { garbageCollect: fail('cgroups') },
    podNetwork: { garbageCollect: fail('network') },
    shims: { collect: fail('shims') },
  });
  failing.afterRelist(t.snapshot(), t.signal);
  await settle();
  t.clock.time = orphanCollectionIntervalMs;
  failing.afterRelist(t.snapshot(), t.signal);
  await settle();
  // The user namespace sweep runs even when the directory sweep failed.
  expect(calls).toEqual({ dirs: 2, userns: 2, cgroups: 2, network: 2, shims: 2 });
});
