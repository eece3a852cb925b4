// Validation of a decoded Pod manifest with the apiserver's field paths and messages (pkg/apis/core/validation).
import { InvalidImageReferenceError, parseImageReference } from '../core/image-reference.js';
import { InvalidQuantityError, parseQuantity, tryParseQuantity, type Quantity } from '../core/quantity.js';
import { dottedSysctlName, sysctlNamespace } from '../core/sysctl.js';
import {
  dns1123LabelErrors,
  dns1123SubdomainErrors,
  dns1123SubdomainFmt,
  duplicate,
  invalid,
  tooLong,
  isObject,
  notFound,
  notSupported,
  pullPolicies,
  regexError,
  required,
  wrongType,
  type FieldError,
  type JsonObject,
} from './field-errors.js';
import { validatePodVolumes } from './volume-validation.js';

const envVarNameFmt = '[-._a-zA-Z][-._a-zA-Z0-9]*';
const envVarNameRegexp = new RegExp(`^${envVarNameFmt}$`);

/** apimachinery's IsValidPortName (IANA_SVC_NAME). */
export function portNameErrors(name: string): string[] {
  const errs: string[] = [];
  if (name.length > 15) errs.push('must be no more than 15 characters');
  if (!/^[-a-z0-9]+$/.test(name)) errs.push('must contain only alpha-numeric characters (a-z, 0-9), and hyphens (-)');
  if (!/[a-z]/.test(name)) errs.push('must contain at least one letter (a-z)');
  if (name.includes('--')) errs.push('must not contain consecutive hyphens');
  if (name.startsWith('-') || name.endsWith('-')) errs.push('must not begin or end with a hyphen');
  return errs;
}

export const restartPolicies = ['Always', 'OnFailure', 'Never'] as const;
export const portProtocols = ['SCTP', 'TCP', 'UDP'] as const;

const portRangeError = 'must be between 1 and 65535, inclusive';

function isPort(value: unknown): boolean {
  return typeof value === 'number' && Number.isInteger(value) && value >= 1 && value <= 65535;
}

/**
 * Validates a decoded Pod document (nulls already removed) before defaulting: fields the apiserver would
 * default may be absent, present ones must be well-typed and valid. `podName` is the name the pod will get
 * on this node (kubelet validates the generated name).
 */
export function validatePodDocument(doc: JsonObject, podName: (manifestName: string) => string): FieldError[] {
  const errs: FieldError[] = [];
  validateMetadata(doc.metadata, podName, errs);

  const spec = doc.spec;
  if (spec === undefined) {
    errs.push(required('spec.containers'));
    return errs;
  }
  if (!isObject(spec)) {
    errs.push(wrongType('spec', spec, 'an object'));
    return errs;
  }
  const hostNetwork = spec.hostNetwork;
  if (hostNetwork !== undefined && typeof hostNetwork !== 'boolean') errs.push(wrongType('spec.hostNetwork', hostNetwork, 'a boolean'));
  validateBooleans(spec, ['hostUsers'], 'spec', errs);
  // The apiserver's default: a pod without hostUsers runs in the host's user namespace.
  const hostUsers = spec.hostUsers !== false;

  const names = new Set<string>();
  const initContainers = spec.initContainers;
  if (initContainers !== undefined) {
    if (!Array.isArray(initContainers)) errs.push(wrongType('spec.initContainers', initContainers, 'a list'));
    else initContainers.forEach((c, i) => validateContainer(c, `spec.initContainers[${i}]`, names, hostNetwork === true, hostUsers, errs));
  }
  const containers = spec.containers;
  if (containers === undefined || (Array.isArray(containers) && containers.length === 0)) {
    errs.push(required('spec.containers'));
  } else if (!Array.isArray(containers)) {
    errs.push(wrongType('spec.containers', containers, 'a list'));
  } else {
    containers.forEach((c, i) => validateContainer(c, `spec.containers[${i}]`, names, hostNetwork === true, hostUsers, errs));
  }
  validatePodVolumes(spec, errs);
  validateFileKeyRefs(spec, errs);

  validatePodSecurityContext(spec, errs);
  validatePodHostName(spec, errs);
  if (!hostUsers) validateHostUsers(spec, errs);
  const restartPolicy = spec.restartPolicy;
  if (restartPolicy !== undefined && !(restartPolicies as readonly unknown[]).includes(restartPolicy)) {
    errs.push(notSupported('spec.restartPolicy', restartPolicy, restartPolicies));
  }
  const grace = spec.terminationGracePeriodSeconds;
  if (grace !== undefined) {
    if (typeof grace !== 'number' || !Number.isInteger(grace)) errs.push(wrongType('spec.terminationGracePeriodSeconds', grace, 'an integer'));
    else if (grace < 0) errs.push(invalid('spec.terminationGracePeriodSeconds', grace, 'must be greater than or equal to 0'));
  }
  return errs;
}

