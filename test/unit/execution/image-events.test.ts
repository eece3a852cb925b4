// The image manager's events, in kubelet's words: already present, Never without the image, Pulling/Pulled with
// durations and size, Failed then a Normal BackOff; and Go's duration format the Pulled message uses.
import type { V1Container, V1Pod } from '@kubernetes/client-node';
import type { EventRecorder, EventType, PodEventRef } from '../../../src/core/events.js';
import type { Image, ImageService, PodSandboxConfig } from '../../../src/cri/types.js';
import { CriError } from '../../../src/cri/errors.js';
import { Backoff } from '../../../src/decisions/backoff.js';
import { formatGoDuration } from '../../../src/core/duration.js';
import { ImageManager } from '../../../src/execution/images.js';
import { recordingLogger } from '../prober/fake-log.js';

class RecordedEvents implements EventRecorder {
  readonly events: { container?: string; type: EventType; reason: string; message: string }[] = [];
  event(ref: PodEventRef, type: EventType, reason: string, message: string): void {
    this.events.push({ ...(ref.containerName ? { container: ref.containerName } : {}), type, reason, message });
  }
  nodeEvent(): void {}
}

const pod: V1Pod = { metadata: { name: 'web', namespace: 'ns1', uid: 'uid-1' }, spec: { containers: [{ name: 'app' }] } };
const sandbox = {} as PodSandboxConfig;

function setup(images: Partial<ImageService>) {
  let now = 1_000_000;
  const events = new RecordedEvents();
  const manager = new ImageManager({ images: images as ImageService, pullBackoff: new Backoff(), now: () => now, events });
  const { log } = recordingLogger();
  const ensure = (container: V1Container) => manager.ensureImage(pod, container, sandbox, log);
  return { events, ensure, advance: (ms: number) => (now += ms) };
}

const busybox: Image = { id: 'sha256:abc', repoTags: ['busybox:1.35'], repoDigests: [], size: 1_234_567, username: '' };

