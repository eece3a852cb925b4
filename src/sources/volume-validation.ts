// Validation of spec.volumes and containers' volumeMounts with the apiserver's field paths and messages (pkg/apis/core/validation).
import { hostPathTypes } from '../volume/host-path.js';
import { InvalidQuantityError, parseQuantity } from '../core/quantity.js';
import {
  dns1123LabelErrors,
  dns1123SubdomainErrors,
  duplicate,
  invalid,
  isObject,
  notFound,
  notSupported,
  pullPolicies,
  required,
  wrongType,
  type FieldError,
  type JsonObject,
} from './field-errors.js';

const forbidden = (field: string, detail: string): FieldError => ({ field, message: `Forbidden: ${detail}` });

/**
 * Every volume source of the API in the order the apiserver counts them; the second one present is the error.
 * The value is the child name its "more than 1" error uses (upstream spells downwardAPI's "downwarAPI").
 */
const volumeSources: [key: string, child: string][] = [
  ['emptyDir', 'emptyDir'], ['hostPath', 'hostPath'], ['gitRepo', 'gitRepo'], ['gcePersistentDisk', 'gcePersistentDisk'],
  ['awsElasticBlockStore', 'awsElasticBlockStore'], ['secret', 'secret'], ['nfs', 'nfs'], ['iscsi', 'iscsi'],
  ['glusterfs', 'glusterfs'], ['flocker', 'flocker'], ['persistentVolumeClaim', 'persistentVolumeClaim'], ['rbd', 'rbd'],
  ['cinder', 'cinder'], ['cephfs', 'cephFS'], ['quobyte', 'quobyte'], ['downwardAPI', 'downwarAPI'], ['fc', 'fc'],
  ['flexVolume', 'flexVolume'], ['configMap', 'configMap'], ['azureFile', 'azureFile'], ['vsphereVolume', 'vsphereVolume'],
  ['photonPersistentDisk', 'photonPersistentDisk'], ['portworxVolume', 'portworxVolume'], ['azureDisk', 'azureDisk'],
  ['storageos', 'storageos'], ['projected', 'projected'], ['scaleIO', 'scaleIO'], ['csi', 'csi'], ['ephemeral', 'ephemeral'],
  ['image', 'image'],
];

const fileModeErrorMsg = 'must be a number between 0 and 0777 (octal), both inclusive';
const volumeFieldPaths = ['metadata.annotations', 'metadata.labels', 'metadata.name', 'metadata.namespace', 'metadata.uid'];
/** Field labels the v1 Pod conversion accepts (ConvertDownwardAPIFieldLabel); only some of them are valid in volumes. */
const convertibleFieldPaths = new Set([
  ...volumeFieldPaths, 'spec.nodeName', 'spec.restartPolicy', 'spec.serviceAccountName', 'spec.schedulerName',
  'status.phase', 'status.hostIP', 'status.hostIPs', 'status.podIP', 'status.podIPs',
]);
const resourceFieldPaths = ['limits.cpu', 'limits.ephemeral-storage', 'limits.memory', 'requests.cpu', 'requests.ephemeral-storage', 'requests.memory'];
const hugePagesPrefixes = ['limits.hugepages-', 'requests.hugepages-'];
const cpuDivisors = new Set(['1m', '1']);
const byteDivisors = new Set(['1', '1k', '1M', '1G', '1T', '1P', '1E', '1Ki', '1Mi', '1Gi', '1Ti', '1Pi', '1Ei']);
const propagationModes = ['Bidirectional', 'HostToContainer', 'None'];
const recursiveReadOnlyModes = ['Disabled', 'Enabled', 'IfPossible'];

const qualifiedNameFmt = '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]';
const qualifiedNameRegexp = new RegExp(`^${qualifiedNameFmt}$`);
const qualifiedNameErr = "must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character";
const qualifiedNameExamples = "(e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')";