/** apimachinery's TotalAnnotationSizeLimitB: keys and values of all annotations together. */
const TOTAL_ANNOTATION_SIZE_LIMIT = 256 * 1024;

function annotationBytes(map: JsonObject): number {
  let total = 0;
  for (const [k, v] of Object.entries(map)) total += Buffer.byteLength(k) + (typeof v === 'string' ? Buffer.byteLength(v) : 0);
  return total;
}

function validateMetadata(metadata: unknown, podName: (manifestName: string) => string, errs: FieldError[]): void {
  if (metadata === undefined) {
    errs.push(required('metadata.name', 'name or generateName is required'));
    return;
  }
  if (!isObject(metadata)) {
    errs.push(wrongType('metadata', metadata, 'an object'));
    return;
  }
  const name = metadata.name;
  if (name === undefined || name === '') {
    errs.push(required('metadata.name', 'name or generateName is required'));
  } else if (typeof name !== 'string') {
    errs.push(wrongType('metadata.name', name, 'a string'));
  } else {
    const generated = podName(name);
    for (const msg of dns1123SubdomainErrors(generated)) errs.push(invalid('metadata.name', generated, msg));
  }
  const namespace = metadata.namespace;
  if (namespace !== undefined && namespace !== '') {
    if (typeof namespace !== 'string') errs.push(wrongType('metadata.namespace', namespace, 'a string'));
    else for (const msg of dns1123LabelErrors(namespace)) errs.push(invalid('metadata.namespace', namespace, msg));
  }
  const uid = metadata.uid;
  if (uid !== undefined && typeof uid !== 'string') errs.push(wrongType('metadata.uid', uid, 'a string'));
  for (const key of ['labels', 'annotations'] as const) {
    const map = metadata[key];
    if (map === undefined) continue;
    if (!isObject(map)) {
      errs.push(wrongType(`metadata.${key}`, map, 'a map of strings'));
      continue;
    }
    for (const [k, v] of Object.entries(map)) {
      if (typeof v !== 'string') errs.push(wrongType(`metadata.${key}[${k}]`, v, 'a string'));
    }
    if (key === 'annotations' && annotationBytes(map) > TOTAL_ANNOTATION_SIZE_LIMIT) errs.push(tooLong('metadata.annotations', TOTAL_ANNOTATION_SIZE_LIMIT));
  }
}

function validateContainer(container: unknown, path: string, names: Set<string>, hostNetwork: boolean, hostUsers: boolean, errs: FieldError[]): void {
  if (!isObject(container)) {
    errs.push(wrongType(path, container, 'an object'));
    return;
  }
  const name = container.name;
  if (name === undefined || name === '') {
    errs.push(required(`${path}.name`));
  } else if (typeof name !== 'string') {
    errs.push(wrongType(`${path}.name`, name, 'a string'));
  } else {
    for (const msg of dns1123LabelErrors(name)) errs.push(invalid(`${path}.name`, name, msg));
    if (names.has(name)) errs.push(duplicate(`${path}.name`, name));
    names.add(name);
  }

  const image = container.image;
  if (image === undefined || image === '') {
    errs.push(required(`${path}.image`));
  } else if (typeof image !== 'string') {
    errs.push(wrongType(`${path}.image`, image, 'a string'));
  } else if (image.trim() !== image) {
    errs.push(invalid(`${path}.image`, image, 'must not have leading or trailing whitespace'));
  } else {
    try {
      parseImageReference(image);
    } catch (err) {
      if (!(err instanceof InvalidImageReferenceError)) throw err;
      errs.push(invalid(`${path}.image`, image, err.message));
    }
  }

  const pullPolicy = container.imagePullPolicy;
  if (pullPolicy !== undefined && !(pullPolicies as readonly unknown[]).includes(pullPolicy)) {
    errs.push(notSupported(`${path}.imagePullPolicy`, pullPolicy, pullPolicies));
  }
  for (const key of ['command', 'args'] as const) {
    const list = container[key];
    if (list === undefined) continue;
    if (!Array.isArray(list)) errs.push(wrongType(`${path}.${key}`, list, 'a list of strings'));
    else list.forEach((item, i) => typeof item !== 'string' && errs.push(wrongType(`${path}.${key}[${i}]`, item, 'a string')));
  }
  const workingDir = container.workingDir;
  if (workingDir !== undefined && typeof workingDir !== 'string') errs.push(wrongType(`${path}.workingDir`, workingDir, 'a string'));

  validatePorts(container.ports, `${path}.ports`, hostNetwork, errs);
  validateEnv(container.env, `${path}.env`, errs);
  validateResourceRequirements(container.resources, `${path}.resources`, errs);
  validateSecurityContext(container.securityContext, `${path}.securityContext`, hostUsers, errs);
  validateProbes(container, path, errs);
}

