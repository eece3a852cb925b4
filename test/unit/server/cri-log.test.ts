// The CRI log reader: line parsing, tail by file lines, since, partial lines joined (timestamps at line starts), the
// byte limit, and following: new lines, a rotated file, the end once the container stops; the file closed after.
import { appendFile, mkdtemp, open, rename, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CriLogParseError, parseCriLogLine, parseLogTimestamp, readCriLog, tailStartOffset, type LogReadOptions } from '../../../src/server/cri-log.js';

const line = (time: string, stream: string, tag: string, content: string) => `${time} ${stream} ${tag} ${content}\n`;
const t = (s: number) => `2024-05-01T10:00:${String(s).padStart(2, '0')}.5Z`;

/** The test's log directories, removed after it. */
const dirs: string[] = [];
afterAll(async () => {
  for (const dir of dirs) await rm(dir, { recursive: true, force: true });
});

async function logFile(text: string): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'nodelet-crilog-'));
  dirs.push(dir);
  const path = join(dir, '0.log');
  await writeFile(path, text);
  return path;
}

async function read(path: string, opts: Partial<LogReadOptions> = {}): Promise<string> {
  let out = '';
  await readCriLog(path, { timestamps: false, follow: false, ...opts }, async (chunk) => {
    out += chunk.toString();
  }, new AbortController().signal);
  return out;
}

describe('parseCriLogLine', () => {
  test.each([
    ['full stdout line', line('2016-10-06T00:17:09.669794202Z', 'stdout', 'F', 'log content 1'), 'stdout', false, 'log content 1\n'],
    ['partial stderr line drops the file newline', line('2016-10-06T00:17:09.669794203Z', 'stderr', 'P', 'part'), 'stderr', true, 'part'],
    ['tags after a colon are ignored', line('2016-10-06T00:17:09Z', 'stdout', 'F:x', 'a b c'), 'stdout', false, 'a b c\n'],
    ['empty content', line('2016-10-06T00:17:09Z', 'stdout', 'F', ''), 'stdout', false, '\n'],
  ])('%s', (_name, text, stream, partial, content) => {
    const msg = parseCriLogLine(Buffer.from(text));
    expect(msg.stream).toBe(stream);
    expect(msg.partial).toBe(partial);
    expect(msg.content.toString()).toBe(content);
  });

  test.each([
    ['no delimiter', 'garbage'],
    ['bad timestamp', 'yesterday stdout F x\n'],
    ['bad stream', '2016-10-06T00:17:09Z stdin F x\n'],
    ['no tag', '2016-10-06T00:17:09Z stdout\n'],
  ])('refuses %s', (_name, text) => {
    expect(() => parseCriLogLine(Buffer.from(text))).toThrow(CriLogParseError);
  });

  test('timestamps: nanoseconds exact, written with nine digits in the line zone', () => {
    expect(parseLogTimestamp('2016-10-06T00:17:09.669794202Z')).toEqual({ timeNs: 1475713029669794202n, timestamp: '2016-10-06T00:17:09.669794202Z' });
    expect(parseLogTimestamp('2016-10-06T02:17:09.5+02:00')).toEqual({ timeNs: 1475713029500000000n, timestamp: '2016-10-06T02:17:09.500000000+02:00' });
  });
});

describe('readCriLog without follow', () => {
  const text = line(t(1), 'stdout', 'F', 'one') + line(t(2), 'stderr', 'F', 'two') + line(t(3), 'stdout', 'P', 'thr') + line(t(4), 'stdout', 'F', 'ee') + line(t(5), 'stdout', 'F', 'four');

  test('all lines, partial lines joined, both streams', async () => {
    expect(await read(await logFile(text))).toBe('one\ntwo\nthree\nfour\n');
  });

  test('tail counts file lines, as kubelet', async () => {
    const path = await logFile(text);
    expect(await read(path, { tailLines: 1 })).toBe('four\n');
    expect(await read(path, { tailLines: 2 })).toBe('ee\nfour\n');
    expect(await read(path, { tailLines: 0 })).toBe('');
    expect(await read(path, { tailLines: 100 })).toBe('one\ntwo\nthree\nfour\n');
  });

  test('tail across more than one read block', async () => {
    const many = Array.from({ length: 5000 }, (_, i) => line(t(i % 60), 'stdout', 'F', `line ${i} ${'x'.repeat(20)}`)).join('');
    const path = await logFile(many);
    const file = await open(path, 'r');
    try {
      const offset = await tailStartOffset(file, 3);
      expect(many.slice(offset).split('\n').filter(Boolean)).toHaveLength(3);
    } finally {
      await file.close();
    }
  });

  test('timestamps only where a line starts', async () => {
    expect(await read(await logFile(text), { timestamps: true })).toBe(
      `${'2024-05-01T10:00:01.500000000Z'} one\n2024-05-01T10:00:02.500000000Z two\n2024-05-01T10:00:03.500000000Z three\n2024-05-01T10:00:05.500000000Z four\n`,
    );
  });

  test('since skips older messages', async () => {
    expect(await read(await logFile(text), { sinceNs: parseLogTimestamp(t(4)).timeNs })).toBe('ee\nfour\n');
  });

  test('limitBytes cuts the output', async () => {
    expect(await read(await logFile(text), { limitBytes: 6 })).toBe('one\ntw');
    expect(await read(await logFile(text), { limitBytes: 6, timestamps: true })).toBe('2024-0');
  });

  test('unparseable lines are skipped; a last line without newline is read', async () => {
    expect(await read(await logFile(`junk\n${line(t(1), 'stdout', 'F', 'ok')}${t(2)} stdout F tail`))).toBe('ok\ntail');
  });
});

describe('readCriLog with follow', () => {
  test('new lines arrive, a rotated file is read next, the stream ends once the container stops', async () => {
    const path = await logFile(line(t(1), 'stdout', 'F', 'old'));
    let running = true;
    let out = '';
    const seen = (s: string) => new Promise<void>((resolve, reject) => {
      const deadline = Date.now() + 5_000;
      const poll = () => (out.includes(s) ? resolve() : Date.now() > deadline ? reject(new Error(`never saw ${s}: ${out}`)) : setTimeout(poll, 10));
      poll();
    });
    const done = readCriLog(path, { timestamps: false, follow: true }, async (c) => {
      out += c.toString();
    }, new AbortController().signal, { isRunning: async () => running, pollMs: 50 });
    await seen('old');
    await appendFile(path, line(t(2), 'stdout', 'P', 'half-'));
    await appendFile(path, line(t(3), 'stdout', 'F', 'joined'));
    await seen('half-joined\n');
    // Rotation: the file moves aside with a last line, a new file takes its place.
    await appendFile(path, line(t(4), 'stdout', 'F', 'last-of-old'));
    await rename(path, `${path}.1`);
    await writeFile(path, line(t(5), 'stdout', 'F', 'first-of-new'));
    await seen('first-of-new');
    await appendFile(path, line(t(6), 'stderr', 'F', 'final'));
    running = false;
    await done;
    expect(out).toBe('old\nhalf-joined\nlast-of-old\nfirst-of-new\nfinal\n');
  });

  test('an abort (client gone) ends it while waiting', async () => {
    const path = await logFile(line(t(1), 'stdout', 'F', 'x'));
    const abort = new AbortController();
    const done = readCriLog(path, { timestamps: false, follow: true }, async () => undefined, abort.signal, { isRunning: async () => true, pollMs: 60_000 });
    setTimeout(() => abort.abort(), 50);
    await expect(done).resolves.toBeUndefined();
  });
});
