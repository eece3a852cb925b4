// Protobuf request bodies (application/vnd.kubernetes.protobuf) as kubectl's typed commands send them: the "k8s\0" magic,
// a runtime.Unknown envelope naming the kind, and the object's own message in its raw field. Decoded here into the JSON
// form, so validation, defaulting, admission and storage see exactly what a JSON body would have given them.
import { fileURLToPath } from 'node:url';
import protobuf from 'protobufjs';
import { badRequest, unsupportedMediaType } from './api-errors.js';
import { apiVersionOf, type Obj, type ResourceDef } from './resources.js';

export const PROTOBUF_MEDIA_TYPE = 'application/vnd.kubernetes.protobuf';

/** The 4 bytes before every protobuf-encoded Kubernetes object: "k8s" and a zero byte. */
const MAGIC = Buffer.from([0x6b, 0x38, 0x73, 0x00]);
const PROTO_PATH = fileURLToPath(new URL('../../../test/apiserver/proto/kube.proto', import.meta.url));
const PACKAGE = 'nodelet.testapiserver';

/** Messages by `apiVersion/kind` of the envelope; DeleteOptions is registered in every group version, as in kube. */
const MESSAGES = new Map<string, string>([
  ['v1/ConfigMap', 'ConfigMap'],
  ['v1/Secret', 'Secret'],
  ['v1/Namespace', 'Namespace'],
  ['v1/ServiceAccount', 'ServiceAccount'],
  ['authentication.k8s.io/v1/TokenRequest', 'TokenRequest'],
]);

export interface GroupVersionKind {
  apiVersion: string;
  kind: string;
}

let root: protobuf.Root | undefined;

function messageType(name: string): protobuf.Type {
  root ??= protobuf.loadSync(PROTO_PATH);
  return root.lookupType(`${PACKAGE}.${name}`);
}

/** The kind an endpoint decodes its body into: DeleteOptions for deletes, the subresource's kind, else the resource's. */
export function endpointKind(def: ResourceDef, verb: string, subresource: string): GroupVersionKind {
  if (verb === 'delete' || verb === 'deletecollection') return { apiVersion: apiVersionOf(def), kind: 'DeleteOptions' };
  const sub = def.subresources.find((s) => s.name === subresource);
  if (!sub) return { apiVersion: apiVersionOf(def), kind: def.kind };
  const apiVersion = sub.version === undefined ? apiVersionOf(def) : apiVersionOf({ group: sub.group ?? '', version: sub.version });
  return { apiVersion, kind: sub.kind };
}

/**
 * Decodes a protobuf body into the object's JSON form (kind and apiVersion included). A kind this server has no message
 * for is an unsupported media type; a malformed body is a BadRequest worded as kube's transformDecodeError words it.
 */
export function decodeProtobufBody(data: Buffer, expected: GroupVersionKind): Obj {
  const unrecognized = (reason: string): Error =>
    badRequest(`the object provided is unrecognized (must be of type ${expected.kind}): ${reason} (${summarize(data)})`);
  if (data.length === 0) throw unrecognized('empty data');
  if (data.length < MAGIC.length || !data.subarray(0, MAGIC.length).equals(MAGIC)) {
    throw unrecognized(`provided data does not appear to be a protobuf message, expected prefix [${[...MAGIC].join(' ')}]`);
  }
  if (data.length === MAGIC.length) throw unrecognized('empty body');
  let envelope: { typeMeta?: { apiVersion?: string; kind?: string }; raw?: Uint8Array };
  try {
    envelope = messageType('Unknown').decode(data.subarray(MAGIC.length)) as typeof envelope;
  } catch (err) {
    throw unrecognized(errorText(err));
  }
  // An envelope without kind or version takes the endpoint's (kube's copyKindDefaults).
  const kind = envelope.typeMeta?.kind || expected.kind;
  const apiVersion = envelope.typeMeta?.apiVersion || expected.apiVersion;
  const name = kind === 'DeleteOptions' ? 'DeleteOptions' : MESSAGES.get(`${apiVersion}/${kind}`);
  if (!name) throw unsupportedMediaType(PROTOBUF_MEDIA_TYPE, ['application/json', 'application/yaml']);
  const type = messageType(name);
  try {
    const message = type.decode(envelope.raw ?? new Uint8Array());
    return { kind, apiVersion, ...jsonForm(type, type.toObject(message, { longs: Number, bytes: String })) };
  } catch (err) {
    const version = apiVersion.split('/').pop() as string;
    throw badRequest(`${kind} in version "${version}" cannot be handled as a ${expected.kind}: ${errorText(err)}`);
  }
}

/**
 * The JSON form of a decoded message (from toObject: int64 as numbers, bytes as base64). A plain field with its zero
 * value is dropped, as Go's omitempty drops it; an `optional` field (a Go pointer) is kept whatever its value; Time
 * becomes RFC 3339 in whole seconds (the zero time is dropped, JSON null in Go) and FieldsV1 its inlined JSON.
 */
function jsonForm(type: protobuf.Type, plain: Record<string, unknown>): Obj {
  const out: Obj = {};
  for (const field of type.fieldsArray) {
    const value = plain[field.name];
    if (value === undefined || value === null) continue;
    const fieldType = field.resolve().resolvedType;
    let json: unknown;
    if (field.map) {
      json = Object.keys(value as object).length > 0 ? value : undefined;
    } else if (field.repeated) {
      const items = value as unknown[];
      json = items.length === 0 ? undefined : fieldType instanceof protobuf.Type ? items.map((i) => messageJson(fieldType, i as Record<string, unknown>)) : items;
    } else if (fieldType instanceof protobuf.Type) {
      json = messageJson(fieldType, value as Record<string, unknown>);
    } else {
      const pointer = field.options?.['proto3_optional'] === true;
      json = pointer || (value !== '' && value !== 0 && value !== false) ? value : undefined;
    }
    if (json !== undefined) out[field.name] = json;
  }
  return out;
}

function messageJson(type: protobuf.Type, plain: Record<string, unknown>): unknown {
  if (type.name === 'Time') {
    const seconds = Number(plain.seconds ?? 0);
    const nanos = Number(plain.nanos ?? 0);
    if (seconds === 0 && nanos === 0) return undefined;
    return new Date(seconds * 1000).toISOString().replace(/\.\d{3}Z$/, 'Z');
  }
  if (type.name === 'FieldsV1') {
    const raw = Buffer.from(String(plain.raw ?? ''), 'base64').toString('utf8');
    return raw === '' ? {} : (JSON.parse(raw) as unknown);
  }
  return jsonForm(type, plain);
}

/** kube's summarizeData: the body's first 30 bytes, as text if it looks like JSON, else in hex. */
function summarize(data: Buffer): string {
  if (data.length === 0) return '<empty>';
  const head = data.subarray(0, 30);
  const text = data[0] === 0x7b ? head.toString('utf8') : head.toString('hex');
  return data.length > 30 ? `${text} ...` : text;
}

function errorText(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}