/** apimachinery's IsQualifiedName: a label or annotation key. */
export function qualifiedNameErrors(value: string): string[] {
  const parts = value.split('/');
  let name: string;
  const errs: string[] = [];
  if (parts.length === 1) {
    name = parts[0]!;
  } else if (parts.length === 2) {
    const [prefix, n] = parts as [string, string];
    name = n;
    if (prefix.length === 0) errs.push('prefix part must be non-empty');
    else for (const msg of dns1123SubdomainErrors(prefix)) errs.push(`prefix part ${msg}`);
  } else {
    return [`a qualified name ${qualifiedNameErr} ${qualifiedNameExamples} with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')`];
  }
  if (name.length === 0) errs.push('name part must be non-empty');
  else if (name.length > 63) errs.push('name part must be no more than 63 characters');
  if (!qualifiedNameRegexp.test(name)) errs.push(`name part ${qualifiedNameErr} ${qualifiedNameExamples}`);
  return errs;
}

const isString = (v: unknown): v is string => typeof v === 'string';

/** validatePathNoBacksteps */
function noBacksteps(path: string, field: string, errs: FieldError[]): void {
  if (path.split('/').includes('..')) errs.push(invalid(field, path, "must not contain '..'"));
}

/** validateLocalDescendingPath: relative, no `..` element. */
function localDescendingPath(path: string, field: string, errs: FieldError[]): void {
  if (path.startsWith('/')) errs.push(invalid(field, path, 'must be a relative path'));
  noBacksteps(path, field, errs);
}

/** ValidateLocalNonReservedPath: a descending path that does not start with `..` either. */
function localNonReservedPath(path: string, field: string, errs: FieldError[]): void {
  localDescendingPath(path, field, errs);
  if (path.startsWith('..') && !path.startsWith('../')) errs.push(invalid(field, path, "must not start with '..'"));
}

function fileMode(value: unknown, field: string, errs: FieldError[]): void {
  if (value === undefined) return;
  if (typeof value !== 'number' || !Number.isInteger(value)) errs.push(wrongType(field, value, 'an integer'));
  else if (value < 0 || value > 0o777) errs.push(invalid(field, value, fileModeErrorMsg));
}

function validateEmptyDir(source: unknown, path: string, errs: FieldError[]): void {
  if (!isObject(source)) {
    errs.push(wrongType(path, source, 'an object'));
    return;
  }
  if (source.medium !== undefined && !isString(source.medium)) errs.push(wrongType(`${path}.medium`, source.medium, 'a string'));
  const sizeLimit = source.sizeLimit;
  if (sizeLimit === undefined) return;
  if (!isString(sizeLimit) && typeof sizeLimit !== 'number') {
    errs.push(wrongType(`${path}.sizeLimit`, sizeLimit, 'a quantity'));
    return;
  }
  try {
    if (parseQuantity(sizeLimit).sign() < 0) errs.push(forbidden(`${path}.sizeLimit`, 'SizeLimit field must be a valid resource quantity'));
  } catch (err) {
    if (!(err instanceof InvalidQuantityError)) throw err;
    errs.push(invalid(`${path}.sizeLimit`, sizeLimit, err.message));
  }
}

function validateHostPath(source: unknown, path: string, errs: FieldError[]): void {
  if (!isObject(source)) {
    errs.push(wrongType(path, source, 'an object'));
    return;
  }
  const p = source.path;
  if (p === undefined || p === '') {
    errs.push(required(`${path}.path`));
    return;
  }
  if (!isString(p)) {
    errs.push(wrongType(`${path}.path`, p, 'a string'));
    return;
  }
  noBacksteps(p, `${path}.path`, errs);
  const type = source.type;
  if (type !== undefined && !(hostPathTypes as readonly unknown[]).includes(type)) {
    errs.push(notSupported(`${path}.type`, type, [...hostPathTypes].sort()));
  }
}

