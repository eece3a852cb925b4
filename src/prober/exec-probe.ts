// The exec probe: the command runs in the container through CRI ExecSync; exit 0 succeeds, the runtime enforces the timeout.
import { CriError, kubeletErrorText } from '../cri/errors.js';
import type { RuntimeService } from '../cri/types.js';
import { maxProbeOutputBytes, ProbeError, type ProbeOutcome } from './outcome.js';

/**
 * Runs the command with the probe's timeoutSeconds. A non-zero exit is a failure with the
 * command's output (stdout then stderr, at most 10 KiB), a timeout is a failure worded as
 * kubelet's (`command "..." timed out`); any other runtime error makes the run error (ProbeError).
 */
export async function execProbe(
  runtime: Pick<RuntimeService, 'execSync'>,
  containerId: string,
  command: string[],
  timeoutSeconds: number,
  signal?: AbortSignal,
): Promise<ProbeOutcome> {
  try {
    const r = await runtime.execSync(containerId, command, timeoutSeconds, { signal });
    const output = Buffer.concat([r.stdout, r.stderr]).subarray(0, maxProbeOutputBytes).toString('utf8');
    return { result: r.exitCode === 0 ? 'success' : 'failure', output };
  } catch (err) {
    if (signal?.aborted) throw signal.reason;
    if (err instanceof CriError && err.kind === 'DeadlineExceeded') {
      return { result: 'failure', output: `command ${JSON.stringify(command.join(' '))} timed out` };
    }
    // In kubelet's words: its CRI client's gRPC error.
    throw new ProbeError(kubeletErrorText(err), undefined, { cause: err });
  }
}