function validatePorts(ports: unknown, path: string, hostNetwork: boolean, errs: FieldError[]): void {
  if (ports === undefined) return;
  if (!Array.isArray(ports)) {
    errs.push(wrongType(path, ports, 'a list'));
    return;
  }
  const portNames = new Set<string>();
  ports.forEach((port: unknown, i) => {
    const idx = `${path}[${i}]`;
    if (!isObject(port)) {
      errs.push(wrongType(idx, port, 'an object'));
      return;
    }
    const name = port.name;
    if (name !== undefined && name !== '') {
      if (typeof name !== 'string') {
        errs.push(wrongType(`${idx}.name`, name, 'a string'));
      } else {
        for (const msg of portNameErrors(name)) errs.push(invalid(`${idx}.name`, name, msg));
        if (portNames.has(name)) errs.push(duplicate(`${idx}.name`, name));
        portNames.add(name);
      }
    }
    const containerPort = port.containerPort;
    if (containerPort === undefined || containerPort === 0) errs.push(required(`${idx}.containerPort`));
    else if (!isPort(containerPort)) errs.push(invalid(`${idx}.containerPort`, containerPort, portRangeError));
    const hostPort = port.hostPort;
    if (hostPort !== undefined && hostPort !== 0 && !isPort(hostPort)) errs.push(invalid(`${idx}.hostPort`, hostPort, portRangeError));
    if (hostNetwork && hostPort !== undefined && hostPort !== 0 && hostPort !== containerPort) {
      errs.push(invalid(`${idx}.hostPort`, hostPort, 'must match `containerPort` when `hostNetwork` is true'));
    }
    const protocol = port.protocol;
    if (protocol !== undefined && !(portProtocols as readonly unknown[]).includes(protocol)) {
      errs.push(notSupported(`${idx}.protocol`, protocol, portProtocols));
    }
    const hostIP = port.hostIP;
    if (hostIP !== undefined && typeof hostIP !== 'string') errs.push(wrongType(`${idx}.hostIP`, hostIP, 'a string'));
  });
}

function validateEnv(env: unknown, path: string, errs: FieldError[]): void {
  if (env === undefined) return;
  if (!Array.isArray(env)) {
    errs.push(wrongType(path, env, 'a list'));
    return;
  }
  env.forEach((item: unknown, i) => {
    const idx = `${path}[${i}]`;
    if (!isObject(item)) {
      errs.push(wrongType(idx, item, 'an object'));
      return;
    }
    const name = item.name;
    if (name === undefined || name === '') errs.push(required(`${idx}.name`));
    else if (typeof name !== 'string') errs.push(wrongType(`${idx}.name`, name, 'a string'));
    else if (!envVarNameRegexp.test(name)) {
      errs.push(
        invalid(
          `${idx}.name`,
          name,
          regexError(
            "a valid environment variable name must consist of alphabetic characters, digits, '_', '-', or '.', and must not start with a digit",
            envVarNameFmt,
            ['my.env-name', 'MY_ENV.NAME', 'MyEnvName1'],
          ),
        ),
      );
    }
    const value = item.value;
    if (value !== undefined && typeof value !== 'string') errs.push(wrongType(`${idx}.value`, value, 'a string'));
  });
}

/**
 * env[].valueFrom.fileKeyRef as the apiserver's validateFileKeySelector and validateFileKeyRefVolumes check it: key,
 * volumeName and path required, the key a relaxed env var name, the path without `..`, the volume an emptyDir of the pod.
 */
