// Static pod manifests: decodes a file's Pod documents, validates them and applies kubelet's file-source defaults.
import { canonicalJson } from '../core/canonical-json.js';
import { createHash } from 'node:crypto';
import type { V1Container, V1Pod, V1Probe, V1Toleration } from '@kubernetes/client-node';
import { parseAllDocuments, type DocumentOptions, type ParseOptions, type SchemaOptions } from 'yaml';
import { defaultImagePullPolicy } from '../core/image-reference.js';
import { CONFIG_HASH_ANNOTATION, CONFIG_SEEN_ANNOTATION, CONFIG_SOURCE_ANNOTATION, FILE_SOURCE } from '../core/config-annotations.js';
import { isObject } from './field-errors.js';
import { validatePodDocument } from './validation.js';
import { apiObjectReference } from './api-references.js';
import { probeDefaults } from '../prober/probe-spec.js';
import { boundedCopy, ObjectLimitError } from '../core/bounded-walk.js';
import { podLimitViolation } from '../decisions/pod-limits.js';


/** Priorities the apiserver's priority admission gives the two built-in classes; any other class reads as 0 here. */
const builtinPriorities: Record<string, number> = {
  'system-node-critical': 2000001000,
  'system-cluster-critical': 2000000000,
};

export interface ManifestError {
  file: string;
  /** 0-based index of the YAML document in the file. */
  document: number;
  /** Field path such as `spec.containers[1].name`; "" for a document that cannot be read at all. */
  field: string;
  message: string;
}

// kubelet decodes manifests with a YAML 1.1 reader: `0644` is octal, `yes` is true. Timestamps and
// base-60 numbers stay strings, as they do when Go decodes into a string field.
const stringScalarTags = new Set(['timestamp', 'intTime', 'floatTime']);
const yamlOptions: ParseOptions & DocumentOptions & SchemaOptions = {
  version: '1.1',
  merge: true,
  customTags: (tags) =>
    tags.filter((t) =>
      typeof t === 'string' ? !stringScalarTags.has(t) : !(t.tag === 'tag:yaml.org,2002:timestamp' || ('format' in t && t.format === 'TIME')),
    ),
};

/**
 * Decodes every document in a manifest file and returns the valid pods, defaulted as kubelet's file source
 * does, plus one error per problem found. An invalid document is dropped; the file's other documents still load.
 * A syntax error anywhere makes the whole file unreadable (one error, field "").
 * `seenAt` is the first-seen time recorded in the config.seen annotation; it does not enter the UID.
 */
export function parsePodManifests(file: string, text: string, nodeName: string, seenAt: Date = new Date()): { pods: V1Pod[]; errors: ManifestError[] } {
  const decoded = decodeDocuments(text);
  if ('syntaxError' in decoded) {
    return { pods: [], errors: [{ file, document: decoded.document, field: '', message: decoded.syntaxError }] };
  }

  const pods: V1Pod[] = [];
  const errors: ManifestError[] = [];
  const fullNames = new Set<string>();
  const uids = new Set<string>();
  decoded.documents.forEach((raw, document) => {
    if (raw === null || raw === undefined) return;
    const fail = (field: string, message: string) => errors.push({ file, document, field, message });
    if (!isObject(raw)) {
      fail('', `must be a Pod object, not ${Array.isArray(raw) ? 'a list' : `a ${typeof raw}`}`);
      return;
    }
    let doc: Record<string, unknown>;
    try {
      // Go decodes an explicit null as "not set"; dropping null-valued keys lets the rest of nodelet test for absence only.
      doc = boundedCopy(raw, { dropNulls: true }) as Record<string, unknown>;
    } catch (e) {
      if (!(e instanceof ObjectLimitError)) throw e;
      fail(e.field, e.detail);
      return;
    }
    if (!checkTypeMeta(doc, fail)) return;
    const fieldErrors = validatePodDocument(doc, (name) => staticPodName(name, nodeName));
    if (fieldErrors.length > 0) {
      for (const e of fieldErrors) fail(e.field, e.message);
      return;
    }
    const pod = applyStaticPodDefaults(doc, file, nodeName, seenAt);
    // kubelet 1.37 refuses such a manifest after validating it (its file source's tryDecodeSinglePod).
    const reference = apiObjectReference(pod);
    if (reference) {
      fail(reference.field, `static pods may not reference ${reference.resource}`);
      return;
    }
    const overLimit = podLimitViolation(pod);
    if (overLimit) {
      fail(overLimit.field, overLimit.message);
      return;
    }
    const fullName = `${pod.metadata?.namespace}/${pod.metadata?.name}`;
    const uid = pod.metadata?.uid ?? '';
    if (fullNames.has(fullName)) {
      fail('metadata.name', `Duplicate value: ${JSON.stringify(fullName)}`);
      return;
    }
    if (uids.has(uid)) {
      fail('metadata.uid', `Duplicate value: ${JSON.stringify(uid)}`);
      return;
    }
    fullNames.add(fullName);
    uids.add(uid);
    pods.push(pod);
  });
  return { pods, errors };
}

