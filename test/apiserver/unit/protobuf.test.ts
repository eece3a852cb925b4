// Decoding protobuf request bodies into the JSON form: bodies kubectl v1.32 really sent, and built ones for the edges.
import { ApiError } from '../api-errors.js';
import { decodeProtobufBody, endpointKind } from '../protobuf.js';
import { findResource, type ResourceDef } from '../resources.js';
import { protobufBody } from './protobuf-encode.js';

const CONFIGMAP = { apiVersion: 'v1', kind: 'ConfigMap' };

function def(group: string, resource: string): ResourceDef {
  const d = findResource(group, 'v1', resource);
  if (!d) throw new Error(`no resource ${resource}`);
  return d;
}

function decodeError(body: Buffer, expected = CONFIGMAP): ApiError {
  try {
    decodeProtobufBody(body, expected);
  } catch (err) {
    if (err instanceof ApiError) return err;
    throw err;
  }
  throw new Error('decoded without error');
}

describe('bodies captured from kubectl v1.32 (-v=9)', () => {
  test('create configmap c --from-literal=a=b', () => {
    const body = Buffer.from('6b3873000a0f0a0276311209436f6e6669674d6170121b0a110a016312001a0022002a003200380042001206' + '0a0161120162' + '1a002200', 'hex');
    expect(decodeProtobufBody(body, CONFIGMAP)).toEqual({ kind: 'ConfigMap', apiVersion: 'v1', metadata: { name: 'c' }, data: { a: 'b' } });
  });

  test('create secret generic s2 --type=kubernetes.io/basic-auth: data in base64, the type kept', () => {
    const body = Buffer.from(
      '6b3873000a0c0a027631120653656372657412450a120a02733212001a0022002a0032003800420012060a0170120171120d0a08757365726e616d651201751a186b756265726e657465732e696f2f62617369632d617574681a002200',
      'hex',
    );
    expect(decodeProtobufBody(body, { apiVersion: 'v1', kind: 'Secret' })).toEqual({
      kind: 'Secret',
      apiVersion: 'v1',
      metadata: { name: 's2' },
      data: { p: Buffer.from('q').toString('base64'), username: Buffer.from('u').toString('base64') },
      type: 'kubernetes.io/basic-auth',
    });
  });

  test('create namespace z: empty spec and status stay objects, as Go JSON writes them', () => {
    const body = Buffer.from('6b3873000a0f0a02763112094e616d65737061636512190a110a017a12001a0022002a0032003800420012001a020a001a002200', 'hex');
    expect(decodeProtobufBody(body, { apiVersion: 'v1', kind: 'Namespace' })).toEqual({ kind: 'Namespace', apiVersion: 'v1', metadata: { name: 'z' }, spec: {}, status: {} });
  });

  test('create serviceaccount sa2: no automount field when the flag is not given', () => {
    const body = Buffer.from('6b3873000a140a027631120e536572766963654163636f756e7412150a130a0373613212001a0022002a003200380042001a002200', 'hex');
    expect(decodeProtobufBody(body, { apiVersion: 'v1', kind: 'ServiceAccount' })).toEqual({ kind: 'ServiceAccount', apiVersion: 'v1', metadata: { name: 'sa2' } });
  });

  test('create token sa --audience a1 --audience a2 --duration 2h --bound-object-kind Pod --bound-object-name p2', () => {
    const body = Buffer.from(
      '6b3873000a280a1861757468656e7469636174696f6e2e6b38732e696f2f7631120c546f6b656e5265717565737412360a100a0012001a0022002a00320038004200121c0a0261310a0261321a0f0a03506f64120276311a027032220020a0381a040a0012001a002200',
      'hex',
    );
    const expected = endpointKind(def('', 'serviceaccounts'), 'create', 'token');
    expect(expected).toEqual({ apiVersion: 'authentication.k8s.io/v1', kind: 'TokenRequest' });
    expect(decodeProtobufBody(body, expected)).toEqual({
      kind: 'TokenRequest',
      apiVersion: 'authentication.k8s.io/v1',
      metadata: {},
      spec: { audiences: ['a1', 'a2'], boundObjectRef: { kind: 'Pod', apiVersion: 'v1', name: 'p2' }, expirationSeconds: 7200 },
      status: {},
    });
  });
});

