// kubelet's ClusterTrustBundle manager (pkg/kubelet/clustertrustbundle): a lazily started list + watch of every
// ClusterTrustBundle (certificates.k8s.io/v1, GA in 1.37), and the normalized PEM trust anchors a projection reads.
import type { V1ClusterTrustBundleProjection, V1LabelSelector, V1LabelSelectorRequirement } from '@kubernetes/client-node';
import type { Logger } from '../core/log.js';
import { Reflector, type ListWatchClient } from '../kubeapi/reflector.js';

/** certificates.k8s.io/v1 ClusterTrustBundle, the fields the node reads. */
export interface ClusterTrustBundle {
  metadata?: { name?: string; uid?: string; resourceVersion?: string; labels?: Record<string, string> };
  spec?: { signerName?: string; trustBundle?: string };
}

export const clusterTrustBundlesPath = '/apis/certificates.k8s.io/v1/clustertrustbundles';

/** kubelet's maxLabelSelectorLength. */
const maxLabelSelectorLength = 100 * 1024;

function matchesRequirement(r: V1LabelSelectorRequirement, labels: Record<string, string>): boolean {
  const has = Object.hasOwn(labels, r.key);
  const values = r.values ?? [];
  switch (r.operator) {
    case 'In':
      return has && values.includes(labels[r.key]!);
    case 'NotIn':
      return !has || !values.includes(labels[r.key]!);
    case 'Exists':
      return has;
    case 'DoesNotExist':
      return !has;
    default:
      throw new Error(`while parsing label selector: "${r.operator}" is not a valid label selector operator`);
  }
}

/** metav1.LabelSelectorAsSelector(selector).Matches: undefined matches nothing, {} matches everything. */
export function labelSelectorMatches(selector: V1LabelSelector | undefined, labels: Record<string, string>): boolean {
  if (!selector) return false;
  for (const [k, v] of Object.entries(selector.matchLabels ?? {})) if (labels[k] !== v) return false;
  // Every requirement is checked, so a bad operator fails whatever the labels.
  return (selector.matchExpressions ?? []).map((r) => matchesRequirement(r, labels)).every(Boolean);
}

/** A Fisher-Yates shuffle (Go's rand.Shuffle). */
function shuffle<T>(list: T[], random: () => number): T[] {
  for (let i = list.length - 1; i > 0; i--) {
    const j = Math.floor(random() * (i + 1));
    [list[i], list[j]] = [list[j]!, list[i]!];
  }
  return list;
}

/**
 * The DER bytes (base64) of every PEM block in the text, in order, as Go's pem.Decode loop reads them: whatever lies
 * between blocks and any block headers are dropped.
 */
export function pemBlocks(text: string): string[] {
  const blocks: string[] = [];
  for (const m of text.matchAll(/-----BEGIN ([^-\n]*)-----\r?\n([\s\S]*?)-----END \1-----/g)) {
    // Headers ("Key: value" lines, then a blank line) come before the base64, which has no colon.
    const body = m[2]!.includes(':') ? m[2]!.replace(/^[\s\S]*?\r?\n\r?\n/, '') : m[2]!;
    blocks.push(Buffer.from(body.replace(/\s+/g, ''), 'base64').toString('base64'));
  }
  return blocks;
}

/** A PEM block of the DER bytes (base64), 64 characters a line, without headers, as Go's pem.EncodeToMemory. */
export const pemBlock = (type: string, b64: string) => `-----BEGIN ${type}-----\n${b64.replace(/(.{64})/g, '$1\n').replace(/\n$/, '')}\n-----END ${type}-----\n`;

/**
 * kubelet's normalizeTrustAnchors: every PEM block of the bundles (whatever its type: only its bytes count), deduplicated,
 * re-encoded as CERTIFICATE blocks without headers, in a random order (kubelet shuffles the set it sorted).
 */
export function normalizeTrustAnchors(bundles: string[], random: () => number = Math.random): Buffer {
  const anchors = new Set(bundles.flatMap(pemBlocks));
  return Buffer.from(shuffle([...anchors].sort(), random).map((b) => pemBlock('CERTIFICATE', b)).join(''), 'utf8');
}

