// The user namespace manager as kubelet's: the range checks and their messages, the allocator, the userns file, the
// refusals, recovery after a restart without double allocation, release and orphan clean-up.
import type { V1Pod } from '@kubernetes/client-node';
import { pino } from 'pino';
import type { RuntimeHandler } from '../../../src/cri/types.js';
import {
  defaultIdsPerPod,
  defaultKubeletRange,
  kernelSupportsTmpfsIdmap,
  mappingsFileContent,
  parseGetSubIdsOutput,
  parseMappingsFile,
  UserNamespaceAllocator,
  UserNamespaceManager,
  userNamespaceRefusal,
} from '../../../src/host/user-namespaces.js';
import { InMemoryMappingsStore } from '../fakes/lifecycle-deps.js';

const log = pino({ level: 'silent' });
const L = 65536;
const withUserns: RuntimeHandler[] = [{ name: '', recursiveReadOnlyMounts: true, userNamespaces: true }];

function pod(uid: string, hostUsers?: boolean): V1Pod {
  return { metadata: { name: uid, namespace: 'default', uid }, spec: { containers: [{ name: 'c' }], ...(hostUsers === undefined ? {} : { hostUsers }) } };
}

/** A random source that yields the given fractions in turn. */
function randoms(...values: number[]): () => number {
  let i = 0;
  return () => values[i++ % values.length]!;
}

describe('the kubelet range', () => {
  test("kubelet's default: every ID from 65536 up", () => {
    expect(defaultKubeletRange(defaultIdsPerPod)).toEqual({ firstId: 65536, length: 2 ** 32 - 65536 });
  });

  test("getsubids' one line: first ID and count; anything else is refused", () => {
    expect(parseGetSubIdsOutput('0: kubelet 65536 2147483648\n')).toEqual({ firstId: 65536, length: 2147483648 });
    expect(() => parseGetSubIdsOutput('0: kubelet 65536 65536\n1: kubelet 196608 65536\n')).toThrow(/it must contain only one line/);
    expect(() => parseGetSubIdsOutput('0: kubelet 65536')).toThrow(/^invalid line/);
    expect(() => parseGetSubIdsOutput('0: kubelet x 65536')).toThrow(/^error parsing line/);
  });

  test.each([
    [{ firstId: 65536, length: 65536 * 110 }, L, 110, undefined],
    [{ firstId: 65536, length: 65536 * 10 }, L, 110, 'kubelet user assigned IDs are not enough to support 110 pods'],
    [{ firstId: 1000, length: 65536 * 200 }, L, 110, 'kubelet user assigned ID 1000 is not a multiple of 65536'],
    [{ firstId: 0, length: 65536 * 200 }, L, 110, 'kubelet user assigned ID 0 must be greater or equal to 65536'],
    [{ firstId: 65536, length: 65536 * 200 + 1 }, L, 110, 'kubelet user assigned IDs length 13107201 is not a multiple of 65536'],
    [{ firstId: 65536, length: 65536 * 200 }, 1000, 110, 'kubelet user namespace length 1000 is not a multiple of 65536'],
  ])('range %j, %i IDs per pod, %i pods: %s', (range, idsPerPod, maxPods, message) => {
    const make = () => new UserNamespaceAllocator(range, idsPerPod, maxPods);
    if (message) expect(make).toThrow(message);
    else expect(make).not.toThrow();
  });
});

describe('the allocator', () => {
  const range = { firstId: 2 * L, length: 4 * L };

  test('a random start, then the next free slot, wrapping around; distinct ranges until none is left', () => {
    const a = new UserNamespaceAllocator(range, L, 4, randoms(0.5, 0.5, 0.99, 0.0, 0.7));
    expect(a.allocate('p1')).toBe(4 * L); // slot 2
    expect(a.allocate('p2')).toBe(5 * L); // slot 2 taken: slot 3
    expect(a.allocate('p3')).toBe(2 * L); // slot 3 taken: wraps to 0
    expect(a.allocate('p1')).toBe(4 * L); // the pod keeps its own
    expect(a.allocate('p4')).toBe(3 * L);
    expect(() => a.allocate('p5')).toThrow('could not find an empty slot to allocate a user namespace');
    expect(a.release('p2')).toBe(true);
    expect(a.release('p2')).toBe(false);
    expect(a.allocate('p5')).toBe(5 * L);
    expect(a.pods().sort()).toEqual(['p1', 'p3', 'p4', 'p5']);
  });

  test("record takes a pod's range again; a taken, misaligned, foreign or out-of-range one is refused", () => {
    const a = new UserNamespaceAllocator(range, L, 4, () => 0);
    a.record('p1', 3 * L, L);
    a.record('p1', 3 * L, L); // again: nothing changes
    expect(() => a.record('p2', 3 * L, L)).toThrow('range picked for pod "p2" already taken');
    expect(() => a.record('p1', 4 * L, L)).toThrow('different user namespace range already used by pod "p1"');
    expect(() => a.record('p3', 3 * L + 1, L)).toThrow('wrong user namespace offset specified');
    expect(() => a.record('p3', 4 * L, 2 * L)).toThrow('wrong user namespace length 131072');
    expect(() => a.record('p3', 9 * L, L)).toThrow(`id ${9 * L} is out of range`);
    expect(() => a.record('p3', L, L)).toThrow(`id ${L} is out of range`);
    // The recorded slot is not given to another pod.
    expect(a.allocate('p4')).toBe(2 * L);
    expect(a.allocate('p5')).toBe(4 * L);
  });
});