function validateFileKeyRefs(spec: JsonObject, errs: FieldError[]): void {
  const volumes = new Map<unknown, unknown>((Array.isArray(spec.volumes) ? spec.volumes : []).filter(isObject).map((v) => [v.name, v]));
  for (const list of ['initContainers', 'containers'] as const) {
    const containers = spec[list];
    if (!Array.isArray(containers)) continue;
    containers.forEach((c: unknown, i) => {
      if (!isObject(c) || !Array.isArray(c.env)) return;
      c.env.forEach((e: unknown, j) => {
        const ref = isObject(e) && isObject(e.valueFrom) ? e.valueFrom.fileKeyRef : undefined;
        if (ref === undefined) return;
        const path = `spec.${list}[${i}].env[${j}].valueFrom.fileKeyRef`;
        if (!isObject(ref)) {
          errs.push(wrongType(path, ref, 'an object'));
          return;
        }
        const { key, volumeName, path: filePath } = ref;
        if (key === undefined || key === '') errs.push(required(`${path}.key`));
        else if (typeof key !== 'string') errs.push(wrongType(`${path}.key`, key, 'a string'));
        // apimachinery's IsRelaxedEnvVarName.
        else if (!/^[\x20-\x7e]+$/.test(key) || key.includes('=')) {
          errs.push(invalid(`${path}.key`, key, "a valid environment variable name must consist only of printable ASCII characters other than '='"));
        }
        if (volumeName === undefined || volumeName === '') errs.push(required(`${path}.volumeName`));
        else if (typeof volumeName !== 'string') errs.push(wrongType(`${path}.volumeName`, volumeName, 'a string'));
        else {
          for (const msg of dns1123LabelErrors(volumeName)) errs.push(invalid(`${path}.volumeName`, volumeName, msg));
          const volume = volumes.get(volumeName);
          if (volume === undefined) errs.push(notFound(`${path}.volumeName`, volumeName));
          else if (!isObject(volume) || volume.emptyDir === undefined) errs.push(invalid(`${path}.volumeName`, volumeName, 'referenced volume must be of type emptyDir'));
        }
        if (filePath === undefined || filePath === '') errs.push(required(`${path}.path`));
        else if (typeof filePath !== 'string') errs.push(wrongType(`${path}.path`, filePath, 'a string'));
        else if (filePath.split('/').includes('..')) errs.push(invalid(`${path}.path`, filePath, "must not contain '..'"));
      });
    });
  }
}

const forbidden = (field: string, detail: string): FieldError => ({ field, message: `Forbidden: ${detail}` });
const probeHandlers = ['exec', 'httpGet', 'tcpSocket', 'grpc'] as const;
const httpSchemes = ['HTTP', 'HTTPS'] as const;
const httpHeaderNameFmt = '[-A-Za-z0-9]+';

/** The apiserver's probe rules; only sidecars (restartPolicy Always) among init containers may have probes. */
function validateProbes(container: JsonObject, path: string, errs: FieldError[]): void {
  const plainInit = path.startsWith('spec.initContainers') && container.restartPolicy !== 'Always';
  for (const type of ['liveness', 'readiness', 'startup'] as const) {
    const field = `${path}.${type}Probe`;
    const probe = container[`${type}Probe`];
    if (probe === undefined) continue;
    if (plainInit) {
      errs.push(forbidden(field, 'may not be set for init containers without restartPolicy=Always'));
      continue;
    }
    if (!isObject(probe)) {
      errs.push(wrongType(field, probe, 'an object'));
      continue;
    }
    validateProbe(probe, field, errs);
    const success = probe.successThreshold;
    // The apiserver defaults 0 to 1 before it checks.
    if (type !== 'readiness' && typeof success === 'number' && success !== 0 && success !== 1) {
      errs.push(invalid(`${field}.successThreshold`, success, 'must be 1'));
    }
    const grace = probe.terminationGracePeriodSeconds;
    if (grace === undefined) continue;
    if (type === 'readiness') errs.push(invalid(`${field}.terminationGracePeriodSeconds`, grace, 'must not be set for readinessProbes'));
    else if (typeof grace !== 'number' || !Number.isInteger(grace)) errs.push(wrongType(`${field}.terminationGracePeriodSeconds`, grace, 'an integer'));
    else if (grace <= 0) errs.push(invalid(`${field}.terminationGracePeriodSeconds`, grace, 'must be greater than 0'));
  }
}