export interface TrustBundleManagerOptions {
  client: ListWatchClient;
  log: Logger;
  /** Some ClusterTrustBundle appeared, changed or went: the pods that project one rewrite their volumes. */
  onChange: () => void;
  /** How long the first read waits for the first list (kubelet waits 10 s). */
  syncTimeoutMs?: number;
  random?: () => number;
}

/**
 * The trust anchors of clusterTrustBundle projections. As kubelet's LazyInformerManager, the watch starts with the
 * first projection read, then runs until the agent stops; normalized anchors are cached until a bundle changes.
 */
export class ClusterTrustBundleManager {
  private reflector?: Reflector<ClusterTrustBundle>;
  private readonly controller = new AbortController();
  private readonly cache = new Map<string, Buffer>();
  private readonly waiters = new Set<() => void>();

  constructor(private readonly opts: TrustBundleManagerOptions) {}

  /** The projection's file content: kubelet's GetTrustAnchorsByName / GetTrustAnchorsBySigner, with their errors. */
  async trustAnchors(source: V1ClusterTrustBundleProjection, signal?: AbortSignal): Promise<Buffer> {
    const allowMissing = source.optional === true;
    if (source.name === undefined && source.signerName === undefined) throw new Error('ClusterTrustBundle projection requires either name or signerName to be set');
    const reflector = await this.synced(signal);
    if (source.name !== undefined) {
      const key = `name\0${source.name}`;
      const cached = this.cache.get(key);
      if (cached) return cached;
      const bundle = reflector.list().find((b) => b.metadata?.name === source.name);
      if (!bundle) {
        if (allowMissing) return Buffer.alloc(0);
        throw new Error(`while getting ClusterTrustBundle: clustertrustbundle.certificates.k8s.io "${source.name}" not found`);
      }
      return this.remember(key, [bundle]);
    }
    const key = `signer\0${source.signerName}\0${JSON.stringify(source.labelSelector ?? null)}`;
    if (key.length > maxLabelSelectorLength) throw new Error(`label selector length (${key.length}) is larger than ${maxLabelSelectorLength}`);
    const cached = this.cache.get(key);
    if (cached) return cached;
    const bundles = reflector.list().filter((b) => labelSelectorMatches(source.labelSelector, b.metadata?.labels ?? {}) && b.spec?.signerName === source.signerName);
    if (bundles.length === 0) {
      if (allowMissing) return Buffer.alloc(0);
      throw new Error('combination of signerName and labelSelector matched zero ClusterTrustBundles');
    }
    return this.remember(key, bundles);
  }

  /** Stops the watch (the agent is stopping). */
  stop(): void {
    this.controller.abort();
  }

  private remember(key: string, bundles: ClusterTrustBundle[]): Buffer {
    const anchors = normalizeTrustAnchors(bundles.map((b) => b.spec?.trustBundle ?? ''), this.opts.random);
    this.cache.set(key, anchors);
    return anchors;
  }

  /** Starts the watch on first use and waits for its first list (up to the sync timeout, then kubelet's error). */
  private async synced(signal?: AbortSignal): Promise<Reflector<ClusterTrustBundle>> {
    if (!this.reflector) {
      this.reflector = new Reflector<ClusterTrustBundle>({
        client: this.opts.client,
        path: clusterTrustBundlesPath,
        what: 'clustertrustbundles',
        log: this.opts.log,
        onChange: () => {
          this.cache.clear();
          for (const wake of [...this.waiters]) wake();
          this.opts.onChange();
        },
      });
      this.opts.log.info({ apiGroup: 'certificates.k8s.io/v1' }, 'Started ClusterTrustBundle informer');
      void this.reflector.run(this.controller.signal);
    }
    const reflector = this.reflector;
    if (!reflector.hasSynced) {
      await new Promise<void>((resolve) => {
        const done = () => {
          clearTimeout(timer);
          this.waiters.delete(done);
          signal?.removeEventListener('abort', done);
          resolve();
        };
        const timer = setTimeout(done, this.opts.syncTimeoutMs ?? 10_000);
        this.waiters.add(done);
        signal?.addEventListener('abort', done, { once: true });
      });
    }
    if (!reflector.hasSynced) throw new Error('ClusterTrustBundle informer has not yet synced');
    return reflector;
  }
}