describe('image manager events', () => {
  test('an image present on the node', async () => {
    const { events, ensure } = setup({ imageStatus: async () => busybox });
    await ensure({ name: 'app', image: 'busybox:1.35' });
    expect(events.events).toEqual([{ container: 'app', type: 'Normal', reason: 'Pulled', message: 'Container image "busybox:1.35" already present on machine' }]);
  });

  test.each([
    ['busybox:1.35', undefined, ['imageStatus'], 'Container image "busybox:1.35" already present on machine'],
    ['busybox:latest', undefined, ['pullImage', 'imageStatus'], 'Successfully pulled image "busybox:latest" in 0s (0s including waiting). Image size: 1234567 bytes.'],
    ['busybox', '', ['pullImage', 'imageStatus'], 'Successfully pulled image "busybox" in 0s (0s including waiting). Image size: 1234567 bytes.'],
    ['busybox:1.35', 'Always', ['pullImage', 'imageStatus'], 'Successfully pulled image "busybox:1.35" in 0s (0s including waiting). Image size: 1234567 bytes.'],
  ])('an image volume of %s with pullPolicy %p: its image by ID, the events about the pod', async (reference, pullPolicy, calls, pulled) => {
    const called: string[] = [];
    const events = new RecordedEvents();
    const images = {
      imageStatus: async () => (called.push('imageStatus'), busybox),
      pullImage: async () => (called.push('pullImage'), 'sha256:abc'),
    };
    const manager = new ImageManager({ images: images as unknown as ImageService, pullBackoff: new Backoff(), now: () => 0, events });
    const volume = { name: 'data', image: { reference, ...(pullPolicy === undefined ? {} : { pullPolicy }) } };
    expect(await manager.ensureVolumeImage(pod, volume, sandbox, recordingLogger().log)).toBe('sha256:abc');
    expect(called).toEqual(calls);
    expect(events.events.at(-1)).toEqual({ type: 'Normal', reason: 'Pulled', message: pulled });
  });

  test('an image volume whose reference is no image name: InvalidImageName, nothing asked of the runtime', async () => {
    const events = new RecordedEvents();
    const manager = new ImageManager({ images: {} as ImageService, pullBackoff: new Backoff(), now: () => 0, events });
    const volume = { name: 'data', image: { reference: 'Busybox', pullPolicy: 'IfNotPresent' } };
    await expect(manager.ensureVolumeImage(pod, volume, sandbox, recordingLogger().log)).rejects.toMatchObject({
      code: 'InvalidImageName',
      message: 'Failed to apply default image tag "Busybox": couldn\'t parse image name "Busybox": invalid reference format: repository name (library/Busybox) must be lowercase',
    });
    expect(events.events).toEqual([{ type: 'Warning', reason: 'InspectFailed', message: 'Failed to apply default image tag "Busybox": couldn\'t parse image name "Busybox": invalid reference format: repository name (library/Busybox) must be lowercase' }]);
  });

  test('pull policy Never without the image', async () => {
    const { events, ensure } = setup({ imageStatus: async () => undefined });
    await expect(ensure({ name: 'app', image: 'busybox:1.35', imagePullPolicy: 'Never' })).rejects.toMatchObject({ code: 'ErrImageNeverPull' });
    expect(events.events).toEqual([
      { container: 'app', type: 'Warning', reason: 'ErrImageNeverPull', message: 'Container image "busybox:1.35" is not present with pull policy of Never' },
    ]);
  });

  test('a pull: Pulling, then Pulled with its duration and the image size', async () => {
    let advance!: (ms: number) => void;
    const { events, ensure, advance: adv } = setup({
      imageStatus: async () => busybox,
      pullImage: async () => {
        advance(1_234);
        return 'sha256:abc';
      },
    });
    advance = adv;
    await ensure({ name: 'app', image: 'busybox:1.35', imagePullPolicy: 'Always' });
    expect(events.events).toEqual([
      { container: 'app', type: 'Normal', reason: 'Pulling', message: 'Pulling image "busybox:1.35"' },
      { container: 'app', type: 'Normal', reason: 'Pulled', message: 'Successfully pulled image "busybox:1.35" in 1.234s (1.234s including waiting). Image size: 1234567 bytes.' },
    ]);
  });

  test("serialized pulls: the second pod's Pulled counts its turn in the queue as waiting; pods of one image share its pull", async () => {
    let now = 0;
    const events = new RecordedEvents();
    const finish: (() => void)[] = [];
    const pulled: string[] = [];
    const images = {
      imageStatus: async () => busybox,
      pullImage: (ref: string) =>
        new Promise<string>((resolve) => {
          pulled.push(ref);
          finish.push(() => resolve('sha256:abc'));
        }),
    } as unknown as ImageService;
    const manager = new ImageManager({ images, pullBackoff: new Backoff(), now: () => now, events });
    const { log } = recordingLogger();
    const podOf = (uid: string): V1Pod => ({ metadata: { name: uid, namespace: 'ns1', uid }, spec: { containers: [] } });
    const ensure = (uid: string, image: string) => manager.ensureImage(podOf(uid), { name: 'app', image, imagePullPolicy: 'Always' }, sandbox, log);
    const a = ensure('a', 'a:1');
    const b = ensure('b', 'b:1');
    const c = ensure('c', 'a:1');
    const tick = () => new Promise((r) => setImmediate(r));
    await tick();
    expect(pulled).toEqual(['a:1']);
    now = 2_000;
    finish.shift()!();
    await Promise.all([a, c]);
    await tick();
    expect(pulled).toEqual(['a:1', 'b:1']);
    now = 3_000;
    finish.shift()!();
    await b;
    const messages = events.events.filter((e) => e.reason === 'Pulled').map((e) => e.message);
    expect(messages).toEqual([
      'Successfully pulled image "a:1" in 2s (2s including waiting). Image size: 1234567 bytes.',
      'Successfully pulled image "a:1" in 2s (2s including waiting). Image size: 1234567 bytes.',
      'Successfully pulled image "b:1" in 1s (3s including waiting). Image size: 1234567 bytes.',
    ]);
  });

  test('a failed pull, then the back-off', async () => {
    const { events, ensure } = setup({
      imageStatus: async () => undefined,
      pullImage: async () => {
        throw new Error('rpc error: code = NotFound desc = failed to resolve reference "nope:1"');
      },
    });
    await expect(ensure({ name: 'app', image: 'nope:1' })).rejects.toMatchObject({ code: 'ErrImagePull' });
    await expect(ensure({ name: 'app', image: 'nope:1' })).rejects.toMatchObject({ code: 'ImagePullBackOff' });
    expect(events.events).toEqual([
      { container: 'app', type: 'Normal', reason: 'Pulling', message: 'Pulling image "nope:1"' },
      { container: 'app', type: 'Warning', reason: 'Failed', message: 'Failed to pull image "nope:1": rpc error: code = NotFound desc = failed to resolve reference "nope:1"' },
      { container: 'app', type: 'Normal', reason: 'BackOff', message: 'Back-off pulling image "nope:1"' },
    ]);
  });

  test("the runtime's Unknown failure is its bare message (kubelet's CRI client strips the code); the back-off's message repeats it", async () => {
    const { events, ensure } = setup({
      imageStatus: async () => undefined,
      pullImage: async () => {
        throw new CriError('Unknown', 'PullImage', 'failed to pull and unpack image "r:1/x:1": connection refused', 2);
      },
    });
    const bare = 'failed to pull and unpack image "r:1/x:1": connection refused';
    await expect(ensure({ name: 'app', image: 'r:1/x:1' })).rejects.toMatchObject({ code: 'ErrImagePull', message: bare });
    await expect(ensure({ name: 'app', image: 'r:1/x:1' })).rejects.toMatchObject({ code: 'ImagePullBackOff', message: `Back-off pulling image "r:1/x:1": ErrImagePull: ${bare}` });
    expect(events.events[1]).toEqual({ container: 'app', type: 'Warning', reason: 'Failed', message: `Failed to pull image "r:1/x:1": ${bare}` });
  });
});

test.each([
  [0, '0s'],
  [7, '7ms'],
  [999, '999ms'],
  [1_000, '1s'],
  [1_234, '1.234s'],
  [1_500, '1.5s'],
  [60_000, '1m0s'],
  [123_456, '2m3.456s'],
  [3_600_000, '1h0m0s'],
  [3_723_400, '1h2m3.4s'],
])('formatGoDuration(%d ms) is %s', (ms, text) => {
  expect(formatGoDuration(ms)).toBe(text);
});