function validateProbe(probe: JsonObject, path: string, errs: FieldError[]): void {
  const handlers = probeHandlers.filter((h) => probe[h] !== undefined);
  if (handlers.length === 0) errs.push(required(path, 'must specify a handler type'));
  for (const extra of handlers.slice(1)) errs.push(forbidden(`${path}.${extra}`, 'may not specify more than 1 handler type'));
  const handler = handlers[0];
  if (handler) {
    const action = probe[handler];
    const field = `${path}.${handler}`;
    if (!isObject(action)) errs.push(wrongType(field, action, 'an object'));
    else if (handler === 'exec') validateExecAction(action, field, errs);
    else if (handler === 'httpGet') validateHttpGetAction(action, field, errs);
    else {
      validateProbePort(action.port, `${field}.port`, handler === 'grpc', errs);
      if (action.host !== undefined && typeof action.host !== 'string') errs.push(wrongType(`${field}.host`, action.host, 'a string'));
    }
  }
  // Zero means "the default" (the apiserver replaces it); only negative values are refused.
  for (const key of ['initialDelaySeconds', 'timeoutSeconds', 'periodSeconds', 'successThreshold', 'failureThreshold'] as const) {
    const value = probe[key];
    if (value === undefined) continue;
    if (typeof value !== 'number' || !Number.isInteger(value)) errs.push(wrongType(`${path}.${key}`, value, 'an integer'));
    else if (value < 0) errs.push(invalid(`${path}.${key}`, value, 'must be greater than or equal to 0'));
  }
}

function validateExecAction(exec: JsonObject, path: string, errs: FieldError[]): void {
  const command = exec.command;
  if (command === undefined || (Array.isArray(command) && command.length === 0)) errs.push(required(`${path}.command`));
  else if (!Array.isArray(command)) errs.push(wrongType(`${path}.command`, command, 'a list of strings'));
  else command.forEach((item, i) => typeof item !== 'string' && errs.push(wrongType(`${path}.command[${i}]`, item, 'a string')));
}

function validateHttpGetAction(httpGet: JsonObject, path: string, errs: FieldError[]): void {
  for (const key of ['path', 'host'] as const) {
    const value = httpGet[key];
    if (value !== undefined && typeof value !== 'string') errs.push(wrongType(`${path}.${key}`, value, 'a string'));
  }
  validateProbePort(httpGet.port, `${path}.port`, false, errs);
  const scheme = httpGet.scheme;
  if (scheme !== undefined && !(httpSchemes as readonly unknown[]).includes(scheme)) errs.push(notSupported(`${path}.scheme`, scheme, httpSchemes));
  const headers = httpGet.httpHeaders;
  if (headers === undefined) return;
  if (!Array.isArray(headers)) {
    errs.push(wrongType(`${path}.httpHeaders`, headers, 'a list'));
    return;
  }
  headers.forEach((header: unknown, i) => {
    if (!isObject(header)) {
      errs.push(wrongType(`${path}.httpHeaders[${i}]`, header, 'an object'));
      return;
    }
    const { name, value } = header;
    if (typeof name !== 'string' || !new RegExp(`^${httpHeaderNameFmt}$`).test(name)) {
      const detail = regexError("a valid HTTP header must consist of alphanumeric characters or '-'", httpHeaderNameFmt, ['X-Header-Name']);
      errs.push(invalid(`${path}.httpHeaders`, name ?? '', detail));
    }
    if (value !== undefined && typeof value !== 'string') errs.push(wrongType(`${path}.httpHeaders[${i}].value`, value, 'a string'));
  });
}

/** apiserver's ValidatePortNumOrName: a port number, or a port name (resolved against the container's ports when probing). */
function validateProbePort(port: unknown, path: string, numberOnly: boolean, errs: FieldError[]): void {
  if (port === undefined) errs.push(invalid(path, 0, portRangeError));
  else if (typeof port === 'number') {
    if (!isPort(port)) errs.push(invalid(path, port, portRangeError));
  } else if (typeof port === 'string' && !numberOnly) {
    for (const msg of portNameErrors(port)) errs.push(invalid(path, port, msg));
  } else errs.push(wrongType(path, port, numberOnly ? 'an integer' : 'a port number or name'));
}

// ---- resources and security contexts ----

const standardContainerResources = new Set(['cpu', 'memory', 'ephemeral-storage']);
const hugePagesPrefix = 'hugepages-';
const nativeResourcePrefix = 'kubernetes.io/';
const qualifiedNameFmt = '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]';
const qualifiedNameRegexp = new RegExp(`^(${dns1123SubdomainFmt}/)?${qualifiedNameFmt}$`);
const maxID = 2147483647;
const idRangeError = `must be between 0 and ${maxID}, inclusive`;

const isNativeResource = (name: string): boolean => !name.includes('/') || name.includes(nativeResourcePrefix);
/** Requests may be below limits only for native resources other than hugepages (helper.IsOvercommitAllowed). */
const isOvercommitAllowed = (name: string): boolean => isNativeResource(name) && !name.startsWith(hugePagesPrefix);

