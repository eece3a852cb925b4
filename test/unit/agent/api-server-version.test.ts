// Start-up's GET /version: the minor served, waiting for an API server that does not answer yet, and the refusals.
import { pino } from 'pino';
import { readApiServerMinor } from '../../../src/agent/api-server-version.js';
import { AgentConfigError } from '../../../src/agent/agent-config.js';
import { nodeletVersion } from '../../../src/agent/version.js';
import { ApiError, ApiUnavailableError, type ApiRequest } from '../../../src/kubeapi/client.js';

const log = pino({ level: 'silent' });
const server = 'https://127.0.0.1:6443';

/** A client answering GET /version from `answers` in turn (an Error is thrown), recording the requests. */
function client(...answers: unknown[]) {
  const requests: ApiRequest[] = [];
  return {
    server,
    requests,
    request: async <T>(req: ApiRequest): Promise<T> => {
      requests.push(req);
      const next = answers.shift();
      if (next instanceof Error) throw next;
      return next as T;
    },
  };
}

test('the API server\'s minor, from GET /version', async () => {
  const c = client({ major: '1', minor: '36', gitVersion: 'v1.36.1' });
  await expect(readApiServerMinor(c, log, new AbortController().signal)).resolves.toBe(36);
  expect(c.requests.map((r) => `${r.method} ${r.path}`)).toEqual(['GET /version']);
});

test('an API server not answering yet is asked again with back-off', async () => {
  const c = client(new ApiUnavailableError('connect ECONNREFUSED'), new ApiError(503, 'ServiceUnavailable', 'starting'), { major: '1', minor: '37', gitVersion: 'v1.37.2' });
  const sleeps: number[] = [];
  await expect(readApiServerMinor(c, log, new AbortController().signal, { sleep: async (ms) => void sleeps.push(ms) })).resolves.toBe(37);
  expect(sleeps).toEqual([1_000, 2_000]);
});

test('an unsupported API server stops the start with its version, nodelet\'s and the range', async () => {
  const err = await readApiServerMinor(client({ major: '1', minor: '34', gitVersion: 'v1.34.3' }), log, new AbortController().signal).catch((e: unknown) => e);
  expect(err).toBeInstanceOf(AgentConfigError);
  expect((err as Error).message).toContain(`the API server at ${server} runs Kubernetes v1.34.3, which nodelet ${nodeletVersion()} does not support: it serves Kubernetes 1.35 to 1.37`);
});

test('a refused request stops the start, naming the request', async () => {
  const err = await readApiServerMinor(client(new ApiError(403, 'Forbidden', 'forbidden: User "system:anonymous" cannot get path "/version"')), log, new AbortController().signal).catch((e: unknown) => e);
  expect(err).toBeInstanceOf(AgentConfigError);
  expect((err as Error).message).toBe(`cannot read the version of the API server at ${server} (GET /version): forbidden: User "system:anonymous" cannot get path "/version"`);
});

test('an abort while waiting ends the wait', async () => {
  const controller = new AbortController();
  const c = client(new ApiUnavailableError('connect ECONNREFUSED'), new ApiUnavailableError('aborted'));
  const done = readApiServerMinor(c, log, controller.signal, { sleep: async () => controller.abort() });
  await expect(done).rejects.toThrow('aborted');
  expect(c.requests).toHaveLength(2);
});
