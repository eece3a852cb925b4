// The command line: kubeadm's repeatable string-list flags (--discovery-token-ca-cert-hash) add up; others take the last value.
import { fileURLToPath } from 'node:url';
import { parseFlags, type FlagSpec } from '../../../src/cli/flags.js';
import { joinFlags } from '../../../src/cli/join-flags.js';

const a = `sha256:${'a'.repeat(64)}`;
const b = `sha256:${'b'.repeat(64)}`;
const c = `sha256:${'c'.repeat(64)}`;

test('--discovery-token-ca-cert-hash given several times pins every value, in order, commas included', () => {
  const { values } = parseFlags(
    ['127.0.0.1:6443', '--discovery-token-ca-cert-hash', a, `--discovery-token-ca-cert-hash=${b},${c}`, '--token', 'abcdef.0123456789abcdef'],
    joinFlags,
  );
  expect(values.get('discovery-token-ca-cert-hash')!.split(',')).toEqual([a, b, c]);
  expect(parseFlags(['--discovery-token-ca-cert-hash', a], joinFlags).values.get('discovery-token-ca-cert-hash')).toBe(a);
});

test('a flag that is not a list takes its last value', () => {
  const specs: FlagSpec[] = [{ name: 'node-name', kind: 'string', default: 'x', help: '' }];
  expect(parseFlags(['--node-name', 'one', '--node-name=two'], specs).values.get('node-name')).toBe('two');
});

test('a --node-ip that is not an IP address stops the agent before it starts, naming the flag', async () => {
  const { execa } = await import('execa');
  const bin = fileURLToPath(new URL('../../../../bin/nodelet.js', import.meta.url));
  const run = await execa(bin, ['--node-ip', '10.0.0.300', '--root-dir', '/nonexistent/nodelet-flag-test'], { reject: false });
  expect(run.exitCode).toBe(2);
  expect(run.stderr).toBe('nodelet: invalid --node-ip "10.0.0.300": must be a valid IP address\nRun \'nodelet --help\' for usage.');
}, 30_000);
