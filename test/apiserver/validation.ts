// Validation of the served kinds with kube-apiserver's rules and messages (pkg/apis/core/validation, apimachinery's ObjectMeta rules), and unknown-field detection for fieldValidation.
import { elementType, fieldType, isFreeForm, isModel, mapValueType, modelForKind } from './schema.js';
import { parseQuantity, quantityPattern } from './quantity.js';
import type { FieldError } from './types.js';

type Obj = Record<string, unknown>;

function isObject(v: unknown): v is Obj {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

function objects(v: unknown): Obj[] {
  return Array.isArray(v) ? v.filter(isObject) : [];
}

function str(v: unknown): string {
  return typeof v === 'string' ? v : '';
}

function deepEqual(a: unknown, b: unknown): boolean {
  return JSON.stringify(canonical(a)) === JSON.stringify(canonical(b));
}

/** Sorted keys, and empty or absent values dropped, so objects compare as Go's semantic equality would. */
function canonical(v: unknown): unknown {
  if (Array.isArray(v)) return v.map(canonical);
  if (!isObject(v)) return v;
  const out: Obj = {};
  for (const k of Object.keys(v).sort()) if (v[k] !== undefined && v[k] !== null) out[k] = canonical(v[k]);
  return out;
}

// ---------------------------------------------------------------------------------------------------------------
// field.Error constructors: message is field.Error.ErrorBody(), type the metav1.CauseType.

/** A value as field.Error prints it: strings quoted, numbers and booleans bare, null as null. */
function showValue(v: unknown): string {
  if (v === undefined || v === null) return 'null';
  if (typeof v === 'string') return JSON.stringify(v);
  if (typeof v === 'number' || typeof v === 'boolean') return String(v);
  return JSON.stringify(v);
}

const withDetail = (s: string, detail: string): string => (detail ? `${s}: ${detail}` : s);

const required = (field: string, detail = ''): FieldError => ({ type: 'FieldValueRequired', field, message: withDetail('Required value', detail) });
const invalid = (field: string, value: unknown, detail: string): FieldError => ({
  type: 'FieldValueInvalid',
  field,
  message: withDetail(`Invalid value: ${showValue(value)}`, detail),
});
const forbidden = (field: string, detail: string): FieldError => ({ type: 'FieldValueForbidden', field, message: withDetail('Forbidden', detail) });
const duplicate = (field: string, value: unknown): FieldError => ({ type: 'FieldValueDuplicate', field, message: `Duplicate value: ${showValue(value)}` });
const notFound = (field: string, value: unknown): FieldError => ({ type: 'FieldValueNotFound', field, message: `Not found: ${showValue(value)}` });
const tooLong = (field: string, max: number): FieldError => ({ type: 'FieldValueTooLong', field, message: `Too long: may not be more than ${max} bytes` });
const notSupported = (field: string, value: unknown, valid: string[]): FieldError => ({
  type: 'FieldValueNotSupported',
  field,
  message: withDetail(`Unsupported value: ${showValue(value)}`, valid.length ? `supported values: ${valid.map((v) => JSON.stringify(v)).join(', ')}` : ''),
});

const at = (path: string, name: string): string => (path ? `${path}.${name}` : name);
const idx = (path: string, i: number | string): string => `${path}[${i}]`;

// ---------------------------------------------------------------------------------------------------------------
// Syntax checks (k8s.io/apimachinery/pkg/util/validation), each returning kube's messages.

function regexError(msg: string, fmt: string, ...examples: string[]): string {
  if (examples.length === 0) return `${msg} (regex used for validation is '${fmt}')`;
  // Go's RegexError writes "'<example>', " per example joined by " or ", hence the double space kube prints.
  return `${msg} (e.g. ${examples.map((e) => `'${e}', `).join(' or ')}regex used for validation is '${fmt}')`;
}
const maxLenError = (n: number): string => `must be no more than ${n} characters`;

const dns1123LabelFmt = '[a-z0-9]([-a-z0-9]*[a-z0-9])?';
const dns1123SubdomainFmt = `${dns1123LabelFmt}(\\.${dns1123LabelFmt})*`;
const qualifiedNameFmt = '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]';
const labelValueFmt = `(${qualifiedNameFmt})?`;
const configMapKeyFmt = '[-._a-zA-Z0-9]+';
const full = (fmt: string): RegExp => new RegExp(`^${fmt}$`);

function isDNS1123Label(v: string): string[] {
  const errs: string[] = [];
  if (v.length > 63) errs.push(maxLenError(63));
  if (!full(dns1123LabelFmt).test(v)) {
    errs.push(
      full(dns1123SubdomainFmt).test(v)
        ? 'must not contain dots'
        : regexError('a lowercase RFC 1123 label must consist of lower case alphanumeric characters or \'-\', and must start and end with an alphanumeric character', dns1123LabelFmt, 'my-name', '123-abc'),
    );
  }
  return errs;
}

function isDNS1123Subdomain(v: string): string[] {
  const errs: string[] = [];
  if (v.length > 253) errs.push(maxLenError(253));
  if (!full(dns1123SubdomainFmt).test(v)) {
    errs.push(regexError("a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character", dns1123SubdomainFmt, 'example.com'));
  }
  return errs;
}

const qualifiedNameErrMsg = "must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character";

function isQualifiedName(v: string): string[] {
  const errs: string[] = [];
  const parts = v.split('/');
  let name: string;
  if (parts.length === 1) {
    name = parts[0]!;
  } else if (parts.length === 2) {
    const prefix = parts[0]!;
    name = parts[1]!;
    if (prefix.length === 0) errs.push('prefix part must be non-empty');
    else errs.push(...isDNS1123Subdomain(prefix).map((m) => `prefix part ${m}`));
  } else {
    return [`a qualified name ${regexError(qualifiedNameErrMsg, qualifiedNameFmt, 'MyName', 'my.name', '123-abc')} with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')`];
  }
  if (name.length === 0) errs.push('name part must be non-empty');
  else if (name.length > 63) errs.push(`name part ${maxLenError(63)}`);
  if (!full(qualifiedNameFmt).test(name)) errs.push(`name part ${regexError(qualifiedNameErrMsg, qualifiedNameFmt, 'MyName', 'my.name', '123-abc')}`);
  return errs;
}

function isValidLabelValue(v: string): string[] {
  const errs: string[] = [];
  if (v.length > 63) errs.push(maxLenError(63));
  if (!full(labelValueFmt).test(v)) {
    errs.push(regexError("a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character", labelValueFmt, 'MyValue', 'my_value', '12345'));
  }
  return errs;
}

function chDirPrefix(v: string): string[] {
  if (v === '.') return ["must not be '.'"];
  if (v === '..') return ["must not be '..'"];
  if (v.startsWith('..')) return ["must not start with '..'"];
  return [];
}

function isConfigMapKey(v: string): string[] {
  const errs: string[] = [];
  if (v.length > 253) errs.push(maxLenError(253));
  if (!full(configMapKeyFmt).test(v)) errs.push(regexError("a valid config key must consist of alphanumeric characters, '-', '_' or '.'", configMapKeyFmt, 'key.name', 'KEY_NAME', 'key-name'));
  return [...errs, ...chDirPrefix(v)];
}

/** RelaxedEnvironmentVariableValidation is beta and on in v1.32: any printable ASCII but '='. */
function isRelaxedEnvVarName(v: string): string[] {
  const errs: string[] = [];
  if (v.length === 0) errs.push('environment variable name must be non-empty');
  if ([...v].some((ch) => ch.charCodeAt(0) > 126 || ch.charCodeAt(0) < 32 || ch === '=')) {
    errs.push("a valid environment variable name must consist only of printable ASCII characters other than '='");
  }
  return errs;
}

function isValidPortName(v: string): string[] {
  const errs: string[] = [];
  if (v.length > 15) errs.push(maxLenError(15));
  if (!/^[-a-z0-9]+$/.test(v)) errs.push('must contain only alpha-numeric characters (a-z, 0-9), and hyphens (-)');
  if (!/[a-z]/.test(v)) errs.push('must contain at least one letter (a-z)');
  if (v.includes('--')) errs.push('must not contain consecutive hyphens');
  if (v.startsWith('-') || v.endsWith('-')) errs.push('must not begin or end with a hyphen');
  return errs;
}

const inclusiveRange = (lo: number, hi: number): string => `must be between ${lo} and ${hi}, inclusive`;
const isValidPortNum = (p: number): string[] => (Number.isInteger(p) && p >= 1 && p <= 65535 ? [] : [inclusiveRange(1, 65535)]);
const nonNegative = 'must be greater than or equal to 0';

function isIP(v: string): boolean {
  if (/^(\d{1,3})\.(\d{1,3})\.(\d{1,3})\.(\d{1,3})$/.test(v)) return v.split('.').every((p) => Number(p) <= 255);
  return /^[0-9a-fA-F:.]+$/.test(v) && v.includes(':') && (v.match(/::/g) ?? []).length <= 1;
}

function isCIDR(v: string): boolean {
  const [ip = '', bits, extra] = v.split('/');
  if (bits === undefined || extra !== undefined || !/^\d+$/.test(bits) || !isIP(ip)) return false;
  return Number(bits) <= (ip.includes(':') ? 128 : 32);
}

// ---------------------------------------------------------------------------------------------------------------
// ObjectMeta

/** NameIsDNSSubdomain / NameIsDNSLabel with kube's generateName handling (a trailing '-' is allowed in a prefix). */
function nameErrors(name: string, prefix: boolean, label: boolean): string[] {
  const masked = prefix && name.length > 1 && name.endsWith('-') ? `${name.slice(0, -1)}a` : name;
  return label ? isDNS1123Label(masked) : isDNS1123Subdomain(masked);
}

const clusterScoped = new Set(['Node', 'Namespace']);
const standardFinalizers = new Set(['kubernetes', 'orphan', 'foregroundDeletion']);
const totalAnnotationSizeLimit = 256 * 1024;

function validateLabelsAndAnnotations(meta: Obj, path: string): FieldError[] {
  const errs: FieldError[] = [];
  const labelsPath = at(path, 'labels');
  for (const [k, v] of Object.entries(isObject(meta.labels) ? meta.labels : {})) {
    errs.push(...isQualifiedName(k).map((m) => invalid(labelsPath, k, m)));
    errs.push(...isValidLabelValue(str(v)).map((m) => invalid(labelsPath, v, m)));
  }
  const annotations = isObject(meta.annotations) ? meta.annotations : {};
  const annotationsPath = at(path, 'annotations');
  let size = 0;
  for (const [k, v] of Object.entries(annotations)) {
    errs.push(...isQualifiedName(k.toLowerCase()).map((m) => invalid(annotationsPath, k, m)));
    size += k.length + str(v).length;
  }
  if (size > totalAnnotationSizeLimit) errs.push(tooLong(annotationsPath, totalAnnotationSizeLimit));
  const ownersPath = at(path, 'ownerReferences');
  for (const ref of objects(meta.ownerReferences)) {
    const version = str(ref.apiVersion).split('/').pop() ?? '';
    if (!version) errs.push(invalid(at(ownersPath, 'apiVersion'), str(ref.apiVersion), 'version must not be empty'));
    if (!ref.kind) errs.push(invalid(at(ownersPath, 'kind'), str(ref.kind), 'must not be empty'));
    if (!ref.name) errs.push(invalid(at(ownersPath, 'name'), str(ref.name), 'must not be empty'));
    if (!ref.uid) errs.push(invalid(at(ownersPath, 'uid'), str(ref.uid), 'must not be empty'));
  }
  return errs;
}

function validateMetadata(kind: string, meta: Obj): FieldError[] {
  const errs: FieldError[] = [];
  const label = kind === 'Namespace';
  const generateName = str(meta.generateName);
  const name = str(meta.name);
  if (generateName) errs.push(...nameErrors(generateName, true, label).map((m) => invalid('metadata.generateName', generateName, m)));
  if (!name) errs.push(required('metadata.name', 'name or generateName is required'));
  else errs.push(...nameErrors(name, false, label).map((m) => invalid('metadata.name', name, m)));
  const namespace = str(meta.namespace);
  if (!clusterScoped.has(kind)) {
    if (!namespace) errs.push(required('metadata.namespace'));
    else errs.push(...isDNS1123Label(namespace).map((m) => invalid('metadata.namespace', namespace, m)));
  } else if (namespace) {
    errs.push(forbidden('metadata.namespace', 'not allowed on this type'));
  }
  if (typeof meta.generation === 'number' && meta.generation < 0) errs.push(invalid('metadata.generation', meta.generation, nonNegative));
  errs.push(...validateLabelsAndAnnotations(meta, 'metadata'));
  for (const f of Array.isArray(meta.finalizers) ? meta.finalizers : []) {
    const finalizer = str(f);
    const msgs = isQualifiedName(finalizer);
    errs.push(...msgs.map((m) => invalid('metadata.finalizers', finalizer, m)));
    if (msgs.length === 0 && !finalizer.includes('/') && !standardFinalizers.has(finalizer)) {
      errs.push(invalid('metadata.finalizers', finalizer, 'name is neither a standard finalizer name nor is it fully qualified'));
    }
  }
  return errs;
}

const immutable = (field: string, value: unknown): FieldError => invalid(field, value, 'field is immutable');

function validateMetadataUpdate(meta: Obj, old: Obj): FieldError[] {
  const errs: FieldError[] = [];
  if (old.deletionTimestamp) {
    const oldFinalizers = new Set(Array.isArray(old.finalizers) ? old.finalizers : []);
    const added = (Array.isArray(meta.finalizers) ? meta.finalizers : []).filter((f) => !oldFinalizers.has(f));
    if (added.length) errs.push(forbidden('metadata.finalizers', `no new finalizers can be added if the object is being deleted, found new finalizers ${JSON.stringify(added).replace(/,/g, ' ')}`));
  }
  if (!str(meta.resourceVersion)) errs.push(invalid('metadata.resourceVersion', '', 'must be specified for an update'));
  if (typeof meta.generation === 'number' && typeof old.generation === 'number' && meta.generation < old.generation) {
    errs.push(invalid('metadata.generation', meta.generation, 'must not be decremented'));
  }
  for (const field of ['name', 'namespace', 'uid', 'creationTimestamp', 'deletionTimestamp', 'deletionGracePeriodSeconds']) {
    if (!deepEqual(meta[field] ?? null, old[field] ?? null)) errs.push(immutable(`metadata.${field}`, meta[field] ?? null));
  }
  errs.push(...validateLabelsAndAnnotations(meta, 'metadata'));
  return errs;
}

// ---------------------------------------------------------------------------------------------------------------
// Pod

const standardContainerResources = new Set(['cpu', 'memory', 'ephemeral-storage']);

function validateResources(resources: unknown, path: string): FieldError[] {
  if (!isObject(resources)) return [];
  const errs: FieldError[] = [];
  const parsed: Record<'limits' | 'requests', Map<string, number>> = { limits: new Map(), requests: new Map() };
  for (const section of ['limits', 'requests'] as const) {
    const list = resources[section];
    if (!isObject(list)) continue;
    for (const [name, q] of Object.entries(list)) {
      const field = idx(at(path, section), name);
      if (!standardContainerResources.has(name) && !name.startsWith('hugepages-') && isQualifiedName(name).length === 0 && !name.includes('/')) {
        errs.push(invalid(field, name, 'must be a standard resource for containers'));
      } else if (isQualifiedName(name).length > 0) {
        errs.push(...isQualifiedName(name).map((m) => invalid(field, name, m)));
      }
      const value = parseQuantity(q);
      if (value === undefined) {
        errs.push(invalid(field, q, `quantities must match the regular expression '${quantityPattern}'`));
        continue;
      }
      if (value < 0) errs.push(invalid(field, String(q), nonNegative));
      parsed[section].set(name, value);
    }
  }
  for (const [name, req] of parsed.requests) {
    const limit = parsed.limits.get(name);
    if (limit !== undefined && req > limit) {
      const limits = resources.limits as Obj;
      errs.push(invalid(idx(at(path, 'requests'), name), String((resources.requests as Obj)[name]), `must be less than or equal to ${name} limit of ${String(limits[name])}`));
    }
  }
  return errs;
}

const probeHandlers = ['exec', 'httpGet', 'tcpSocket', 'grpc'];
const lifecycleHandlers = ['exec', 'httpGet', 'tcpSocket', 'sleep'];

/** validateHandler: exactly one handler type. */
function validateHandler(handler: Obj, path: string, kinds: string[]): FieldError[] {
  const present = kinds.filter((k) => handler[k] !== undefined && handler[k] !== null);
  if (present.length === 0) return [required(path, 'must specify a handler type')];
  return present.slice(1).map((k) => forbidden(at(path, k), 'may not specify more than 1 handler type'));
}

function validatePortNumOrName(port: unknown, path: string): FieldError[] {
  if (typeof port === 'number') return isValidPortNum(port).map((m) => invalid(path, port, m));
  if (typeof port === 'string' && port) return isValidPortName(port).map((m) => invalid(path, port, m));
  return [required(path)];
}

function validateProbe(probe: unknown, path: string, mustSucceedOnce: boolean): FieldError[] {
  if (!isObject(probe)) return [];
  const errs = validateHandler(probe, path, probeHandlers);
  for (const field of ['initialDelaySeconds', 'timeoutSeconds', 'periodSeconds', 'successThreshold', 'failureThreshold']) {
    const v = probe[field];
    if (typeof v === 'number' && v < 0) errs.push(invalid(at(path, field), v, nonNegative));
  }
  if (mustSucceedOnce && typeof probe.successThreshold === 'number' && probe.successThreshold !== 1) {
    errs.push(invalid(at(path, 'successThreshold'), probe.successThreshold, 'must be 1'));
  }
  if (typeof probe.terminationGracePeriodSeconds === 'number' && probe.terminationGracePeriodSeconds <= 0) {
    errs.push(invalid(at(path, 'terminationGracePeriodSeconds'), probe.terminationGracePeriodSeconds, 'must be greater than 0'));
  }
  if (isObject(probe.httpGet)) {
    errs.push(...validatePortNumOrName(probe.httpGet.port, at(at(path, 'httpGet'), 'port')));
    const scheme = probe.httpGet.scheme;
    if (scheme !== undefined && scheme !== 'HTTP' && scheme !== 'HTTPS') errs.push(notSupported(at(at(path, 'httpGet'), 'scheme'), scheme, ['HTTP', 'HTTPS']));
  }
  if (isObject(probe.tcpSocket)) errs.push(...validatePortNumOrName(probe.tcpSocket.port, at(at(path, 'tcpSocket'), 'port')));
  if (isObject(probe.exec) && !(Array.isArray(probe.exec.command) && probe.exec.command.length > 0)) errs.push(required(at(at(path, 'exec'), 'command')));
  return errs;
}

function validatePorts(ports: unknown, path: string): FieldError[] {
  const errs: FieldError[] = [];
  const names = new Set<string>();
  objects(ports).forEach((port, i) => {
    const p = idx(path, i);
    if (port.name !== undefined && port.name !== '') {
      const name = str(port.name);
      errs.push(...isValidPortName(name).map((m) => invalid(at(p, 'name'), name, m)));
      if (names.has(name)) errs.push(duplicate(at(p, 'name'), name));
      names.add(name);
    }
    if (!port.containerPort) errs.push(required(at(p, 'containerPort')));
    else errs.push(...isValidPortNum(Number(port.containerPort)).map((m) => invalid(at(p, 'containerPort'), port.containerPort, m)));
    if (port.hostPort) errs.push(...isValidPortNum(Number(port.hostPort)).map((m) => invalid(at(p, 'hostPort'), port.hostPort, m)));
    if (!port.protocol) errs.push(required(at(p, 'protocol')));
    else if (!['SCTP', 'TCP', 'UDP'].includes(str(port.protocol))) errs.push(notSupported(at(p, 'protocol'), port.protocol, ['SCTP', 'TCP', 'UDP']));
  });
  return errs;
}

function validateEnv(env: unknown, path: string): FieldError[] {
  const errs: FieldError[] = [];
  objects(env).forEach((e, i) => {
    const p = idx(path, i);
    const name = str(e.name);
    if (!name) errs.push(required(at(p, 'name')));
    else errs.push(...isRelaxedEnvVarName(name).map((m) => invalid(at(p, 'name'), name, m)));
    if (isObject(e.valueFrom)) {
      const sources = ['fieldRef', 'resourceFieldRef', 'configMapKeyRef', 'secretKeyRef'].filter((k) => isObject((e.valueFrom as Obj)[k]));
      const vf = at(p, 'valueFrom');
      if (sources.length === 0) errs.push(invalid(vf, '', 'must specify one of: `fieldRef`, `resourceFieldRef`, `configMapKeyRef` or `secretKeyRef`'));
      else if (sources.length > 1) errs.push(invalid(vf, '', 'may not have more than one field specified at a time'));
      if (str(e.value) !== '') errs.push(invalid(vf, '', 'may not be specified when `value` is not empty'));
      for (const ref of ['configMapKeyRef', 'secretKeyRef']) {
        const r = (e.valueFrom as Obj)[ref];
        if (!isObject(r)) continue;
        if (!r.name) errs.push(required(at(at(vf, ref), 'name')));
        if (!r.key) errs.push(required(at(at(vf, ref), 'key')));
        else errs.push(...isConfigMapKey(str(r.key)).map((m) => invalid(at(at(vf, ref), 'key'), r.key, m)));
      }
      const fieldRef = (e.valueFrom as Obj).fieldRef;
      if (isObject(fieldRef)) {
        if (!fieldRef.fieldPath) errs.push(required(at(at(vf, 'fieldRef'), 'fieldPath')));
        if (!fieldRef.apiVersion) errs.push(required(at(at(vf, 'fieldRef'), 'apiVersion')));
      }
    }
  });
  return errs;
}

/** VolumeSource members in the order validateVolumeSource checks them (the first one set counts, later ones are Forbidden). */
const volumeSources = [
  'emptyDir', 'hostPath', 'gitRepo', 'gcePersistentDisk', 'awsElasticBlockStore', 'secret', 'nfs', 'iscsi', 'glusterfs',
  'persistentVolumeClaim', 'rbd', 'flexVolume', 'cinder', 'cephfs', 'flocker', 'downwardAPI', 'fc', 'azureFile', 'configMap',
  'vsphereVolume', 'quobyte', 'azureDisk', 'photonPersistentDisk', 'projected', 'portworxVolume', 'scaleIO', 'storageos', 'csi',
  'ephemeral', 'image',
];

const fileModeError = 'must be a number between 0 and 0777 (octal), both inclusive';

function validateMode(mode: unknown, path: string): FieldError[] {
  return typeof mode === 'number' && (mode < 0 || mode > 0o777 || !Number.isInteger(mode)) ? [invalid(path, mode, fileModeError)] : [];
}

/** validateLocalDescendingPath: relative, without '..' elements. */
function validateRelativePath(p: string, path: string): FieldError[] {
  const errs: FieldError[] = [];
  if (p.startsWith('/')) errs.push(invalid(path, p, 'must be a relative path'));
  if (p.split('/').includes('..')) errs.push(invalid(path, p, "must not contain '..'"));
  return errs;
}

function validateKeyToPaths(items: unknown, path: string): FieldError[] {
  const errs: FieldError[] = [];
  objects(items).forEach((item, i) => {
    const p = idx(path, i);
    if (!item.key) errs.push(required(at(p, 'key')));
    if (!item.path) errs.push(required(at(p, 'path')));
    else errs.push(...validateRelativePath(str(item.path), at(p, 'path')));
    errs.push(...validateMode(item.mode, at(p, 'mode')));
  });
  return errs;
}

function validateVolumes(volumes: unknown, path: string): { errs: FieldError[]; names: Set<string> } {
  const errs: FieldError[] = [];
  const names = new Set<string>();
  objects(volumes).forEach((v, i) => {
    const p = idx(path, i);
    const name = str(v.name);
    if (!name) errs.push(required(at(p, 'name')));
    else errs.push(...isDNS1123Label(name).map((m) => invalid(at(p, 'name'), name, m)));
    if (name && names.has(name)) errs.push(duplicate(at(p, 'name'), name));
    else if (name) names.add(name);
    const present = volumeSources.filter((s) => v[s] !== undefined && v[s] !== null);
    if (present.length === 0) errs.push(required(p, 'must specify a volume type'));
    for (const extra of present.slice(1)) errs.push(forbidden(at(p, extra), 'may not specify more than 1 volume type'));
    if (isObject(v.configMap)) {
      if (!v.configMap.name) errs.push(required(at(at(p, 'configMap'), 'name')));
      errs.push(...validateMode(v.configMap.defaultMode, at(at(p, 'configMap'), 'defaultMode')));
      errs.push(...validateKeyToPaths(v.configMap.items, at(at(p, 'configMap'), 'items')));
    }
    if (isObject(v.secret)) {
      if (!v.secret.secretName) errs.push(required(at(at(p, 'secret'), 'secretName')));
      errs.push(...validateMode(v.secret.defaultMode, at(at(p, 'secret'), 'defaultMode')));
      errs.push(...validateKeyToPaths(v.secret.items, at(at(p, 'secret'), 'items')));
    }
    if (isObject(v.hostPath)) {
      if (!v.hostPath.path) errs.push(required(at(at(p, 'hostPath'), 'path')));
      const types = ['', 'BlockDevice', 'CharDevice', 'Directory', 'DirectoryOrCreate', 'File', 'FileOrCreate', 'Socket'];
      if (v.hostPath.type !== undefined && !types.includes(str(v.hostPath.type))) errs.push(notSupported(at(at(p, 'hostPath'), 'type'), v.hostPath.type, types));
    }
    if (isObject(v.persistentVolumeClaim) && !v.persistentVolumeClaim.claimName) errs.push(required(at(at(p, 'persistentVolumeClaim'), 'claimName')));
    if (isObject(v.downwardAPI)) errs.push(...validateMode(v.downwardAPI.defaultMode, at(at(p, 'downwardAPI'), 'defaultMode')));
    if (isObject(v.projected)) errs.push(...validateMode(v.projected.defaultMode, at(at(p, 'projected'), 'defaultMode')));
  });
  return { errs, names };
}

function validateVolumeMounts(mounts: unknown, volumes: Set<string>, path: string): FieldError[] {
  const errs: FieldError[] = [];
  const mountPaths = new Set<string>();
  objects(mounts).forEach((m, i) => {
    const p = idx(path, i);
    const name = str(m.name);
    if (!name) errs.push(required(at(p, 'name')));
    if (!volumes.has(name)) errs.push(notFound(at(p, 'name'), name));
    const mountPath = str(m.mountPath);
    if (!mountPath) errs.push(required(at(p, 'mountPath')));
    if (mountPaths.has(mountPath)) errs.push(invalid(at(p, 'mountPath'), mountPath, 'must be unique'));
    mountPaths.add(mountPath);
    if (m.subPath) errs.push(...validateRelativePath(str(m.subPath), at(p, 'subPath')));
  });
  return errs;
}

function validateContainerCommon(c: Obj, path: string, volumes: Set<string>): FieldError[] {
  const errs: FieldError[] = [];
  const name = str(c.name);
  if (!name) errs.push(required(at(path, 'name')));
  else errs.push(...isDNS1123Label(name).map((m) => invalid(at(path, 'name'), name, m)));
  if (!c.image) errs.push(required(at(path, 'image')));
  else if (str(c.image).trim() !== c.image) errs.push(invalid(at(path, 'image'), c.image, 'must not have leading or trailing whitespace'));
  const tmp = c.terminationMessagePolicy;
  if (!tmp) errs.push(required(at(path, 'terminationMessagePolicy')));
  else if (tmp !== 'File' && tmp !== 'FallbackToLogsOnError') errs.push(notSupported(at(path, 'terminationMessagePolicy'), tmp, ['File', 'FallbackToLogsOnError']));
  errs.push(...validatePorts(c.ports, at(path, 'ports')));
  errs.push(...validateEnv(c.env, at(path, 'env')));
  errs.push(...validateVolumeMounts(c.volumeMounts, volumes, at(path, 'volumeMounts')));
  const pull = c.imagePullPolicy;
  if (!pull) errs.push(required(at(path, 'imagePullPolicy')));
  else if (!['Always', 'IfNotPresent', 'Never'].includes(str(pull))) errs.push(notSupported(at(path, 'imagePullPolicy'), pull, ['Always', 'IfNotPresent', 'Never']));
  errs.push(...validateResources(c.resources, at(path, 'resources')));
  return errs;
}

function validateLifecycle(lifecycle: unknown, path: string): FieldError[] {
  if (!isObject(lifecycle)) return [];
  const errs: FieldError[] = [];
  for (const hook of ['postStart', 'preStop']) {
    const h = lifecycle[hook];
    if (isObject(h)) errs.push(...validateHandler(h, at(path, hook), lifecycleHandlers));
  }
  return errs;
}

function validateTolerations(tolerations: unknown, path: string): FieldError[] {
  const errs: FieldError[] = [];
  objects(tolerations).forEach((t, i) => {
    const p = idx(path, i);
    const key = str(t.key);
    if (key) errs.push(...isQualifiedName(key).map((m) => invalid(at(p, 'key'), key, m)));
    const operator = t.operator ?? 'Equal';
    if (!key && operator !== 'Exists') errs.push(invalid(at(p, 'operator'), operator, 'operator must be Exists when `key` is empty, which means "match all values and all keys"'));
    if (operator === 'Exists' && str(t.value) !== '') errs.push(invalid(at(p, 'operator'), t, 'value must be empty when `operator` is \'Exists\''));
    if (operator !== 'Equal' && operator !== 'Exists' && operator !== '') errs.push(notSupported(at(p, 'operator'), operator, ['Equal', 'Exists']));
    if (t.tolerationSeconds !== undefined && t.effect !== 'NoExecute') errs.push(invalid(at(p, 'effect'), t.effect ?? '', "effect must be 'NoExecute' when `tolerationSeconds` is set"));
    if (t.effect && !['NoSchedule', 'PreferNoSchedule', 'NoExecute'].includes(str(t.effect))) errs.push(notSupported(at(p, 'effect'), t.effect, ['NoSchedule', 'PreferNoSchedule', 'NoExecute']));
  });
  return errs;
}

function validatePodSpec(spec: Obj): FieldError[] {
  const { errs, names: volumes } = validateVolumes(spec.volumes, 'spec.volumes');
  const containerNames = new Set<string>();
  const containers = objects(spec.containers);
  if (containers.length === 0) errs.push(required('spec.containers'));
  containers.forEach((c, i) => {
    const p = idx('spec.containers', i);
    errs.push(...validateContainerCommon(c, p, volumes));
    if (containerNames.has(str(c.name))) errs.push(duplicate(at(p, 'name'), str(c.name)));
    containerNames.add(str(c.name));
    errs.push(...validateLifecycle(c.lifecycle, at(p, 'lifecycle')));
    errs.push(...validateProbe(c.livenessProbe, at(p, 'livenessProbe'), true));
    errs.push(...validateProbe(c.readinessProbe, at(p, 'readinessProbe'), false));
    errs.push(...validateProbe(c.startupProbe, at(p, 'startupProbe'), true));
    if (isObject(c.readinessProbe) && c.readinessProbe.terminationGracePeriodSeconds !== undefined) {
      errs.push(invalid(at(at(p, 'readinessProbe'), 'terminationGracePeriodSeconds'), c.readinessProbe.terminationGracePeriodSeconds, 'must not be set for readinessProbes'));
    }
    if (c.restartPolicy !== undefined) errs.push(forbidden(at(p, 'restartPolicy'), 'may not be set for non-init containers'));
  });
  objects(spec.initContainers).forEach((c, i) => {
    const p = idx('spec.initContainers', i);
    errs.push(...validateContainerCommon(c, p, volumes));
    if (containerNames.has(str(c.name))) errs.push(duplicate(at(p, 'name'), str(c.name)));
    containerNames.add(str(c.name));
    const sidecar = c.restartPolicy === 'Always';
    if (c.restartPolicy !== undefined && !sidecar) errs.push(notSupported(at(p, 'restartPolicy'), c.restartPolicy, ['Always']));
    if (sidecar) {
      errs.push(...validateLifecycle(c.lifecycle, at(p, 'lifecycle')));
      errs.push(...validateProbe(c.livenessProbe, at(p, 'livenessProbe'), true));
      errs.push(...validateProbe(c.readinessProbe, at(p, 'readinessProbe'), false));
      errs.push(...validateProbe(c.startupProbe, at(p, 'startupProbe'), true));
    } else {
      for (const field of ['lifecycle', 'livenessProbe', 'readinessProbe', 'startupProbe']) {
        if (c[field] !== undefined) errs.push(forbidden(at(p, field), 'may not be set for init containers without restartPolicy=Always'));
      }
    }
  });
  const restartPolicy = spec.restartPolicy;
  if (!restartPolicy) errs.push(required('spec.restartPolicy'));
  else if (!['Always', 'OnFailure', 'Never'].includes(str(restartPolicy))) errs.push(notSupported('spec.restartPolicy', restartPolicy, ['Always', 'OnFailure', 'Never']));
  const dnsPolicies = ['ClusterFirstWithHostNet', 'ClusterFirst', 'Default', 'None'];
  if (!spec.dnsPolicy) errs.push(required('spec.dnsPolicy'));
  else if (!dnsPolicies.includes(str(spec.dnsPolicy))) errs.push(notSupported('spec.dnsPolicy', spec.dnsPolicy, dnsPolicies));
  for (const [k, v] of Object.entries(isObject(spec.nodeSelector) ? spec.nodeSelector : {})) {
    errs.push(...isQualifiedName(k).map((m) => invalid('spec.nodeSelector', k, m)));
    errs.push(...isValidLabelValue(str(v)).map((m) => invalid('spec.nodeSelector', v, m)));
  }
  if (spec.serviceAccountName) errs.push(...isDNS1123Subdomain(str(spec.serviceAccountName)).map((m) => invalid('spec.serviceAccountName', spec.serviceAccountName, m)));
  if (spec.nodeName) errs.push(...isDNS1123Subdomain(str(spec.nodeName)).map((m) => invalid('spec.nodeName', spec.nodeName, m)));
  if (spec.hostname) errs.push(...isDNS1123Label(str(spec.hostname)).map((m) => invalid('spec.hostname', spec.hostname, m)));
  if (spec.subdomain) errs.push(...isDNS1123Label(str(spec.subdomain)).map((m) => invalid('spec.subdomain', spec.subdomain, m)));
  const ads = spec.activeDeadlineSeconds;
  if (typeof ads === 'number' && (ads < 1 || ads > 2147483647)) errs.push(invalid('spec.activeDeadlineSeconds', ads, inclusiveRange(1, 2147483647)));
  const tgps = spec.terminationGracePeriodSeconds;
  if (typeof tgps === 'number' && tgps < 0) errs.push(invalid('spec.terminationGracePeriodSeconds', tgps, nonNegative));
  objects(spec.imagePullSecrets).forEach((s, i) => {
    if (Object.keys(s).some((k) => k !== 'name')) errs.push(invalid(idx('spec.imagePullSecrets', i), s, 'only name may be set'));
  });
  errs.push(...validateTolerations(spec.tolerations, 'spec.tolerations'));
  if (spec.preemptionPolicy !== undefined && !['PreemptLowerPriority', 'Never'].includes(str(spec.preemptionPolicy))) {
    errs.push(notSupported('spec.preemptionPolicy', spec.preemptionPolicy, ['PreemptLowerPriority', 'Never']));
  }
  return errs;
}

function validatePodCreate(pod: Obj): FieldError[] {
  const spec = isObject(pod.spec) ? pod.spec : {};
  const errs = validatePodSpec(spec);
  if (Array.isArray(spec.ephemeralContainers) && spec.ephemeralContainers.length > 0) errs.push(forbidden('spec.ephemeralContainers', 'cannot be set on create'));
  const annotations = isObject(pod.metadata) && isObject(pod.metadata.annotations) ? pod.metadata.annotations : {};
  if ('kubernetes.io/config.mirror' in annotations && !spec.nodeName) {
    errs.push(invalid('metadata.annotations[kubernetes.io/config.mirror]', annotations['kubernetes.io/config.mirror'], 'must set spec.nodeName if mirror pod annotation is set'));
  }
  return errs;
}

const updatablePodSpecFields = [
  '`spec.containers[*].image`',
  '`spec.initContainers[*].image`',
  '`spec.activeDeadlineSeconds`',
  '`spec.tolerations` (only additions to existing tolerations)',
  '`spec.terminationGracePeriodSeconds` (allow it to be set to 1 if it was previously negative)',
];

/** JSON paths where two values differ (a readable stand-in for the Go cmp.Diff kube appends). */
function diffPaths(a: unknown, b: unknown, path: string, out: string[]): void {
  if (deepEqual(a, b)) return;
  if (isObject(a) && isObject(b)) {
    for (const k of new Set([...Object.keys(a), ...Object.keys(b)])) diffPaths(a[k], b[k], at(path, k), out);
  } else if (Array.isArray(a) && Array.isArray(b) && a.length === b.length) {
    a.forEach((v, i) => diffPaths(v, b[i], idx(path, i), out));
  } else {
    out.push(`  ${path}: ${JSON.stringify(a ?? null)} -> ${JSON.stringify(b ?? null)}`);
  }
}

function validatePodUpdate(pod: Obj, old: Obj): FieldError[] {
  const spec = isObject(pod.spec) ? pod.spec : {};
  const oldSpec = isObject(old.spec) ? old.spec : {};
  const errs = validatePodSpec(spec);
  for (const list of ['containers', 'initContainers']) {
    const now = objects(spec[list]);
    const before = objects(oldSpec[list]);
    if (now.length !== before.length) return [...errs, forbidden(`spec.${list}`, 'pod updates may not add or remove containers')];
  }
  const ads = spec.activeDeadlineSeconds;
  const oldAds = oldSpec.activeDeadlineSeconds;
  if (typeof ads === 'number') {
    if (ads < 0 || ads > 2147483647) return [...errs, invalid('spec.activeDeadlineSeconds', ads, inclusiveRange(0, 2147483647))];
    if (typeof oldAds === 'number' && oldAds < ads) return [...errs, invalid('spec.activeDeadlineSeconds', ads, 'must be less than or equal to previous value')];
  } else if (typeof oldAds === 'number') {
    errs.push(invalid('spec.activeDeadlineSeconds', null, 'must not update from a positive integer to nil value'));
  }
  // Tolerations may only be added (tolerationSeconds of an existing one may change).
  const newTolerations = objects(spec.tolerations);
  for (const t of objects(oldSpec.tolerations)) {
    const kept = newTolerations.some((n) => deepEqual({ ...t, tolerationSeconds: n.tolerationSeconds }, n));
    if (!kept) errs.push(forbidden('spec.tolerations', `existing toleration can not be modified except its tolerationSeconds`));
  }
  const munged: Obj = structuredClone(spec);
  for (const list of ['containers', 'initContainers']) {
    const before = objects(oldSpec[list]);
    objects(munged[list]).forEach((c, i) => {
      c.image = before[i]?.image;
    });
  }
  munged.activeDeadlineSeconds = oldSpec.activeDeadlineSeconds;
  munged.tolerations = oldSpec.tolerations;
  if (typeof oldSpec.terminationGracePeriodSeconds === 'number' && oldSpec.terminationGracePeriodSeconds < 0 && munged.terminationGracePeriodSeconds === 1) {
    munged.terminationGracePeriodSeconds = oldSpec.terminationGracePeriodSeconds;
  }
  if (!deepEqual(munged, oldSpec)) {
    const diff: string[] = [];
    diffPaths(oldSpec, munged, 'spec', diff);
    errs.push(forbidden('spec', `pod updates may not change fields other than ${updatablePodSpecFields.join(',')}\n${diff.join('\n')}`));
  }
  return errs;
}

function isQualifiedOrSystemCondition(type: string): boolean {
  return ['PodScheduled', 'Ready', 'Initialized'].includes(type) || isQualifiedName(type).length === 0;
}

/** podIPs/hostIPs: valid, distinct, at most one per family, the first equal to podIP/hostIP (validatePodIPs/validateHostIPs). */
function validateIPs(status: Obj, single: 'podIP' | 'hostIP', list: 'podIPs' | 'hostIPs'): FieldError[] {
  const errs: FieldError[] = [];
  const ips = objects(status[list]).map((e) => str(e.ip));
  const path = `status.${list}`;
  if (ips.length > 0 && ips[0] !== str(status[single])) errs.push(invalid(idx(path, 0), ips[0], `must be equal to ${single}`));
  if (ips.length === 0 && status[single]) errs.push(invalid(path, [], `must include ${single}`));
  const seen = new Set<string>();
  ips.forEach((ip, i) => {
    if (!isIP(ip)) errs.push(invalid(idx(path, i), ip, 'must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)'));
    if (seen.has(ip)) errs.push(duplicate(idx(path, i), ip));
    seen.add(ip);
  });
  const dualStack = ips.length === 2 && ips[0]!.includes(':') !== ips[1]!.includes(':');
  if (ips.length > 1 && ips.every(isIP) && !dualStack) errs.push(invalid(path, ips, 'may specify no more than one IP for each IP family'));
  return errs;
}

/** Terminated containers may not come back unless the restart policy restarts them (ValidateContainerStateTransition). */
function validateStateTransitions(now: unknown, before: unknown, path: string, restartPolicy: string, restartable: (name: string) => boolean): FieldError[] {
  if (restartPolicy === 'Always') return [];
  const errs: FieldError[] = [];
  objects(before).forEach((old, i) => {
    const terminated = isObject(old.state) ? old.state.terminated : undefined;
    if (!isObject(terminated)) return;
    if (Number(terminated.exitCode ?? 0) !== 0 && restartPolicy === 'OnFailure') return;
    if (restartable(str(old.name))) return;
    for (const status of objects(now)) {
      if (status.name === old.name && !(isObject(status.state) && isObject(status.state.terminated))) {
        errs.push(forbidden(at(idx(path, i), 'state'), 'may not be transitioned to non-terminated state'));
      }
    }
  });
  return errs;
}

/** ValidatePodStatusUpdate. kube-apiserver has no rule against a terminal phase going back (kubelet's status manager guards that). */
function validatePodStatusUpdate(pod: Obj, old: Obj): FieldError[] {
  const errs: FieldError[] = [];
  const status = isObject(pod.status) ? pod.status : {};
  const oldStatus = isObject(old.status) ? old.status : {};
  const spec = isObject(pod.spec) ? pod.spec : {};
  const oldSpec = isObject(old.spec) ? old.spec : {};
  // kube reports custom condition types under metadata.conditions[i].Type (sic).
  objects(status.conditions).forEach((c, i) => {
    const type = str(c.type);
    if (!isQualifiedOrSystemCondition(type)) errs.push(...isQualifiedName(type).map((m) => invalid(`metadata.conditions[${i}].Type`, type, m)));
  });
  if (str(spec.nodeName) !== str(oldSpec.nodeName)) errs.push(forbidden('status.nodeName', 'may not be changed directly'));
  if (status.nominatedNodeName && status.nominatedNodeName !== oldStatus.nominatedNodeName) {
    errs.push(...isDNS1123Subdomain(str(status.nominatedNodeName)).map((m) => invalid('status.nominatedNodeName', status.nominatedNodeName, m)));
  }
  if (str(status.qosClass) !== str(oldStatus.qosClass)) errs.push(immutable('status.qosClass', str(status.qosClass)));
  const restartPolicy = str(oldSpec.restartPolicy);
  const sidecars = new Set(objects(oldSpec.initContainers).filter((c) => c.restartPolicy === 'Always').map((c) => str(c.name)));
  errs.push(...validateStateTransitions(status.containerStatuses, oldStatus.containerStatuses, 'status.containerStatuses', restartPolicy, () => false));
  errs.push(...validateStateTransitions(status.initContainerStatuses, oldStatus.initContainerStatuses, 'status.initContainerStatuses', restartPolicy, (n) => sidecars.has(n)));
  errs.push(...validateStateTransitions(status.ephemeralContainerStatuses, oldStatus.ephemeralContainerStatuses, 'status.ephemeralContainerStatuses', 'Never', () => false));
  errs.push(...validateIPs(status, 'podIP', 'podIPs'));
  errs.push(...validateIPs(status, 'hostIP', 'hostIPs'));
  return errs;
}

// ---------------------------------------------------------------------------------------------------------------
// Other kinds

const maxSecretSize = 1024 * 1024;

function validateDataKeys(data: unknown, path: string, errs: FieldError[]): number {
  let size = 0;
  for (const [k, v] of Object.entries(isObject(data) ? data : {})) {
    errs.push(...isConfigMapKey(k).map((m) => invalid(idx(path, k), k, m)));
    size += str(v).length;
  }
  return size;
}

function validateConfigMap(cm: Obj, old: Obj | undefined): FieldError[] {
  const errs: FieldError[] = [];
  let size = validateDataKeys(cm.data, 'data', errs);
  const binary = isObject(cm.binaryData) ? cm.binaryData : {};
  size += validateDataKeys(binary, 'binaryData', errs);
  for (const k of Object.keys(binary)) {
    if (isObject(cm.data) && k in cm.data) errs.push(invalid(idx('binaryData', k), k, 'duplicate of key present in data'));
  }
  if (size > maxSecretSize) errs.push(tooLong('', maxSecretSize));
  if (old?.immutable === true) {
    if (cm.immutable !== true) errs.push(forbidden('immutable', 'field is immutable when `immutable` is set'));
    if (!deepEqual(cm.data ?? {}, old.data ?? {})) errs.push(forbidden('data', 'field is immutable when `immutable` is set'));
    if (!deepEqual(cm.binaryData ?? {}, old.binaryData ?? {})) errs.push(forbidden('binaryData', 'field is immutable when `immutable` is set'));
  }
  return errs;
}

/** Where a base64 string stops being valid, as Go's "illegal base64 data at input byte N". */
function base64Error(v: string): number | undefined {
  const bad = v.search(/[^A-Za-z0-9+/=]/);
  if (bad >= 0) return bad;
  const pad = v.indexOf('=');
  if (pad >= 0 && !/^=+$/.test(v.slice(pad))) return pad;
  if (v.length % 4 !== 0) return Math.floor(v.length / 4) * 4;
  return undefined;
}

function validateSecret(secret: Obj, old: Obj | undefined): FieldError[] {
  const errs: FieldError[] = [];
  const data = isObject(secret.data) ? secret.data : {};
  let size = 0;
  for (const [k, v] of Object.entries(data)) {
    errs.push(...isConfigMapKey(k).map((m) => invalid(idx('data', k), k, m)));
    const bad = base64Error(str(v));
    if (bad !== undefined) errs.push(invalid(idx('data', k), '<secret contents redacted>', `illegal base64 data at input byte ${bad}`));
    else size += Buffer.from(str(v), 'base64').length;
  }
  for (const [k, v] of Object.entries(isObject(secret.stringData) ? secret.stringData : {})) {
    errs.push(...isConfigMapKey(k).map((m) => invalid(idx('stringData', k), k, m)));
    size += Buffer.byteLength(str(v));
  }
  if (size > maxSecretSize) errs.push(tooLong('data', maxSecretSize));
  const type = str(secret.type);
  const requireKey = (key: string): void => {
    if (!(key in data) && !(isObject(secret.stringData) && key in secret.stringData)) errs.push(required(idx('data', key)));
  };
  if (type === 'kubernetes.io/dockerconfigjson') requireKey('.dockerconfigjson');
  if (type === 'kubernetes.io/dockercfg') requireKey('.dockercfg');
  if (type === 'kubernetes.io/tls') {
    requireKey('tls.crt');
    requireKey('tls.key');
  }
  if (type === 'kubernetes.io/service-account-token') {
    const annotations = isObject(secret.metadata) && isObject(secret.metadata.annotations) ? secret.metadata.annotations : {};
    if (!annotations['kubernetes.io/service-account.name']) errs.push(required('metadata.annotations[kubernetes.io/service-account.name]'));
  }
  if (old) {
    if (str(old.type) !== type) errs.push(immutable('type', type));
    if (old.immutable === true) {
      if (secret.immutable !== true) errs.push(forbidden('immutable', 'field is immutable when `immutable` is set'));
      if (!deepEqual(secret.data ?? {}, old.data ?? {})) errs.push(forbidden('data', 'field is immutable when `immutable` is set'));
    }
  }
  return errs;
}

function validateNode(node: Obj, old: Obj | undefined): FieldError[] {
  const errs: FieldError[] = [];
  const spec = isObject(node.spec) ? node.spec : {};
  const cidrs = Array.isArray(spec.podCIDRs) ? spec.podCIDRs.map(str) : [];
  cidrs.forEach((c, i) => {
    if (!isCIDR(c)) errs.push(invalid(idx('spec.podCIDRs', i), c, 'must be a valid CIDR value, (e.g. 10.9.8.0/24 or 2001:db8::/64)'));
  });
  if (cidrs.length > 2 || (cidrs.length === 2 && cidrs[0]!.includes(':') === cidrs[1]!.includes(':'))) {
    errs.push(invalid('spec.podCIDRs', cidrs, 'may specify no more than one CIDR for each IP family'));
  }
  if (spec.podCIDR && cidrs.length > 0 && spec.podCIDR !== cidrs[0]) errs.push(invalid('spec.podCIDRs', cidrs, 'the first entry must match `podCIDR`'));
  const status = isObject(node.status) ? node.status : {};
  const seen = new Set<string>();
  objects(status.addresses).forEach((a, i) => {
    const id = `${str(a.type)}\u0000${str(a.address)}`;
    if (seen.has(id)) errs.push(duplicate(idx('status.addresses', i), `core.NodeAddress{Type:${JSON.stringify(str(a.type))}, Address:${JSON.stringify(str(a.address))}}`));
    seen.add(id);
  });
  for (const list of ['capacity', 'allocatable']) {
    for (const [name, q] of Object.entries(isObject(status[list]) ? (status[list] as Obj) : {})) {
      const value = parseQuantity(q);
      if (value === undefined) errs.push(invalid(idx(`status.${list}`, name), q, `quantities must match the regular expression '${quantityPattern}'`));
      else if (value < 0) errs.push(invalid(idx(`status.${list}`, name), String(q), nonNegative));
    }
  }
  if (old) {
    const oldSpec = isObject(old.spec) ? old.spec : {};
    const oldCidrs = Array.isArray(oldSpec.podCIDRs) ? oldSpec.podCIDRs.map(str) : [];
    if (oldCidrs.length > 0 && !deepEqual(oldCidrs, cidrs)) {
      errs.push(forbidden('spec.podCIDRs', 'node updates may not change podCIDR except from "" to valid'));
    }
    if (oldSpec.providerID && oldSpec.providerID !== spec.providerID) {
      errs.push(forbidden('spec.providerID', 'node updates may not change providerID except from "" to valid'));
    }
  }
  return errs;
}

function validateLease(lease: Obj): FieldError[] {
  const errs: FieldError[] = [];
  const spec = isObject(lease.spec) ? lease.spec : {};
  const duration = spec.leaseDurationSeconds;
  if (duration !== undefined && duration !== null && (typeof duration !== 'number' || duration <= 0)) {
    errs.push(invalid('spec.leaseDurationSeconds', duration, 'must be greater than 0'));
  }
  const transitions = spec.leaseTransitions;
  if (transitions !== undefined && transitions !== null && (typeof transitions !== 'number' || transitions < 0)) {
    errs.push(invalid('spec.leaseTransitions', transitions, 'must be greater than or equal to 0'));
  }
  for (const field of ['acquireTime', 'renewTime']) {
    const t = spec[field];
    if (t !== undefined && t !== null && (typeof t !== 'string' || Number.isNaN(Date.parse(t)))) errs.push(invalid(`spec.${field}`, t, 'must be an RFC 3339 time'));
  }
  if (spec.holderIdentity !== undefined && spec.holderIdentity !== null && typeof spec.holderIdentity !== 'string') {
    errs.push(invalid('spec.holderIdentity', spec.holderIdentity, 'must be a string'));
  }
  if (spec.preferredHolder && !spec.strategy) errs.push(forbidden('spec.preferredHolder', 'may only be specified if `strategy` is defined'));
  return errs;
}

/** legacyValidateEvent (core/v1) and the events.k8s.io/v1 rules that matter to a node's recorder. */
function validateEvent(event: Obj): FieldError[] {
  const errs: FieldError[] = [];
  const eventsV1 = event.apiVersion === 'events.k8s.io/v1';
  const namespace = isObject(event.metadata) ? str(event.metadata.namespace) : '';
  const involved = isObject(eventsV1 ? event.regarding : event.involvedObject) ? ((eventsV1 ? event.regarding : event.involvedObject) as Obj) : {};
  const involvedPath = eventsV1 ? 'regarding.namespace' : 'involvedObject.namespace';
  const involvedNamespace = str(involved.namespace);
  if (!event.eventTime) {
    if (!involvedNamespace ? namespace !== '' && namespace !== 'default' : namespace !== involvedNamespace) {
      errs.push(invalid(involvedPath, involvedNamespace, 'does not match event.namespace'));
    }
  } else {
    if (!involvedNamespace && namespace !== 'default' && namespace !== 'kube-system') errs.push(invalid(involvedPath, involvedNamespace, 'does not match event.namespace'));
    const controllerField = eventsV1 ? 'reportingController' : 'source';
    const controller = str(eventsV1 ? event.reportingController : event.reportingComponent);
    if (!controller) errs.push(required(controllerField));
    errs.push(...isQualifiedName(controller).map((m) => invalid(controllerField, controller, m)));
    if (!event.reportingInstance) errs.push(required('reportingInstance'));
    if (str(event.reportingInstance).length > 128) errs.push(invalid('reportingInstance', '', 'can have at most 128 characters'));
    if (!event.action) errs.push(required('action'));
    if (str(event.action).length > 128) errs.push(invalid('action', '', 'can have at most 128 characters'));
    if (!event.reason) errs.push(required('reason'));
    if (str(event.reason).length > 128) errs.push(invalid('reason', '', 'can have at most 128 characters'));
    const note = str(eventsV1 ? event.note : event.message);
    if (note.length > 1024) errs.push(invalid(eventsV1 ? 'note' : 'message', '', 'can have at most 1024 characters'));
  }
  errs.push(...isDNS1123Subdomain(namespace).map((m) => invalid('namespace', namespace, m)));
  return errs;
}

/**
 * kube-apiserver's validation of `obj` of `kind`: create when `old` is undefined, update otherwise; `subresource` "status"
 * validates a status write (Pod: ValidatePodStatusUpdate; the caller keeps spec and the other non-status fields from the
 * stored object first, as the status strategies do). Updates expect metadata.resourceVersion set (the store fills it for
 * unconditional updates before validating, as kube's does).
 */
export function validateObject(kind: string, obj: Record<string, unknown>, old?: Record<string, unknown>, subresource?: string): FieldError[] {
  const meta = isObject(obj.metadata) ? obj.metadata : {};
  const errs = old === undefined ? validateMetadata(kind, meta) : validateMetadataUpdate(meta, isObject(old.metadata) ? old.metadata : {});
  switch (kind) {
    case 'Pod':
      if (old === undefined) errs.push(...validatePodCreate(obj));
      else if (subresource === 'status') errs.push(...validatePodStatusUpdate(obj, old));
      else errs.push(...validatePodUpdate(obj, old));
      break;
    case 'Node':
      errs.push(...validateNode(obj, old));
      break;
    case 'ConfigMap':
      errs.push(...validateConfigMap(obj, old));
      break;
    case 'Secret':
      errs.push(...validateSecret(obj, old));
      break;
    case 'Lease':
      errs.push(...validateLease(obj));
      break;
    case 'Event':
      errs.push(...validateEvent(obj));
      break;
    default:
      // Namespace and ServiceAccount: metadata rules only.
      break;
  }
  return errs;
}

// ---------------------------------------------------------------------------------------------------------------
// Unknown fields

function collectUnknown(value: unknown, type: string, path: string, out: string[]): void {
  if (value === null || value === undefined || isFreeForm(type)) return;
  const item = elementType(type);
  if (item !== undefined) {
    if (Array.isArray(value)) value.forEach((v, i) => collectUnknown(v, item, `${path}[${i}]`, out));
    return;
  }
  const mapValue = mapValueType(type);
  if (mapValue !== undefined) {
    if (isObject(value)) for (const [k, v] of Object.entries(value)) collectUnknown(v, mapValue, `${path}[${k}]`, out);
    return;
  }
  if (!isModel(type) || !isObject(value)) return;
  for (const [k, v] of Object.entries(value)) {
    const childType = fieldType(type, k);
    const childPath = path ? `${path}.${k}` : k;
    if (childType === undefined) out.push(childPath);
    else collectUnknown(v, childType, childPath, out);
  }
}

/**
 * JSON paths of the fields of `obj` that the kind's schema (client-node's generated model) does not have, as kube's
 * strict decoding reports them (`spec.containers[0].imagee`). Map keys and free-form fields are never unknown.
 */
export function unknownFields(kind: string, obj: Record<string, unknown>): string[] {
  const model = modelForKind(kind, typeof obj.apiVersion === 'string' ? obj.apiVersion : undefined);
  if (model === undefined) return [];
  const out: string[] = [];
  collectUnknown(obj, model, '', out);
  return out;
}
