// Query validation of the kubelet API: malformed values are 400s naming the parameter, invalid ones kube's 422s.
import { parsePodLogOptions, parsePorts, parseStreamOptions, RequestError, sinceNs } from '../../../src/server/query.js';

const q = (s: string) => new URLSearchParams(s);

function refusal(fn: () => unknown): { status: number; message: string } {
  try {
    fn();
  } catch (err) {
    if (err instanceof RequestError) return { status: err.status, message: err.message };
    throw err;
  }
  throw new Error('accepted');
}

describe('parsePodLogOptions', () => {
  test('accepts the PodLogOptions kubectl sends', () => {
    expect(parsePodLogOptions(q('follow=true&previous=1&timestamps=false&tailLines=10&limitBytes=5&sinceSeconds=60'))).toEqual({
      follow: true, previous: true, timestamps: false, tailLines: 10, limitBytes: 5, sinceSeconds: 60,
    });
    expect(parsePodLogOptions(q('sinceTime=2024-05-01T10:00:00Z')).sinceTimeNs).toBe(1714557600000000000n);
    expect(parsePodLogOptions(q(''))).toEqual({ follow: false, previous: false, timestamps: false });
  });

  test.each([
    ['follow=maybe', 400, 'follow'],
    ['tailLines=abc', 400, 'tailLines'],
    ['tailLines=1.5', 400, 'tailLines'],
    ['limitBytes=x', 400, 'limitBytes'],
    ['sinceSeconds=', 400, 'sinceSeconds'],
    ['sinceTime=yesterday', 400, 'sinceTime'],
    ['tailLines=-1', 422, 'tailLines'],
    ['limitBytes=0', 422, 'limitBytes'],
    ['sinceSeconds=0', 422, 'sinceSeconds'],
    ['sinceSeconds=5&sinceTime=2024-05-01T10:00:00Z', 422, 'sinceTime'],
  ])('%s -> %i naming %s', (query, status, name) => {
    const r = refusal(() => parsePodLogOptions(q(query)));
    expect(r.status).toBe(status);
    expect(r.message).toContain(name);
  });

  test('since: seconds before now, or the time', () => {
    expect(sinceNs({ follow: false, previous: false, timestamps: false, sinceSeconds: 10 }, 1_000_000)).toBe(990_000n * 1_000_000n);
    expect(sinceNs({ follow: false, previous: false, timestamps: false, sinceTimeNs: 5n }, 1_000_000)).toBe(5n);
  });
});

describe('stream options', () => {
  test('remotecommand flags; tty drops stderr; at least one stream', () => {
    expect(parseStreamOptions(q('input=1&output=1&error=1'))).toEqual({ stdin: true, stdout: true, stderr: true, tty: false });
    expect(parseStreamOptions(q('output=1&error=1&tty=1'))).toEqual({ stdin: false, stdout: true, stderr: false, tty: true });
    expect(refusal(() => parseStreamOptions(q('tty=1'))).status).toBe(400);
  });

  test('ports', () => {
    expect(parsePorts(q('port=80&port=8080'))).toEqual([80, 8080]);
    expect(refusal(() => parsePorts(q('port=99999'))).message).toContain('port');
  });
});