describe('the userns file', () => {
  test("kubelet's layout, read back", () => {
    const text = mappingsFileContent(3 * L, L);
    expect(JSON.parse(text)).toEqual({
      uidMappings: [{ hostId: 3 * L, containerId: 0, length: L }],
      gidMappings: [{ hostId: 3 * L, containerId: 0, length: L }],
    });
    expect(parseMappingsFile(text)).toEqual({ firstId: 3 * L, length: L });
  });

  test.each([
    ['not json', /^invalid user namespace mappings file:/],
    ['{"uidMappings":[],"gidMappings":[]}', 'no more than one mapping allowed.'],
    ['{"uidMappings":[{"hostId":65536,"containerId":0,"length":65536}],"gidMappings":[]}', 'GID and UID mappings should be identical.'],
    ['{"uidMappings":[{"hostId":65536,"containerId":0,"length":65536}],"gidMappings":[{"hostId":131072,"containerId":0,"length":65536}]}', 'GID and UID mapping should be identical'],
    ['{"uidMappings":[{"hostId":65536,"containerId":1,"length":65536}],"gidMappings":[{"hostId":65536,"containerId":1,"length":65536}]}', 'UID 0 must be mapped'],
    ['{"uidMappings":[{"hostId":-1,"containerId":0,"length":65536}],"gidMappings":[{"hostId":-1,"containerId":0,"length":65536}]}', /hostId -1 is not a 32-bit unsigned integer/],
  ])('%s is refused', (content, message) => {
    expect(() => parseMappingsFile(content)).toThrow(message);
  });
});

describe('refusals', () => {
  test('tmpfs is mounted idmapped from Linux 6.3', () => {
    expect(['6.1.0-28-amd64', '5.15.0', '6.2.16'].map(kernelSupportsTmpfsIdmap)).toEqual([false, false, false]);
    expect(['6.3.0', '6.12.48+deb13-amd64', '6.18.44-fc-v669', '7.0.1'].map(kernelSupportsTmpfsIdmap)).toEqual([true, true, true, true]);
  });

  test("kubelet's messages: no handlers, an unknown one, one without user namespaces; nodelet's kernel check", () => {
    const runtime = "can't set `spec.hostUsers: false`, runtime does not support user namespaces";
    expect(userNamespaceRefusal(withUserns, '', '6.12.0')).toBeUndefined();
    expect(userNamespaceRefusal([], '', '6.12.0')).toBe(runtime);
    expect(userNamespaceRefusal(undefined, '', '6.12.0')).toBe(runtime);
    expect(userNamespaceRefusal([{ ...withUserns[0]!, userNamespaces: false }], '', '6.12.0')).toBe(runtime);
    expect(userNamespaceRefusal(withUserns, 'kata', '6.12.0')).toBe(
      "can't set `spec.hostUsers: false`, RuntimeClass handler \"kata\" does not support user namespaces: the handler \"kata\" is not known",
    );
    expect(userNamespaceRefusal(withUserns, '', '6.1.0-28-amd64')).toBe(`${runtime}: the kernel 6.1.0-28-amd64 cannot mount tmpfs idmapped (Linux 6.3 or newer can)`);
  });
});