function validateFieldRef(ref: unknown, path: string, errs: FieldError[]): void {
  if (!isObject(ref)) {
    errs.push(wrongType(path, ref, 'an object'));
    return;
  }
  const apiVersion = ref.apiVersion ?? 'v1';
  const fieldPath = ref.fieldPath;
  if (apiVersion === '') {
    errs.push(required(`${path}.apiVersion`));
    return;
  }
  if (fieldPath === undefined || fieldPath === '') {
    errs.push(required(`${path}.fieldPath`));
    return;
  }
  if (!isString(fieldPath)) {
    errs.push(wrongType(`${path}.fieldPath`, fieldPath, 'a string'));
    return;
  }
  const subscripted = /^(metadata\.(?:annotations|labels))\['(.*)'\]$/s.exec(fieldPath);
  let conversionError: string | undefined;
  if (apiVersion !== 'v1') conversionError = `unsupported pod version: ${String(apiVersion)}`;
  else if (!subscripted && !convertibleFieldPaths.has(fieldPath)) conversionError = `field label not supported: ${fieldPath}`;
  if (conversionError) {
    errs.push(invalid(`${path}.fieldPath`, fieldPath, `error converting fieldPath: ${conversionError}`));
    return;
  }
  if (subscripted) {
    const [, base, key] = subscripted as unknown as [string, string, string];
    for (const msg of qualifiedNameErrors(base === 'metadata.annotations' ? key.toLowerCase() : key)) errs.push(invalid(path, key, msg));
  } else if (!volumeFieldPaths.includes(fieldPath)) {
    errs.push(notSupported(`${path}.fieldPath`, fieldPath, volumeFieldPaths));
  }
}

function validateResourceFieldRef(ref: unknown, path: string, errs: FieldError[]): void {
  if (!isObject(ref)) {
    errs.push(wrongType(path, ref, 'an object'));
    return;
  }
  const resource = ref.resource;
  if (ref.containerName === undefined || ref.containerName === '') errs.push(required(`${path}.containerName`));
  else if (resource === undefined || resource === '') errs.push(required(`${path}.resource`));
  else if (!isString(resource) || (!resourceFieldPaths.includes(resource) && !hugePagesPrefixes.some((p) => resource.startsWith(p)))) {
    errs.push(notSupported(`${path}.resource`, resource, resourceFieldPaths));
  }
  const divisor = ref.divisor;
  if (divisor === undefined || !isString(resource)) return;
  if (!isString(divisor) && typeof divisor !== 'number') {
    errs.push(wrongType(`${path}.divisor`, divisor, 'a quantity'));
    return;
  }
  let text: string;
  try {
    const q = parseQuantity(divisor);
    if (q.isZero()) return;
    // Compared in canonical form, as upstream compares divisor.String(): "1000m" is "1".
    text = q.toString();
  } catch (err) {
    if (!(err instanceof InvalidQuantityError)) throw err;
    errs.push(invalid(`${path}.divisor`, divisor, err.message));
    return;
  }
  if ((resource === 'limits.cpu' || resource === 'requests.cpu') && !cpuDivisors.has(text)) {
    errs.push(invalid(`${path}.divisor`, resource, "only divisor's values 1m and 1 are supported with the cpu resource"));
  }
  const byteKinds: Record<string, string> = {
    'limits.memory': 'memory',
    'requests.memory': 'memory',
    'limits.ephemeral-storage': 'local ephemeral storage',
    'requests.ephemeral-storage': 'local ephemeral storage',
  };
  const kind = byteKinds[resource] ?? (hugePagesPrefixes.some((p) => resource.startsWith(p)) ? 'hugepages' : undefined);
  if (kind && !byteDivisors.has(text)) {
    errs.push(invalid(`${path}.divisor`, resource, `only divisor's values 1, 1k, 1M, 1G, 1T, 1P, 1E, 1Ki, 1Mi, 1Gi, 1Ti, 1Pi, 1Ei are supported with the ${kind} resource`));
  }
}

/**
 * validateImageVolumeSource: a reference (its format is not checked: a bad one fails the pull with InvalidImageName) and
 * a pull policy; an unset or empty one is defaulted (SetDefaults_Volume) before the apiserver validates, so only another
 * value is refused.
 */