/** The apiserver's validateContainerResourceName. */
function resourceNameErrors(name: string): string[] {
  if (!qualifiedNameRegexp.test(name) || name.split('/').pop()!.length > 63) {
    return [regexError("name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character", qualifiedNameFmt, ['MyName', 'my.name', '123-abc'])];
  }
  if (!name.includes('/')) {
    return standardContainerResources.has(name) || name.startsWith(hugePagesPrefix) ? [] : ['must be a standard resource for containers'];
  }
  if (!isNativeResource(name) && name.startsWith('requests.')) return ["doesn't follow extended resource name standard"];
  return [];
}

/** The apiserver's ValidateResourceRequirements: valid names and quantities, requests within limits. */
function validateResourceRequirements(resources: unknown, path: string, errs: FieldError[]): void {
  if (resources === undefined) return;
  if (!isObject(resources)) {
    errs.push(wrongType(path, resources, 'an object'));
    return;
  }
  const parsed = { limits: new Map<string, Quantity>(), requests: new Map<string, Quantity>() };
  for (const kind of ['limits', 'requests'] as const) {
    const list = resources[kind];
    if (list === undefined) continue;
    if (!isObject(list)) {
      errs.push(wrongType(`${path}.${kind}`, list, 'a map of resource quantities'));
      continue;
    }
    for (const [name, raw] of Object.entries(list)) {
      const field = `${path}.${kind}[${name}]`;
      for (const msg of resourceNameErrors(name)) errs.push(invalid(field, name, msg));
      if (typeof raw !== 'string' && typeof raw !== 'number') {
        errs.push(wrongType(field, raw, 'a quantity'));
        continue;
      }
      let q: Quantity;
      try {
        q = parseQuantity(raw);
      } catch (err) {
        if (!(err instanceof InvalidQuantityError)) throw err;
        errs.push(invalid(field, String(raw), err.message));
        continue;
      }
      parsed[kind].set(name, q);
      if (q.sign() < 0) errs.push(invalid(field, q.toString(), 'must be greater than or equal to 0'));
      // Extended resources are counted in whole units.
      if (!isNativeResource(name) && q.milliValue() % 1000n !== 0n) errs.push(invalid(field, q.toString(), 'must be an integer'));
      if (name.startsWith(hugePagesPrefix)) {
        const pageSize = tryParseQuantity(name.slice(hugePagesPrefix.length));
        if (!pageSize || pageSize.sign() <= 0 || q.nanos % pageSize.nanos !== 0n) {
          errs.push(invalid(field, q.toString(), `${q.toString()} is not positive integer multiple of ${name}`));
        }
      }
    }
  }
  for (const [name, request] of parsed.requests) {
    const limit = parsed.limits.get(name);
    if (limit) {
      if (!isOvercommitAllowed(name) && request.cmp(limit) !== 0) {
        errs.push(invalid(`${path}.requests`, request.toString(), `must be equal to ${name} limit of ${limit.toString()}`));
      } else if (request.cmp(limit) > 0) {
        errs.push(invalid(`${path}.requests`, request.toString(), `must be less than or equal to ${name} limit of ${limit.toString()}`));
      }
    } else if (!isOvercommitAllowed(name)) {
      errs.push(required(`${path}.limits`, 'Limit must be set for non overcommitable resources'));
    }
  }
  const names = [...parsed.limits.keys(), ...parsed.requests.keys()];
  if (names.some((n) => n.startsWith(hugePagesPrefix)) && !names.some((n) => n === 'cpu' || n === 'memory')) {
    errs.push({ field: path, message: 'Forbidden: HugePages require cpu or memory' });
  }
}

/** A uid or gid: an integer within [0, 2^31-1] (IsValidUserID / IsValidGroupID). */
function validateID(value: unknown, field: string, errs: FieldError[]): void {
  if (value === undefined) return;
  if (typeof value !== 'number' || !Number.isInteger(value)) errs.push(wrongType(field, value, 'an integer'));
  else if (value < 0 || value > maxID) errs.push(invalid(field, value, idRangeError));
}

function validateBooleans(obj: JsonObject, keys: readonly string[], path: string, errs: FieldError[]): void {
  for (const key of keys) {
    if (obj[key] !== undefined && typeof obj[key] !== 'boolean') errs.push(wrongType(`${path}.${key}`, obj[key], 'a boolean'));
  }
}

const seccompProfileTypes = ['Localhost', 'RuntimeDefault', 'Unconfined'] as const;

