// The text log format: klog's, as kubelet prints it on a terminal.
import { formatTextLine } from '../../../src/core/log.js';

const at = new Date(2026, 10, 26, 9, 5, 7, 42);

test('a line is severity, date, time in microseconds, pid and name, then the quoted message and key/value pairs', () => {
  const line = JSON.stringify({ level: 30, time: at.getTime(), name: 'nodelet', pod: 'default/web', restartCount: 2, ready: true, subnets: ['10.99.0.0/24'], msg: 'Started container' });
  expect(formatTextLine(line, 1234)).toBe('I1126 09:05:07.042000    1234 nodelet] "Started container" pod="default/web" restartCount=2 ready=true subnets=["10.99.0.0/24"]');
});

test('warnings and errors take W and E; an error shows its message; quotes in values are escaped', () => {
  const warn = JSON.stringify({ level: 40, time: at.getTime(), name: 'nodelet', file: '/etc/m/"a".yaml', msg: 'invalid pod manifest: spec: Required value' });
  expect(formatTextLine(warn, 7)).toBe('W1126 09:05:07.042000       7 nodelet] "invalid pod manifest: spec: Required value" file="/etc/m/\\"a\\".yaml"');
  const error = JSON.stringify({ level: 50, time: at.getTime(), name: 'nodelet', err: { type: 'Error', message: 'boom', stack: 'Error: boom\n at x' }, msg: 'failed' });
  expect(formatTextLine(error, 7)).toBe('E1126 09:05:07.042000       7 nodelet] "failed" err="boom"');
  expect(formatTextLine(JSON.stringify({ level: 20, time: at.getTime(), msg: 'debug' }), 7)).toBe('I1126 09:05:07.042000       7 nodelet] "debug"');
});

test('a line that is not JSON passes through', () => {
  expect(formatTextLine('plain text', 1)).toBe('plain text');
});
