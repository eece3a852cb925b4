// Per-pod container resources kept across agent restarts, as kubelet's allocated_pods_state and actuated_pods_state
// checkpoints: what each pod was allocated (admitted or resized to), and what was last applied to its containers. A
// restart neither undoes an accepted resize nor repeats one already applied.
import { mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';
import type { V1ResourceRequirements } from '@kubernetes/client-node';

/** The resources of each container of a pod, by container name. */
export type PodAllocation = Record<string, V1ResourceRequirements>;

export class PodResourcesState {
  private readonly pods = new Map<string, PodAllocation>();

  /** `file`: the checkpoint (read now, rewritten on every change); without one the state lives in memory only. */
  constructor(private readonly file?: string) {
    if (!file) return;
    let text: string;
    try {
      text = readFileSync(file, 'utf8');
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return;
      throw err;
    }
    // A checkpoint that does not parse is dropped, as kubelet starts with an empty state on a corrupt one.
    try {
      for (const [uid, alloc] of Object.entries(JSON.parse(text) as Record<string, PodAllocation>)) this.pods.set(uid, alloc);
    } catch {
      this.pods.clear();
    }
  }

  get(uid: string): PodAllocation | undefined {
    return this.pods.get(uid);
  }

  has(uid: string): boolean {
    return this.pods.has(uid);
  }

  container(uid: string, name: string): V1ResourceRequirements | undefined {
    return this.pods.get(uid)?.[name];
  }

  set(uid: string, alloc: PodAllocation): void {
    this.pods.set(uid, structuredClone(alloc));
    this.save();
  }

  setContainer(uid: string, name: string, resources: V1ResourceRequirements): void {
    this.pods.set(uid, { ...this.pods.get(uid), [name]: structuredClone(resources) });
    this.save();
  }

  remove(uid: string): void {
    if (this.pods.delete(uid)) this.save();
  }

  /** Drops the records of pods not in `uids` (kubelet's RemoveOrphanedPods). */
  retain(uids: ReadonlySet<string>): void {
    let changed = false;
    for (const uid of [...this.pods.keys()]) if (!uids.has(uid)) changed = this.pods.delete(uid) || changed;
    if (changed) this.save();
  }

  private save(): void {
    if (!this.file) return;
    mkdirSync(dirname(this.file), { recursive: true });
    // Written aside and renamed over: a crash leaves the old checkpoint or the new one, never half of one.
    const tmp = `${this.file}.tmp`;
    writeFileSync(tmp, JSON.stringify(Object.fromEntries(this.pods)), { mode: 0o600 });
    renameSync(tmp, this.file);
  }
}
