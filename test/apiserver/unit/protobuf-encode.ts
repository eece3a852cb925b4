// Builds protobuf request bodies as client-go's protobuf serializer writes them ("k8s\0" + runtime.Unknown), for tests.
import { fileURLToPath } from 'node:url';
import protobuf from 'protobufjs';

const root = protobuf.loadSync(fileURLToPath(new URL('../../../../test/apiserver/proto/kube.proto', import.meta.url)));

/** `message` names a message of test/apiserver/proto/kube.proto; `object` is in protobufjs' fromObject form. */
export function protobufBody(typeMeta: { apiVersion?: string; kind?: string }, message: string, object: Record<string, unknown>): Buffer {
  const type = root.lookupType(`nodelet.testapiserver.${message}`);
  const raw = type.encode(type.fromObject(object)).finish();
  const unknown = root.lookupType('nodelet.testapiserver.Unknown');
  const envelope = unknown.encode(unknown.fromObject({ typeMeta, raw })).finish();
  return Buffer.concat([Buffer.from('k8s\0', 'latin1'), envelope]);
}
