// EventCorrelator with an injected clock: repeats become count patches, floods of similar events one combined event,
// the spam filter's token bucket per source and object, and the 10-minute windows.
import { EventCorrelator, eventName, metaTime, type EventObject } from '../../../src/controllers/event-correlator.js';
import { makeEvent, podReference } from '../../../src/controllers/event-recorder.js';
import type { V1Pod } from '@kubernetes/client-node';

const pod: V1Pod = {
  metadata: { name: 'web', namespace: 'ns1', uid: 'uid-1', resourceVersion: '7' },
  spec: { containers: [{ name: 'app' }, { name: 'side' }] },
};
const start = Date.UTC(2025, 0, 1, 12, 0, 0);

function setup() {
  let now = start;
  const correlator = new EventCorrelator({ now: () => now });
  const make = (message: string, opts: { container?: string; reason?: string; type?: 'Normal' | 'Warning' } = {}): EventObject =>
    makeEvent(podReference({ pod, containerName: opts.container ?? 'app' })!, opts.type ?? 'Warning', opts.reason ?? 'BackOff', message, 'node-a', now);
  return { correlator, make, advance: (ms: number) => (now += ms), now: () => now };
}

/** What the API server would answer to a create or a patch: the event with a resourceVersion. */
function written(e: EventObject, rv: string): EventObject {
  return { ...e, metadata: { ...e.metadata, resourceVersion: rv } };
}

describe('EventCorrelator', () => {
  test('a first event is created as is', () => {
    const { correlator, make } = setup();
    const e = make('Back-off restarting failed container app in pod web_ns1(uid-1)');
    const r = correlator.correlate(e);
    expect(r).toEqual({ event: e, skip: false });
  });

  test('an identical event patches count and lastTimestamp of the first one, keeping its name and firstTimestamp', () => {
    const { correlator, make, advance } = setup();
    const first = make('same');
    correlator.updateState(written(correlator.correlate(first).event, '100'));
    advance(30_000);
    const second = correlator.correlate(make('same'));
    expect(second.skip).toBe(false);
    expect(second.event.metadata).toEqual({ name: first.metadata.name, namespace: 'ns1', resourceVersion: '100' });
    expect(second.event.count).toBe(2);
    expect(second.event.firstTimestamp).toBe(metaTime(start));
    expect(second.event.lastTimestamp).toBe(metaTime(start + 30_000));
    expect(second.patch).toEqual({ count: 2, lastTimestamp: metaTime(start + 30_000), message: 'same' });
    advance(1_000);
    const third = correlator.correlate(make('same'));
    expect(third.patch?.count).toBe(3);
    expect(third.event.metadata.name).toBe(first.metadata.name);
  });

  test('the count continues from what the server returned', () => {
    const { correlator, make } = setup();
    const first = correlator.correlate(make('same')).event;
    correlator.updateState({ ...written(first, '5'), count: 41 });
    expect(correlator.correlate(make('same')).patch?.count).toBe(42);
  });

  test('events differing in message, reason, type or container are not repeats', () => {
    const { correlator, make } = setup();
    correlator.correlate(make('one'));
    expect(correlator.correlate(make('two')).patch).toBeUndefined();
    expect(correlator.correlate(make('one', { reason: 'Failed' })).patch).toBeUndefined();
    expect(correlator.correlate(make('one', { type: 'Normal' })).patch).toBeUndefined();
    expect(correlator.correlate(make('one', { container: 'side' })).patch).toBeUndefined();
    expect(correlator.correlate(make('one')).patch?.count).toBe(2);
  });

  test('the tenth distinct message of one reason within 10 minutes becomes a combined event, then it is patched', () => {
    const { correlator, make, advance } = setup();
    for (let i = 1; i <= 9; i++) {
      const r = correlator.correlate(make(`Liveness probe failed: attempt ${i}`, { reason: 'Unhealthy' }));
      expect(r.event.message).toBe(`Liveness probe failed: attempt ${i}`);
      advance(1_000);
    }
    const tenth = correlator.correlate(make('Liveness probe failed: attempt 10', { reason: 'Unhealthy' }));
    expect(tenth.event.message).toBe('(combined from similar events): Liveness probe failed: attempt 10');
    expect(tenth.event.count).toBe(1);
    expect(tenth.patch).toBeUndefined();
    expect(tenth.event.metadata.name).toMatch(/^web\.[0-9a-f]+$/);
    expect(tenth.event.involvedObject.fieldPath).toBe('spec.containers{app}');
    correlator.updateState(written(tenth.event, '200'));
    advance(1_000);
    const eleventh = correlator.correlate(make('Liveness probe failed: attempt 11', { reason: 'Unhealthy' }));
    expect(eleventh.event.metadata.name).toBe(tenth.event.metadata.name);
    expect(eleventh.patch).toEqual({ count: 2, lastTimestamp: metaTime(start + 10_000), message: '(combined from similar events): Liveness probe failed: attempt 11' });
  });

  test('similar events more than 10 minutes apart start a new group', () => {
    const { correlator, make, advance } = setup();
    for (let i = 1; i <= 9; i++) correlator.correlate(make(`m${i}`));
    advance(600_001);
    expect(correlator.correlate(make('m10')).event.message).toBe('m10');
  });

  test('the spam filter lets 25 events about one object through, then one per 5 minutes', () => {
    const { correlator, make, advance } = setup();
    const skipped = Array.from({ length: 30 }, (_, i) => correlator.correlate(make(`distinct ${i}`, { reason: `R${i}` })).skip);
    expect(skipped.filter((s) => !s)).toHaveLength(25);
    expect(skipped.slice(25)).toEqual([true, true, true, true, true]);
    advance(299_000);
    expect(correlator.correlate(make('later', { reason: 'X' })).skip).toBe(true);
    advance(2_000);
    expect(correlator.correlate(make('later2', { reason: 'Y' })).skip).toBe(false);
    expect(correlator.correlate(make('later3', { reason: 'Z' })).skip).toBe(true);
  });

  test('the spam filter counts per object: another pod is not held back', () => {
    const { correlator, make } = setup();
    for (let i = 0; i < 30; i++) correlator.correlate(make(`x${i}`, { reason: `R${i}` }));
    const other = makeEvent(podReference({ pod: { ...pod, metadata: { ...pod.metadata, name: 'db', uid: 'uid-2' } } })!, 'Normal', 'Scheduled', 'x', 'node-a', start);
    expect(correlator.correlate(other).skip).toBe(false);
  });

  test('a repeat dropped by the spam filter still counts: the next one sent carries the full count', () => {
    const { correlator, make, advance } = setup();
    correlator.updateState(written(correlator.correlate(make('same')).event, '1'));
    for (let i = 0; i < 24; i++) correlator.correlate(make(`filler ${i}`, { reason: `F${i}` }));
    expect(correlator.correlate(make('same')).skip).toBe(true);
    expect(correlator.correlate(make('same')).skip).toBe(true);
    advance(300_000);
    const sent = correlator.correlate(make('same'));
    expect(sent.skip).toBe(false);
    expect(sent.patch?.count).toBe(4);
  });
});