const MAX_ALIAS_COUNT = 100;

type Decoded = { documents: unknown[] } | { syntaxError: string; document: number };

// YAML allows no C0 control character but tab and line breaks, nor DEL; Go's YAML reader refuses them with this message.
const controlCharacter = /[\u0000-\u0008\u000b\u000c\u000e-\u001f\u007f]/;

function decodeDocuments(text: string): Decoded {
  if (controlCharacter.test(text)) return { syntaxError: 'control characters are not allowed', document: 0 };
  // Plain JSON is the common machine-written form; JSON.parse is faster and exact for it.
  if (/^\s*\{/.test(text)) {
    try {
      return { documents: [JSON.parse(text) as unknown] };
    } catch {
      // Fall through: the YAML reader accepts more and reports positions as line/column.
    }
  }
  let index = 0;
  try {
    const docs = parseAllDocuments(text, yamlOptions);
    if (!Array.isArray(docs)) return { documents: [] };
    const documents: unknown[] = [];
    for (const doc of docs) {
      const err = doc.errors[0];
      if (err?.code === 'RESOURCE_EXHAUSTION') {
        // The reader's own recursion ran out of stack: say what the input did, not what the reader hit.
        const at = err.linePos?.[0];
        return { syntaxError: `nested too deep to read${at ? ` at line ${at.line}, column ${at.col}` : ''}`, document: index };
      }
      if (err) return { syntaxError: firstLine(err.message), document: index };
      // The YAML library's guard against alias bombs: an anchor's nodes times its aliases stay within the count.
      documents.push(doc.toJS({ maxAliasCount: MAX_ALIAS_COUNT }));
      index++;
    }
    return { documents };
  } catch (e) {
    // An alias bomb (ReferenceError from the alias count), or the reader's own stack on pathological input.
    return { syntaxError: e instanceof Error ? firstLine(e.message) : String(e), document: index };
  }
}

// The YAML reader appends a source excerpt after the first line; a log line wants just "... at line L, column C".
function firstLine(message: string): string {
  return (message.split('\n', 1)[0] ?? '').replace(/:$/, '');
}

function checkTypeMeta(doc: Record<string, unknown>, fail: (field: string, message: string) => void): boolean {
  const { apiVersion, kind } = doc;
  let ok = true;
  if (kind === undefined || kind === '') {
    fail('kind', 'Required value');
    ok = false;
  } else if (kind !== 'Pod') {
    fail('kind', `Unsupported value: ${JSON.stringify(kind)}: supported values: "Pod"`);
    ok = false;
  }
  if (apiVersion === undefined || apiVersion === '') {
    fail('apiVersion', 'Required value');
    ok = false;
  } else if (apiVersion !== 'v1') {
    fail('apiVersion', `Unsupported value: ${JSON.stringify(apiVersion)}: supported values: "v1"`);
    ok = false;
  }
  return ok;
}

/** kubelet's generatePodName: static pods are named `<name>-<node name>` so mirror pods of different nodes never clash. */
export function staticPodName(name: string, nodeName: string): string {
  return `${name}-${nodeName.toLowerCase()}`;
}

/**
 * kubelet's file-source UID: md5 over the node, the file and the decoded object, so the same manifest on the
 * same node keeps its UID across restarts and any change to it makes a new pod.
 */
export function staticPodUid(doc: unknown, file: string, nodeName: string): string {
  return createHash('md5').update(`host:${nodeName}`).update(`file:${file}`).update(canonicalJson(doc)).digest('hex');
}


/** kubelet's applyDefaults for file pods plus the apiserver defaults the pod lifecycle relies on. */
function applyStaticPodDefaults(doc: Record<string, unknown>, file: string, nodeName: string, seenAt: Date): V1Pod {
  const pod = structuredClone(doc) as V1Pod;
  const metadata = (pod.metadata ??= {});
  const uid = metadata.uid || staticPodUid(doc, file, nodeName);
  metadata.name = staticPodName(metadata.name ?? '', nodeName);
  metadata.namespace ||= 'default';
  metadata.uid = uid;
  metadata.annotations = {
    ...metadata.annotations,
    [CONFIG_HASH_ANNOTATION]: uid,
    [CONFIG_SEEN_ANNOTATION]: seenAt.toISOString(),
    [CONFIG_SOURCE_ANNOTATION]: FILE_SOURCE,
  };

  const spec = pod.spec!;
  spec.nodeName = nodeName;
  spec.restartPolicy ??= 'Always';
  spec.terminationGracePeriodSeconds ??= 30;
  spec.dnsPolicy ??= 'ClusterFirst';
  spec.schedulerName ??= 'default-scheduler';
  spec.securityContext ??= {};
  spec.enableServiceLinks ??= true;
  spec.priority ??= builtinPriorities[spec.priorityClassName ?? ''] ?? 0;
  spec.tolerations = withStaticPodToleration(spec.tolerations ?? []);
  for (const c of spec.initContainers ?? []) defaultContainer(c, spec.hostNetwork === true);
  for (const c of spec.containers) defaultContainer(c, spec.hostNetwork === true);
  // SetDefaults_Volume: an image volume's pullPolicy as a container's imagePullPolicy.
  for (const v of spec.volumes ?? []) if (v.image) v.image.pullPolicy ||= defaultImagePullPolicy(v.image.reference ?? '');

  pod.status = { phase: 'Pending' };
  return { apiVersion: 'v1', kind: 'Pod', metadata, spec, status: pod.status };
}

function defaultContainer(c: V1Container, hostNetwork: boolean): void {
  c.imagePullPolicy ??= defaultImagePullPolicy(c.image ?? '');
  c.terminationMessagePath ??= '/dev/termination-log';
  c.terminationMessagePolicy ??= 'File';
  c.resources ??= {};
  // SetDefaults_Pod: a limit without a request makes the request equal to the limit (QoS depends on it).
  if (c.resources.limits) c.resources.requests = { ...c.resources.limits, ...c.resources.requests };
  for (const port of c.ports ?? []) {
    port.protocol ??= 'TCP';
    if (hostNetwork && !port.hostPort) port.hostPort = port.containerPort;
  }
  for (const probe of [c.livenessProbe, c.readinessProbe, c.startupProbe]) if (probe) defaultProbe(probe);
}

/** The apiserver's SetDefaults_Probe and SetDefaults_HTTPGetAction, which kubelet's decoder applies to static pods. */
function defaultProbe(probe: V1Probe): void {
  probe.timeoutSeconds ||= probeDefaults.timeoutSeconds;
  probe.periodSeconds ||= probeDefaults.periodSeconds;
  probe.successThreshold ||= probeDefaults.successThreshold;
  probe.failureThreshold ||= probeDefaults.failureThreshold;
  if (probe.httpGet) {
    probe.httpGet.path ||= '/';
    probe.httpGet.scheme ||= 'HTTP';
  }
}

/** Static pods tolerate every NoExecute taint, so node problems never evict them (AddOrUpdateTolerationInPod). */
function withStaticPodToleration(tolerations: V1Toleration[]): V1Toleration[] {
  const present = tolerations.some((t) => !t.key && t.operator === 'Exists' && !t.value && t.effect === 'NoExecute');
  return present ? tolerations : [...tolerations, { operator: 'Exists', effect: 'NoExecute' }];
}