/** The apiserver's validateSeccompProfileField; a Localhost profile is a relative path below the profile root. */
function validateSeccompProfile(profile: unknown, path: string, errs: FieldError[]): void {
  if (profile === undefined) return;
  if (!isObject(profile)) {
    errs.push(wrongType(path, profile, 'an object'));
    return;
  }
  const type = profile.type;
  if (type === undefined || type === '') errs.push(required(`${path}.type`, 'type is required when seccompProfile is set'));
  else if (!(seccompProfileTypes as readonly unknown[]).includes(type)) errs.push(notSupported(`${path}.type`, type, seccompProfileTypes));
  const local = profile.localhostProfile;
  if (type === 'Localhost') {
    if (local === undefined) errs.push(required(`${path}.localhostProfile`, 'must be set when seccomp type is Localhost'));
    else if (typeof local !== 'string') errs.push(wrongType(`${path}.localhostProfile`, local, 'a string'));
    else if (local.startsWith('/')) errs.push(invalid(`${path}.localhostProfile`, local, 'must be a relative path'));
    else if (local.split('/').includes('..')) errs.push(invalid(`${path}.localhostProfile`, local, "must not contain '..'"));
  } else if (local !== undefined) {
    errs.push(invalid(`${path}.localhostProfile`, local, 'can only be set when seccomp type is Localhost'));
  }
}

const procMountTypes = ['Default', 'Unmasked'] as const;

/** The apiserver's ValidateSecurityContext for a container. */
function validateSecurityContext(sc: unknown, path: string, hostUsers: boolean, errs: FieldError[]): void {
  if (sc === undefined) return;
  if (!isObject(sc)) {
    errs.push(wrongType(path, sc, 'an object'));
    return;
  }
  validateID(sc.runAsUser, `${path}.runAsUser`, errs);
  validateID(sc.runAsGroup, `${path}.runAsGroup`, errs);
  validateBooleans(sc, ['privileged', 'runAsNonRoot', 'readOnlyRootFilesystem', 'allowPrivilegeEscalation'], path, errs);
  const caps = sc.capabilities;
  let added: unknown[] = [];
  if (caps !== undefined && !isObject(caps)) errs.push(wrongType(`${path}.capabilities`, caps, 'an object'));
  else if (caps !== undefined) {
    for (const key of ['add', 'drop'] as const) {
      const list = caps[key];
      if (list === undefined) continue;
      if (!Array.isArray(list)) errs.push(wrongType(`${path}.capabilities.${key}`, list, 'a list of strings'));
      else list.forEach((c, i) => typeof c !== 'string' && errs.push(wrongType(`${path}.capabilities.${key}[${i}]`, c, 'a string')));
    }
    if (Array.isArray(caps.add)) added = caps.add;
  }
  const procMount = sc.procMount;
  if (procMount !== undefined && !(procMountTypes as readonly unknown[]).includes(procMount)) {
    errs.push(notSupported(`${path}.procMount`, procMount, procMountTypes));
  } else if (procMount === 'Unmasked' && hostUsers) {
    // An unmasked /proc is only allowed in the pod's own user namespace.
    errs.push(invalid(`${path}.procMount`, procMount, '`hostUsers` must be false to use `Unmasked`'));
  }
  validateSeccompProfile(sc.seccompProfile, `${path}.seccompProfile`, errs);
  if (sc.allowPrivilegeEscalation === false) {
    if (sc.privileged === true) errs.push(invalid(path, sc, 'cannot set `allowPrivilegeEscalation` to false and `privileged` to true'));
    if (added.includes('CAP_SYS_ADMIN')) errs.push(invalid(path, sc, 'cannot set `allowPrivilegeEscalation` to false and `capabilities.Add` CAP_SYS_ADMIN'));
  }
}

/**
 * The apiserver's validateHostUsers for hostUsers false: no host network (UserNamespacesHostNetworkSupport is alpha, off
 * in 1.37), PID or IPC namespace, no volumeDevices (neither idmapped nor chowned). The field paths are the apiserver's.
 */
function validateHostUsers(spec: JsonObject, errs: FieldError[]): void {
  const reason = 'when `hostUsers` is false';
  if (spec.hostNetwork === true) errs.push(forbidden('spec.hostNetwork', reason));
  if (spec.hostPID === true) errs.push(forbidden('spec.HostPID', reason));
  if (spec.hostIPC === true) errs.push(forbidden('spec.HostIPC', reason));
  for (const list of ['containers', 'initContainers'] as const) {
    const containers = spec[list];
    if (!Array.isArray(containers)) continue;
    containers.forEach((c: unknown, i: number) => {
      if (isObject(c) && Array.isArray(c.volumeDevices) && c.volumeDevices.length > 0) {
        errs.push(forbidden(`spec.${list}[${i}].volumeDevices`, reason));
      }
    });
  }
}

