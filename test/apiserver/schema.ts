// Field types of the built-in kinds (read from @kubernetes/client-node's generated models) and the strategic merge patch list metadata of k8s.io/api v1.32.
import * as models from '@kubernetes/client-node';

/** A type as the generated models spell it: "V1PodSpec", "Array<V1Container>", "{ [key: string]: string; }", "string", "Date", "any", ... */
export type TypeName = string;

interface Attribute {
  name: string;
  baseName: string;
  type: string;
}

/** The model class of each kind the test API server serves (events.k8s.io Events have their own class). */
const kindModels: Record<string, TypeName> = {
  Pod: 'V1Pod',
  Node: 'V1Node',
  ConfigMap: 'V1ConfigMap',
  Secret: 'V1Secret',
  Namespace: 'V1Namespace',
  ServiceAccount: 'V1ServiceAccount',
  Event: 'CoreV1Event',
  Lease: 'V1Lease',
  Binding: 'V1Binding',
  DeleteOptions: 'V1DeleteOptions',
  TokenRequest: 'AuthenticationV1TokenRequest',
};

/** The model of a kind; `apiVersion` picks events.k8s.io/v1's Event over core/v1's. */
export function modelForKind(kind: string, apiVersion?: string): TypeName | undefined {
  if (kind === 'Event' && apiVersion === 'events.k8s.io/v1') return 'EventsV1Event';
  return kindModels[kind];
}

const modelRegistry = models as unknown as Record<string, { attributeTypeMap?: Attribute[] } | undefined>;
const attributeCache = new Map<TypeName, Map<string, TypeName>>();

/** JSON field name -> type of a generated model, or undefined when the name is not a model class. */
function attributes(model: TypeName): Map<string, TypeName> | undefined {
  const cached = attributeCache.get(model);
  if (cached) return cached;
  const map = modelRegistry[model]?.attributeTypeMap;
  if (!Array.isArray(map)) return undefined;
  const fields = new Map(map.map((a) => [a.baseName, a.type] as const));
  attributeCache.set(model, fields);
  return fields;
}

const arrayType = /^Array<(.+)>$/;
const mapType = /^\{ \[key: string\]: (.+); \}$/;

/** Element type of a list type, or undefined when `t` is not a list. */
export function elementType(t: TypeName): TypeName | undefined {
  return arrayType.exec(t)?.[1];
}

/** Value type of a string-keyed map type, or undefined when `t` is not a map. */
export function mapValueType(t: TypeName): TypeName | undefined {
  return mapType.exec(t)?.[1];
}

/** True when the type accepts any JSON (free-form fields such as managedFields[].fieldsV1). */
export function isFreeForm(t: TypeName): boolean {
  return t === 'any' || t === 'object';
}

/** True when `t` is a generated model class (an object with a fixed set of fields). */
export function isModel(t: TypeName): boolean {
  return attributes(t) !== undefined;
}

/**
 * Type of field `key` inside a value of type `t`: the attribute's type for a model, the value type for a map,
 * 'any' inside free-form values; undefined when the model has no such field (an unknown field).
 */
export function fieldType(t: TypeName, key: string): TypeName | undefined {
  if (isFreeForm(t)) return 'any';
  const value = mapValueType(t);
  if (value !== undefined) return value;
  return attributes(t)?.get(key);
}

/** A list field whose patchStrategy is merge; `mergeKey` is absent for lists of primitives (merged as sets). */
export interface MergeListMeta {
  mergeKey?: string;
}

/**
 * patchStrategy:"merge" list fields reachable from the served kinds, keyed "<model>.<json field>", from the Go struct
 * tags of k8s.io/api v1.32 (core/v1/types.go) and apimachinery's ObjectMeta. Every other list is atomic (replaced whole);
 * in v1.32 that includes PodStatus.containerStatuses/initContainerStatuses/ephemeralContainerStatuses (+listType=atomic,
 * no patchStrategy), PodSpec.tolerations, NodeStatus.images/volumesInUse/volumesAttached and NamespaceSpec.finalizers.
 */
const mergeLists: Record<string, MergeListMeta> = {
  'V1ObjectMeta.ownerReferences': { mergeKey: 'uid' },
  'V1ObjectMeta.finalizers': {},
  'V1PodSpec.volumes': { mergeKey: 'name' }, // merge,retainKeys
  'V1PodSpec.initContainers': { mergeKey: 'name' },
  'V1PodSpec.containers': { mergeKey: 'name' },
  'V1PodSpec.ephemeralContainers': { mergeKey: 'name' },
  'V1PodSpec.imagePullSecrets': { mergeKey: 'name' },
  'V1PodSpec.hostAliases': { mergeKey: 'ip' },
  'V1PodSpec.topologySpreadConstraints': { mergeKey: 'topologyKey' },
  'V1PodSpec.schedulingGates': { mergeKey: 'name' },
  'V1PodSpec.resourceClaims': { mergeKey: 'name' }, // merge,retainKeys
  'V1Container.ports': { mergeKey: 'containerPort' },
  'V1Container.env': { mergeKey: 'name' },
  'V1Container.volumeMounts': { mergeKey: 'mountPath' },
  'V1Container.volumeDevices': { mergeKey: 'devicePath' },
  'V1EphemeralContainer.ports': { mergeKey: 'containerPort' },
  'V1EphemeralContainer.env': { mergeKey: 'name' },
  'V1EphemeralContainer.volumeMounts': { mergeKey: 'mountPath' },
  'V1EphemeralContainer.volumeDevices': { mergeKey: 'devicePath' },
  'V1ContainerStatus.volumeMounts': { mergeKey: 'mountPath' },
  'V1ContainerStatus.allocatedResourcesStatus': { mergeKey: 'name' },
  'V1PodStatus.conditions': { mergeKey: 'type' },
  'V1PodStatus.hostIPs': { mergeKey: 'ip' },
  'V1PodStatus.podIPs': { mergeKey: 'ip' },
  'V1PodStatus.resourceClaimStatuses': { mergeKey: 'name' }, // merge,retainKeys
  'V1NodeSpec.podCIDRs': {},
  'V1NodeStatus.conditions': { mergeKey: 'type' },
  'V1NodeStatus.addresses': { mergeKey: 'type' },
  'V1NamespaceStatus.conditions': { mergeKey: 'type' },
  'V1ServiceAccount.secrets': { mergeKey: 'name' },
};

/** The merge metadata of list field `key` inside a value of type `parent`, or undefined for an atomic list. */
export function mergeListMeta(parent: TypeName | undefined, key: string): MergeListMeta | undefined {
  return parent === undefined ? undefined : mergeLists[`${parent}.${key}`];
}