function validateImage(source: unknown, path: string, errs: FieldError[]): void {
  if (!isObject(source)) {
    errs.push(wrongType(path, source, 'an object'));
    return;
  }
  const reference = source.reference;
  if (reference === undefined || reference === '') errs.push(required(`${path}.reference`));
  else if (!isString(reference)) errs.push(wrongType(`${path}.reference`, reference, 'a string'));
  const policy = source.pullPolicy;
  if (policy !== undefined && policy !== '' && !(pullPolicies as readonly unknown[]).includes(policy)) errs.push(notSupported(`${path}.pullPolicy`, policy, pullPolicies));
}

/** validateDownwardAPIVolumeSource; as upstream, item errors carry the source's path, not the item's index. */
function validateDownwardAPI(source: unknown, path: string, errs: FieldError[]): void {
  if (!isObject(source)) {
    errs.push(wrongType(path, source, 'an object'));
    return;
  }
  fileMode(source.defaultMode, `${path}.defaultMode`, errs);
  const items = source.items;
  if (items === undefined) return;
  if (!Array.isArray(items)) {
    errs.push(wrongType(`${path}.items`, items, 'a list'));
    return;
  }
  items.forEach((item: unknown, i) => {
    if (!isObject(item)) {
      errs.push(wrongType(`${path}.items[${i}]`, item, 'an object'));
      return;
    }
    const p = item.path;
    if (p === undefined || p === '') errs.push(required(`${path}.path`));
    if (p !== undefined && !isString(p)) errs.push(wrongType(`${path}.path`, p, 'a string'));
    else localNonReservedPath((p as string | undefined) ?? '', `${path}.path`, errs);
    if (item.fieldRef !== undefined) {
      validateFieldRef(item.fieldRef, `${path}.fieldRef`, errs);
      if (item.resourceFieldRef !== undefined) errs.push(invalid(path, 'resource', 'fieldRef and resourceFieldRef can not be specified simultaneously'));
    } else if (item.resourceFieldRef !== undefined) {
      validateResourceFieldRef(item.resourceFieldRef, `${path}.resourceFieldRef`, errs);
    } else {
      errs.push(required(path, 'one of fieldRef and resourceFieldRef is required'));
    }
    fileMode(item.mode, `${path}.mode`, errs);
  });
}

/** Validates spec.volumes; returns the names of the volumes without errors (the ones mounts may refer to). */
function validateVolumes(volumes: unknown, errs: FieldError[]): Set<string> {
  const valid = new Set<string>();
  if (volumes === undefined) return valid;
  if (!Array.isArray(volumes)) {
    errs.push(wrongType('spec.volumes', volumes, 'a list'));
    return valid;
  }
  volumes.forEach((volume: unknown, i) => {
    const idx = `spec.volumes[${i}]`;
    if (!isObject(volume)) {
      errs.push(wrongType(idx, volume, 'an object'));
      return;
    }
    const el: FieldError[] = [];
    let count = 0;
    for (const [key, child] of volumeSources) {
      if (volume[key] === undefined) continue;
      if (count > 0) {
        el.push(forbidden(`${idx}.${child}`, 'may not specify more than 1 volume type'));
        continue;
      }
      count++;
      if (key === 'emptyDir') validateEmptyDir(volume[key], `${idx}.emptyDir`, el);
      else if (key === 'hostPath') validateHostPath(volume[key], `${idx}.hostPath`, el);
      else if (key === 'downwardAPI') validateDownwardAPI(volume[key], `${idx}.downwardAPI`, el);
      else if (key === 'image') validateImage(volume[key], `${idx}.image`, el);
    }
    if (count === 0) el.push(required(idx, 'must specify a volume type'));
    const name = volume.name;
    if (name === undefined || name === '') el.push(required(`${idx}.name`));
    else if (!isString(name)) el.push(wrongType(`${idx}.name`, name, 'a string'));
    else for (const msg of dns1123LabelErrors(name)) el.push(invalid(`${idx}.name`, name, msg));
    // As upstream, only volumes without errors count as taken names (and as names mounts may refer to).
    if (isString(name) && valid.has(name)) el.push(duplicate(`${idx}.name`, name));
    if (el.length === 0) valid.add(name as string);
    errs.push(...el);
  });
  return valid;
}