describe('the JSON form', () => {
  test('pointer fields keep their zero values; plain zero values, empty maps and lists are dropped', () => {
    const body = protobufBody(CONFIGMAP, 'ConfigMap', {
      metadata: { name: 'm', namespace: '', generation: 0, labels: {}, finalizers: [] },
      data: {},
      binaryData: { bin: Buffer.from([0, 255, 1]) },
      immutable: false,
    });
    expect(decodeProtobufBody(body, CONFIGMAP)).toEqual({ kind: 'ConfigMap', apiVersion: 'v1', metadata: { name: 'm' }, binaryData: { bin: 'AP8B' }, immutable: false });
    const sa = protobufBody({ apiVersion: 'v1', kind: 'ServiceAccount' }, 'ServiceAccount', {
      metadata: { name: 'sa' },
      secrets: [{ name: 'tok', kind: '' }],
      imagePullSecrets: [{ name: 'reg' }],
      automountServiceAccountToken: false,
    });
    expect(decodeProtobufBody(sa, { apiVersion: 'v1', kind: 'ServiceAccount' })).toEqual({
      kind: 'ServiceAccount',
      apiVersion: 'v1',
      metadata: { name: 'sa' },
      secrets: [{ name: 'tok' }],
      imagePullSecrets: [{ name: 'reg' }],
      automountServiceAccountToken: false,
    });
  });

  test('object metadata: times in RFC 3339 whole seconds, owner references, managed fields with inlined fieldsV1', () => {
    const body = protobufBody(CONFIGMAP, 'ConfigMap', {
      metadata: {
        name: 'm',
        generateName: 'm-',
        uid: 'u-1',
        resourceVersion: '7',
        generation: 3,
        creationTimestamp: { seconds: 1700000000, nanos: 5 },
        deletionTimestamp: { seconds: 1700000060 },
        deletionGracePeriodSeconds: 0,
        labels: { app: 'a' },
        annotations: { note: 'n' },
        ownerReferences: [{ apiVersion: 'v1', kind: 'Pod', name: 'p', uid: 'u-2', controller: false, blockOwnerDeletion: true }],
        finalizers: ['f'],
        managedFields: [{ manager: 'kubectl', operation: 'Update', apiVersion: 'v1', time: { seconds: 1700000000 }, fieldsType: 'FieldsV1', fieldsV1: { raw: Buffer.from('{"f:data":{}}') } }],
      },
    });
    expect(decodeProtobufBody(body, CONFIGMAP).metadata).toEqual({
      name: 'm',
      generateName: 'm-',
      uid: 'u-1',
      resourceVersion: '7',
      generation: 3,
      creationTimestamp: '2023-11-14T22:13:20Z',
      deletionTimestamp: '2023-11-14T22:14:20Z',
      deletionGracePeriodSeconds: 0,
      labels: { app: 'a' },
      annotations: { note: 'n' },
      ownerReferences: [{ apiVersion: 'v1', kind: 'Pod', name: 'p', uid: 'u-2', controller: false, blockOwnerDeletion: true }],
      finalizers: ['f'],
      managedFields: [{ manager: 'kubectl', operation: 'Update', apiVersion: 'v1', time: '2023-11-14T22:13:20Z', fieldsType: 'FieldsV1', fieldsV1: { 'f:data': {} } }],
    });
  });

  test('DeleteOptions in any group version', () => {
    const expected = endpointKind(def('', 'configmaps'), 'delete', '');
    expect(expected).toEqual({ apiVersion: 'v1', kind: 'DeleteOptions' });
    for (const apiVersion of ['v1', 'meta.k8s.io/v1', 'coordination.k8s.io/v1']) {
      const body = protobufBody({ apiVersion, kind: 'DeleteOptions' }, 'DeleteOptions', { gracePeriodSeconds: 0, preconditions: { uid: 'u-1' }, propagationPolicy: 'Foreground', dryRun: ['All'] });
      expect(decodeProtobufBody(body, expected)).toEqual({ kind: 'DeleteOptions', apiVersion, gracePeriodSeconds: 0, preconditions: { uid: 'u-1' }, propagationPolicy: 'Foreground', dryRun: ['All'] });
    }
  });

  test('an envelope without kind and version takes the endpoint kind', () => {
    const body = protobufBody({}, 'ConfigMap', { metadata: { name: 'm' } });
    expect(decodeProtobufBody(body, CONFIGMAP)).toEqual({ kind: 'ConfigMap', apiVersion: 'v1', metadata: { name: 'm' } });
  });

  test('a kind of another endpoint decodes as itself, for the write path to refuse', () => {
    const body = protobufBody({ apiVersion: 'v1', kind: 'Secret' }, 'Secret', { metadata: { name: 's' } });
    expect(decodeProtobufBody(body, CONFIGMAP)).toEqual({ kind: 'Secret', apiVersion: 'v1', metadata: { name: 's' } });
  });
});

describe('refusals', () => {
  test('a kind without a protobuf message here is an unsupported media type', () => {
    const err = decodeError(protobufBody({ apiVersion: 'v1', kind: 'Pod' }, 'ConfigMap', { metadata: { name: 'p' } }), { apiVersion: 'v1', kind: 'Pod' });
    expect(err.code).toBe(415);
    expect(err.status.reason).toBe('UnsupportedMediaType');
    expect(err.message).toBe('the body of the request was in an unknown format - accepted media types include: application/json, application/yaml');
  });

  test('a body without the magic prefix, or with nothing after it', () => {
    const json = decodeError(Buffer.from('{"kind":"ConfigMap"}'));
    expect(json.code).toBe(400);
    expect(json.message).toBe('the object provided is unrecognized (must be of type ConfigMap): provided data does not appear to be a protobuf message, expected prefix [107 56 115 0] ({"kind":"ConfigMap"})');
    expect(decodeError(Buffer.from('k8s\0', 'latin1')).message).toBe('the object provided is unrecognized (must be of type ConfigMap): empty body (6b387300)');
  });

  test('a truncated object', () => {
    const good = protobufBody(CONFIGMAP, 'ConfigMap', { metadata: { name: 'abcdef' } });
    // The envelope's raw field is last but two bytes; cut raw short by rewriting the envelope around a truncated copy.
    const raw = Buffer.from([0x0a, 0x08, 0x0a, 0x06, 0x61, 0x62]);
    const envelope = Buffer.concat([good.subarray(4, 4 + 2 + good[5]!), Buffer.from([0x12, raw.length]), raw]);
    const err = decodeError(Buffer.concat([Buffer.from('k8s\0', 'latin1'), envelope]));
    expect(err.code).toBe(400);
    expect(err.message).toMatch(/^ConfigMap in version "v1" cannot be handled as a ConfigMap: /);
  });
});