describe('event object', () => {
  test('shape of a container event as kubelet sends it', () => {
    // Later than any time used before: names are made strictly increasing within the process.
    const at = Date.UTC(2030, 0, 1, 12, 0, 1, 234);
    const e = makeEvent(podReference({ pod, containerName: 'app' })!, 'Normal', 'Started', 'Started container app', 'node-a', at);
    expect(e).toEqual({
      metadata: { name: expect.stringMatching(/^web\.[0-9a-f]{16}$/), namespace: 'ns1' },
      involvedObject: { kind: 'Pod', namespace: 'ns1', name: 'web', uid: 'uid-1', apiVersion: 'v1', resourceVersion: '7', fieldPath: 'spec.containers{app}' },
      reason: 'Started',
      message: 'Started container app',
      source: { component: 'kubelet', host: 'node-a' },
      firstTimestamp: '2030-01-01T12:00:01Z',
      lastTimestamp: '2030-01-01T12:00:01Z',
      count: 1,
      type: 'Normal',
      reportingComponent: 'kubelet',
      reportingInstance: 'node-a',
    });
    // The name's suffix is the time in nanoseconds, in hex.
    const nanos = BigInt(`0x${e.metadata.name.split('.')[1]}`);
    expect(nanos / 1_000_000n).toBe(BigInt(at));
  });

  test('init containers get their own field path; a pod event has none; a container not in the spec gives no reference', () => {
    const withInit: V1Pod = { ...pod, spec: { containers: [{ name: 'app' }], initContainers: [{ name: 'setup' }] } };
    expect(podReference({ pod: withInit, containerName: 'setup' })?.fieldPath).toBe('spec.initContainers{setup}');
    expect(podReference({ pod: withInit })).not.toHaveProperty('fieldPath');
    expect(podReference({ pod: withInit, containerName: 'gone' })).toBeUndefined();
  });

  test('names stay unique within a millisecond', () => {
    const names = new Set(Array.from({ length: 100 }, () => eventName('web', start)));
    expect(names.size).toBe(100);
  });
});
