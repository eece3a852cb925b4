// Validation of a decoded Pod manifest with the apiserver's field paths and messages (pkg/apis/core/validation).
import { InvalidImageReferenceError, parseImageReference } from './image-reference.js';

/** One problem with one field, worded like apimachinery's field.Error without the field prefix. */
export interface FieldError {
  field: string;
  message: string;
}

type JsonObject = Record<string, unknown>;

export function isObject(value: unknown): value is JsonObject {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

// Go's %q for strings, plain for numbers: what `Invalid value: ...` shows.
function showValue(value: unknown): string {
  if (typeof value === 'number' || typeof value === 'boolean') return String(value);
  return JSON.stringify(value) ?? String(value);
}

const required = (field: string, detail = ''): FieldError => ({ field, message: detail ? `Required value: ${detail}` : 'Required value' });
const invalid = (field: string, value: unknown, detail: string): FieldError => ({
  field,
  message: `Invalid value: ${showValue(value)}: ${detail}`,
});
const notSupported = (field: string, value: unknown, supported: readonly string[]): FieldError => ({
  field,
  message: `Unsupported value: ${showValue(value)}: supported values: ${supported.map((s) => JSON.stringify(s)).join(', ')}`,
});
const duplicate = (field: string, value: unknown): FieldError => ({ field, message: `Duplicate value: ${showValue(value)}` });

// Lists and objects are shown by shape only, as a field error cannot usefully quote them.
const wrongType = (field: string, value: unknown, expected: string): FieldError => ({
  field,
  message: `Invalid value: ${Array.isArray(value) ? '[...]' : isObject(value) ? '{...}' : showValue(value)}: must be ${expected}`,
});

function regexError(message: string, pattern: string, examples: string[]): string {
  return `${message} (e.g. ${examples.map((e) => `'${e}'`).join(',  or ')}, regex used for validation is '${pattern}')`;
}

const dns1123LabelFmt = '[a-z0-9]([-a-z0-9]*[a-z0-9])?';
const dns1123LabelRegexp = new RegExp(`^${dns1123LabelFmt}$`);
const dns1123SubdomainFmt = `${dns1123LabelFmt}(\\.${dns1123LabelFmt})*`;
const dns1123SubdomainRegexp = new RegExp(`^${dns1123SubdomainFmt}$`);
const envVarNameFmt = '[-._a-zA-Z][-._a-zA-Z0-9]*';
const envVarNameRegexp = new RegExp(`^${envVarNameFmt}$`);

/** apimachinery's IsDNS1123Label: a container name, a namespace. */
export function dns1123LabelErrors(value: string): string[] {
  const errs: string[] = [];
  if (value.length > 63) errs.push('must be no more than 63 characters');
  if (!dns1123LabelRegexp.test(value)) {
    errs.push(
      regexError(
        "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character",
        dns1123LabelFmt,
        ['my-name', '123-abc'],
      ),
    );
  }
  return errs;
}

/** apimachinery's IsDNS1123Subdomain: a pod name. */
export function dns1123SubdomainErrors(value: string): string[] {
  const errs: string[] = [];
  if (value.length > 253) errs.push('must be no more than 253 characters');
  if (!dns1123SubdomainRegexp.test(value)) {
    errs.push(
      regexError(
        "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character",
        dns1123SubdomainFmt,
        ['example.com'],
      ),
    );
  }
  return errs;
}

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
export const pullPolicies = ['Always', 'IfNotPresent', 'Never'] as const;
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

  const names = new Set<string>();
  const initContainers = spec.initContainers;
  if (initContainers !== undefined) {
    if (!Array.isArray(initContainers)) errs.push(wrongType('spec.initContainers', initContainers, 'a list'));
    else initContainers.forEach((c, i) => validateContainer(c, `spec.initContainers[${i}]`, names, hostNetwork === true, errs));
  }
  const containers = spec.containers;
  if (containers === undefined || (Array.isArray(containers) && containers.length === 0)) {
    errs.push(required('spec.containers'));
  } else if (!Array.isArray(containers)) {
    errs.push(wrongType('spec.containers', containers, 'a list'));
  } else {
    containers.forEach((c, i) => validateContainer(c, `spec.containers[${i}]`, names, hostNetwork === true, errs));
  }

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
  }
}

function validateContainer(container: unknown, path: string, names: Set<string>, hostNetwork: boolean, errs: FieldError[]): void {
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
