// The message of a terminated container: what it wrote to terminationMessagePath, or the tail of its log on error.
import type { ContainerStatus } from '../cri/types.js';
import type { PodFilesystem } from '../host/filesystem.js';

/** kubelet's limits: 4 KiB from the file; from the log, the last 80 lines within 2 KiB. */
export const maxTerminationMessageBytes = 4096;
export const maxLogMessageBytes = 2048;
export const maxLogMessageLines = 80;

/** The message part of CRI log lines (`<time> <stream> <P|F> <message>`); partial lines joined. */
export function criLogMessages(text: string): string {
  let out = '';
  for (const line of text.split('\n')) {
    const parts = line.split(' ');
    if (parts.length < 4) continue;
    out += parts.slice(3).join(' ') + (parts[2] === 'P' ? '' : '\n');
  }
  return out;
}

/**
 * The termination message of an exited container as kubelet finds it: the file mounted at its
 * terminationMessagePath, else (FallbackToLogsOnError, non-zero exit) the tail of its log.
 */
export async function terminationMessage(
  files: PodFilesystem,
  status: ContainerStatus,
  messagePath: string | undefined,
  policy: string | undefined,
): Promise<string> {
  const mount = messagePath ? status.mounts.find((m) => m.containerPath === messagePath) : undefined;
  if (mount) {
    const text = await files.readHead(mount.hostPath, maxTerminationMessageBytes).catch(() => '');
    if (text) return text;
  }
  if (policy !== 'FallbackToLogsOnError' || status.exitCode === 0 || !status.logPath) return '';
  // Read a little more than the limit: the CRI prefixes are stripped before cutting.
  const raw = await files.readTail(status.logPath, maxLogMessageBytes * 4).catch(() => '');
  const lines = criLogMessages(raw).replace(/\n$/, '').split('\n').slice(-maxLogMessageLines).join('\n');
  return Buffer.byteLength(lines) > maxLogMessageBytes ? Buffer.from(lines).subarray(-maxLogMessageBytes).toString('utf8') : lines;
}