const sysctlSegmentFmt = '[a-z0-9]([-_a-z0-9]*[a-z0-9])?';
const sysctlContainSlashRegexp = `^(${sysctlSegmentFmt}[\\./])*${sysctlSegmentFmt}$`;
const sysctlNameRegexp = new RegExp(sysctlContainSlashRegexp);
/** The apiserver's validatePodHostName: spec.hostnameOverride (GA in 1.37). */
function validatePodHostName(spec: JsonObject, errs: FieldError[]): void {
  const override = spec.hostnameOverride;
  if (override === undefined) return;
  const path = 'spec.hostnameOverride';
  if (typeof override !== 'string') {
    errs.push(wrongType(path, override, 'a string'));
    return;
  }
  if (spec.setHostnameAsFQDN === true) errs.push(forbidden(path, 'may not be specified when setHostnameAsFQDN is true'));
  if (spec.hostNetwork === true) errs.push(forbidden(path, 'may not be specified when hostNetwork is true'));
  if (override.length > 64) errs.push(tooLong(path, 64));
  for (const msg of dns1123SubdomainErrors(override)) errs.push(invalid(path, override, msg));
}

const supplementalGroupsPolicies = ['Merge', 'Strict'] as const;
/** The apiserver's ValidatePodSecurityContext and validateSysctls. */
function validatePodSecurityContext(spec: JsonObject, errs: FieldError[]): void {
  validateBooleans(spec, ['hostPID', 'hostIPC', 'shareProcessNamespace'], 'spec', errs);
  const sc = spec.securityContext;
  if (sc === undefined) return;
  const path = 'spec.securityContext';
  if (!isObject(sc)) {
    errs.push(wrongType(path, sc, 'an object'));
    return;
  }
  validateID(sc.runAsUser, `${path}.runAsUser`, errs);
  validateID(sc.runAsGroup, `${path}.runAsGroup`, errs);
  validateID(sc.fsGroup, `${path}.fsGroup`, errs);
  validateBooleans(sc, ['runAsNonRoot'], path, errs);
  const groups = sc.supplementalGroups;
  if (groups !== undefined && !Array.isArray(groups)) errs.push(wrongType(`${path}.supplementalGroups`, groups, 'a list of integers'));
  else (groups ?? []).forEach((g: unknown, i: number) => validateID(g, `${path}.supplementalGroups[${i}]`, errs));
  const policy = sc.supplementalGroupsPolicy;
  if (policy !== undefined && !(supplementalGroupsPolicies as readonly unknown[]).includes(policy)) {
    errs.push(notSupported(`${path}.supplementalGroupsPolicy`, policy, supplementalGroupsPolicies));
  }
  validateSeccompProfile(sc.seccompProfile, `${path}.seccompProfile`, errs);
  if (spec.hostPID === true && spec.shareProcessNamespace === true) {
    errs.push(invalid(`${path}.shareProcessNamespace`, true, 'ShareProcessNamespace and HostPID cannot both be enabled'));
  }
  const sysctls = sc.sysctls;
  if (sysctls === undefined) return;
  if (!Array.isArray(sysctls)) {
    errs.push(wrongType(`${path}.sysctls`, sysctls, 'a list'));
    return;
  }
  const seen = new Set<string>();
  sysctls.forEach((s: unknown, i) => {
    const idx = `${path}.sysctls[${i}]`;
    if (!isObject(s)) {
      errs.push(wrongType(idx, s, 'an object'));
      return;
    }
    const name = s.name;
    if (s.value !== undefined && typeof s.value !== 'string') errs.push(wrongType(`${idx}.value`, s.value, 'a string'));
    if (name === undefined || name === '') {
      errs.push(required(`${idx}.name`));
      return;
    }
    if (typeof name !== 'string') {
      errs.push(wrongType(`${idx}.name`, name, 'a string'));
      return;
    }
    if (name.length > 253 || !sysctlNameRegexp.test(name)) {
      errs.push(invalid(`${idx}.name`, name, `must have at most 253 characters and match regex ${sysctlContainSlashRegexp}`));
    } else if (seen.has(name)) {
      errs.push(duplicate(`${idx}.name`, name));
    }
    seen.add(name);
    const ns = sysctlNamespace(dottedSysctlName(name));
    if (ns === 'ipc' && spec.hostIPC === true) errs.push(invalid(`${idx}.name`, name, "may not be specified when 'hostIPC' is true"));
    if (ns === 'net' && spec.hostNetwork === true) errs.push(invalid(`${idx}.name`, name, "may not be specified when 'hostNetwork' is true"));
  });
}
