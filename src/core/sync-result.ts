// The record of one executed sync step, with kubelet's named error codes instead of free text.

/** kubelet's sync error codes and container waiting reasons. */
export type SyncErrorCode =
  | 'ErrCreatePodSandbox'
  | 'ErrKillPodSandbox'
  | 'ErrKillContainer'
  | 'ErrRemoveContainer'
  | 'ErrImagePull'
  | 'ImagePullBackOff'
  | 'ErrImageNeverPull'
  /** An image volume's reference that is no image name (the API server checks only container images). */
  | 'InvalidImageName'
  | 'CreateContainerConfigError'
  | 'CreateContainerError'
  | 'RunContainerError'
  | 'CrashLoopBackOff'
  | 'PostStartHookError'
  /** An in-place resize could not be applied (kubelet's PodResizeInProgress reason Error). */
  | 'ErrResizePodInPlace'
  /** A volume could not be set up (kubelet's FailedMount event); the pod's containers keep waiting. */
  | 'FailedMount';

export type SyncAction = 'KillPod' | 'KillContainer' | 'CreatePodSandbox' | 'StartContainer' | 'RemoveContainer' | 'MountVolume' | 'ResizePodInPlace';

export class SyncError extends Error {
  constructor(
    readonly code: SyncErrorCode,
    message: string,
    options?: { cause?: unknown },
  ) {
    super(message, options);
    this.name = 'SyncError';
  }
}

export interface StepResult {
  action: SyncAction;
  /** Container name, container id or sandbox id the step acted on. */
  target: string;
  /** The container a successful StartContainer started. */
  containerId?: string;
  error?: { code: SyncErrorCode; message: string };
}

export function stepFailed(action: SyncAction, target: string, err: unknown, fallback: SyncErrorCode): StepResult {
  const code = err instanceof SyncError ? err.code : fallback;
  const message = err instanceof Error ? err.message : String(err);
  return { action, target, error: { code, message } };
}

/** The text of Go's utilerrors aggregate of these messages: one as it is, several deduplicated in "[a, b]". */
export function aggregateMessage(messages: string[]): string {
  const unique = [...new Set(messages)];
  return unique.length === 1 ? unique[0]! : `[${unique.join(', ')}]`;
}