describe('the manager', () => {
  function manager(store: InMemoryMappingsStore, opts: { handlers?: () => Promise<RuntimeHandler[] | undefined>; kernel?: string; now?: () => number; random?: () => number } = {}) {
    return new UserNamespaceManager({
      store,
      range: { firstId: L, length: 8 * L },
      idsPerPod: L,
      maxPods: 8,
      handlers: opts.handlers ?? (async () => withUserns),
      now: opts.now ?? (() => 0),
      log,
      kernelRelease: opts.kernel ?? '6.12.0',
      random: opts.random ?? (() => 0),
    });
  }

  test("a pod in the host's user namespace gets none and no file; hostUsers false gets a range, written to its file", async () => {
    const store = new InMemoryMappingsStore();
    const m = manager(store);
    expect(await m.forPod(pod('host'))).toBeUndefined();
    expect(await m.forPod(pod('host-true', true))).toBeUndefined();
    const userns = await m.forPod(pod('a', false));
    expect(userns).toEqual({ mode: 'POD', uids: [{ hostId: L, containerId: 0, length: L }], gids: [{ hostId: L, containerId: 0, length: L }] });
    expect(await m.forPod(pod('a', false))).toEqual(userns);
    expect([...store.files.keys()]).toEqual(['a']);
    expect(parseMappingsFile(store.files.get('a')!)).toEqual({ firstId: L, length: L });
  });

  test('after a restart the pods\' files are taken again: the same range for the same pod, never for another', async () => {
    const store = new InMemoryMappingsStore();
    const before = manager(store);
    await before.forPod(pod('a', false));
    await before.forPod(pod('b', false));
    // A new manager whose random choice lands on the slots a and b hold.
    const after = manager(store, { random: () => 0 });
    await after.recover();
    expect((await after.forPod(pod('a', false)))!.uids[0]!.hostId).toBe(L);
    expect((await after.forPod(pod('b', false)))!.uids[0]!.hostId).toBe(2 * L);
    expect((await after.forPod(pod('c', false)))!.uids[0]!.hostId).toBe(3 * L);
  });

  test('a file that cannot be taken again fails the recovery naming the pod', async () => {
    const store = new InMemoryMappingsStore();
    await store.write('a', mappingsFileContent(L, L));
    await store.write('b', mappingsFileContent(L, L));
    await store.write('c', 'garbage');
    await expect(manager(store).recover()).rejects.toThrow('record pod mappings for existing pod "b": range picked for pod "b" already taken');
  });

  test("the runtime's refusal and the kernel's fail the pod with kubelet's message, allocating nothing", async () => {
    const store = new InMemoryMappingsStore();
    await expect(manager(store, { handlers: async () => [] }).forPod(pod('a', false))).rejects.toThrow(
      "can't set `spec.hostUsers: false`, runtime does not support user namespaces",
    );
    await expect(manager(store, { kernel: '6.1.0-28-amd64' }).forPod(pod('a', false))).rejects.toThrow(/cannot mount tmpfs idmapped/);
    await expect(manager(store, { handlers: () => Promise.reject(new Error('connection refused')) }).forPod(pod('a', false))).rejects.toThrow(
      "can't set `spec.hostUsers: false`, runtime does not support user namespaces: connection refused",
    );
    expect(store.files.size).toBe(0);
  });

  test("the handlers are asked at most every 5 s (kubelet's runtime status period); a failed answer is not kept", async () => {
    let now = 0;
    let asked = 0;
    let fail = true;
    const m = manager(new InMemoryMappingsStore(), {
      now: () => now,
      handlers: async () => {
        asked++;
        if (fail) throw new Error('down');
        return withUserns;
      },
    });
    await expect(m.forPod(pod('a', false))).rejects.toThrow(/down/);
    fail = false;
    await m.forPod(pod('a', false));
    await m.forPod(pod('a', false));
    now = 4_999;
    await m.forPod(pod('a', false));
    expect(asked).toBe(2);
    now = 5_000;
    await m.forPod(pod('a', false));
    expect(asked).toBe(3);
  });

  test('a file that cannot be written frees the range again', async () => {
    const store = new InMemoryMappingsStore();
    const m = manager(store);
    const write = store.write.bind(store);
    store.write = () => Promise.reject(new Error('no space left on device'));
    await expect(m.forPod(pod('a', false))).rejects.toThrow('create user namespace: no space left on device');
    store.write = write;
    expect((await m.forPod(pod('b', false)))!.uids[0]!.hostId).toBe(L);
  });

  test('a file that cannot be removed keeps its range taken (the release fails and is retried)', async () => {
    const store = new InMemoryMappingsStore();
    const m = manager(store);
    await m.forPod(pod('a', false));
    const remove = store.remove.bind(store);
    store.remove = () => Promise.reject(new Error('read-only file system'));
    await expect(m.release('a')).rejects.toThrow('read-only file system');
    expect((await m.forPod(pod('b', false)))!.uids[0]!.hostId).toBe(2 * L);
    store.remove = remove;
    await m.release('a');
    expect((await m.forPod(pod('c', false)))!.uids[0]!.hostId).toBe(L);
  });

  test('release frees the range and removes the file; orphans (not known, or without a directory) are released', async () => {
    const store = new InMemoryMappingsStore();
    const m = manager(store);
    for (const uid of ['a', 'b', 'c', 'd']) await m.forPod(pod(uid, false));
    await m.release('a');
    await m.release('a');
    expect([...store.files.keys()].sort()).toEqual(['b', 'c', 'd']);
    store.dirs.delete('d'); // its directory removed while the agent was down
    expect((await m.releaseOrphans((uid) => uid !== 'c')).sort()).toEqual(['c', 'd']);
    expect([...store.files.keys()]).toEqual(['b']);
    // The freed ranges are given again.
    expect((await m.forPod(pod('e', false)))!.uids[0]!.hostId).toBe(L);
  });
});