function validateVolumeMounts(mounts: unknown, path: string, privileged: boolean, volumes: Set<string>, errs: FieldError[]): void {
  if (mounts === undefined) return;
  if (!Array.isArray(mounts)) {
    errs.push(wrongType(path, mounts, 'a list'));
    return;
  }
  const mountPoints = new Set<unknown>();
  mounts.forEach((mount: unknown, i) => {
    const idx = `${path}[${i}]`;
    if (!isObject(mount)) {
      errs.push(wrongType(idx, mount, 'an object'));
      return;
    }
    for (const key of ['name', 'mountPath', 'subPath', 'subPathExpr', 'mountPropagation', 'recursiveReadOnly']) {
      if (mount[key] !== undefined && !isString(mount[key])) errs.push(wrongType(`${idx}.${key}`, mount[key], 'a string'));
    }
    if (mount.readOnly !== undefined && typeof mount.readOnly !== 'boolean') errs.push(wrongType(`${idx}.readOnly`, mount.readOnly, 'a boolean'));
    const name = mount.name ?? '';
    if (name === '') errs.push(required(`${idx}.name`));
    if (!volumes.has(name as string)) errs.push(notFound(`${idx}.name`, name));
    const mountPath = mount.mountPath ?? '';
    if (mountPath === '') errs.push(required(`${idx}.mountPath`));
    if (mountPoints.has(mountPath)) errs.push(invalid(`${idx}.mountPath`, mountPath, 'must be unique'));
    mountPoints.add(mountPath);
    // As upstream, subPath, subPathExpr and mountPropagation errors carry the list's path, not the mount's index.
    const subPath = isString(mount.subPath) ? mount.subPath : '';
    const subPathExpr = isString(mount.subPathExpr) ? mount.subPathExpr : '';
    if (subPath) localDescendingPath(subPath, `${path}.subPath`, errs);
    if (subPathExpr) {
      if (subPath) errs.push(invalid(`${idx}.subPathExpr`, subPathExpr, 'subPathExpr and subPath are mutually exclusive'));
      localDescendingPath(subPathExpr, `${path}.subPathExpr`, errs);
    }
    const propagation = mount.mountPropagation;
    if (isString(propagation)) {
      if (!propagationModes.includes(propagation)) errs.push(notSupported(`${path}.mountPropagation`, propagation, propagationModes));
      if (propagation === 'Bidirectional' && !privileged) {
        errs.push(forbidden(`${path}.mountPropagation`, 'Bidirectional mount propagation is available only to privileged containers'));
      }
    }
    const rro = mount.recursiveReadOnly;
    if (isString(rro) && rro !== 'Disabled') {
      if (rro === 'Enabled' || rro === 'IfPossible') {
        if (mount.readOnly !== true) errs.push(forbidden(`${idx}.recursiveReadOnly`, 'may only be specified when readOnly is true'));
        if (isString(propagation) && propagation !== 'None') {
          errs.push(forbidden(`${idx}.recursiveReadOnly`, 'may only be specified when mountPropagation is None or not specified'));
        }
      } else {
        errs.push(notSupported(`${idx}.recursiveReadOnly`, rro, recursiveReadOnlyModes));
      }
    }
  });
}

/** Validates a pod document's spec.volumes and the volumeMounts of its containers and init containers. */
export function validatePodVolumes(spec: JsonObject, errs: FieldError[]): void {
  const volumes = validateVolumes(spec.volumes, errs);
  for (const list of ['initContainers', 'containers'] as const) {
    const containers = spec[list];
    if (!Array.isArray(containers)) continue;
    containers.forEach((c: unknown, i) => {
      if (!isObject(c)) return;
      const sc = c.securityContext;
      const privileged = isObject(sc) && sc.privileged === true;
      validateVolumeMounts(c.volumeMounts, `spec.${list}[${i}].volumeMounts`, privileged, volumes, errs);
    });
  }
}
