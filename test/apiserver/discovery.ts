// Discovery documents (/version, /api, /apis, group versions) and the minimal OpenAPI v3 documents kubectl reads to learn
// that the server validates fields itself (so kubectl skips client-side schema validation).
import { createHash } from 'node:crypto';
import { RESOURCES, apiVersionOf, type Obj, type ResourceDef } from './resources.js';

export const SERVER_VERSION = {
  major: '1',
  minor: '32',
  gitVersion: 'v1.32.0',
  gitCommit: '0000000000000000000000000000000000000000',
  gitTreeState: 'clean',
  buildDate: '2025-01-01T00:00:00Z',
  goVersion: 'go1.23.4',
  compiler: 'gc',
  platform: 'linux/amd64',
};

interface GroupVersion {
  group: string;
  version: string;
}

function groupVersions(): GroupVersion[] {
  const seen = new Map<string, GroupVersion>();
  for (const r of RESOURCES) seen.set(apiVersionOf(r), { group: r.group, version: r.version });
  return [...seen.values()];
}

export function apiVersions(serverAddress: string): Obj {
  return {
    kind: 'APIVersions',
    versions: ['v1'],
    serverAddressByClientCIDRs: [{ clientCIDR: '0.0.0.0/0', serverAddress }],
  };
}

function apiGroup(name: string): Obj {
  const versions = groupVersions()
    .filter((gv) => gv.group === name)
    .map((gv) => ({ groupVersion: `${name}/${gv.version}`, version: gv.version }));
  return { name, versions, preferredVersion: versions[0] };
}

export function apiGroupList(): Obj {
  const names = [...new Set(groupVersions().map((gv) => gv.group))].filter((g) => g !== '');
  return { kind: 'APIGroupList', apiVersion: 'v1', groups: names.map(apiGroup) };
}

/** The APIGroup document of /apis/<group>, or undefined for a group not served. */
export function apiGroupDocument(group: string): Obj | undefined {
  if (group === '' || !RESOURCES.some((r) => r.group === group)) return undefined;
  return { kind: 'APIGroup', apiVersion: 'v1', ...apiGroup(group) };
}

function storageVersionHash(r: ResourceDef): string {
  return createHash('sha256').update(`${r.group}/${r.version}/${r.kind}`).digest('base64').slice(0, 12);
}

/** The APIResourceList of a group version, or undefined when the server does not serve it. */
export function apiResourceList(group: string, version: string): Obj | undefined {
  const defs = RESOURCES.filter((r) => r.group === group && r.version === version);
  if (defs.length === 0) return undefined;
  const resources: Obj[] = [];
  for (const r of defs) {
    const entry: Obj = {
      name: r.resource,
      singularName: r.singular,
      namespaced: r.namespaced,
      kind: r.kind,
      verbs: r.verbs,
    };
    if (r.shortNames.length > 0) entry.shortNames = r.shortNames;
    if (r.categories.length > 0) entry.categories = r.categories;
    entry.storageVersionHash = storageVersionHash(r);
    resources.push(entry);
    for (const s of r.subresources) {
      const sub: Obj = { name: `${r.resource}/${s.name}`, singularName: '', namespaced: r.namespaced, kind: s.kind, verbs: s.verbs };
      if (s.group !== undefined) sub.group = s.group;
      if (s.version !== undefined) sub.version = s.version;
      resources.push(sub);
    }
  }
  return { kind: 'APIResourceList', apiVersion: 'v1', groupVersion: apiVersionOf({ group, version }), resources };
}

function openApiPath(gv: GroupVersion): string {
  return gv.group === '' ? `api/${gv.version}` : `apis/${gv.group}/${gv.version}`;
}

/** The OpenAPI v3 discovery root (/openapi/v3): one entry per group version. */
export function openApiV3Root(): Obj {
  const paths: Obj = {};
  for (const gv of groupVersions()) {
    const path = openApiPath(gv);
    paths[path] = { serverRelativeURL: `/openapi/v3/${path}?hash=${openApiHash(gv)}` };
  }
  return { paths };
}

function openApiHash(gv: GroupVersion): string {
  return createHash('sha512').update(JSON.stringify(openApiV3Document(gv))).digest('hex').slice(0, 128).toUpperCase();
}

function openApiV3Document(gv: GroupVersion): Obj {
  const paths: Obj = {};
  const prefix = gv.group === '' ? `/api/${gv.version}` : `/apis/${gv.group}/${gv.version}`;
  const query = (name: string): Obj => ({ name, in: 'query', schema: { type: 'string', uniqueItems: true } });
  for (const r of RESOURCES.filter((x) => x.group === gv.group && x.version === gv.version && x.verbs.includes('patch'))) {
    const itemPath = r.namespaced ? `${prefix}/namespaces/{namespace}/${r.resource}/{name}` : `${prefix}/${r.resource}/{name}`;
    const gvk = { group: r.group, version: r.version, kind: r.kind };
    paths[itemPath] = {
      patch: {
        operationId: `patch${r.kind}`,
        parameters: [query('dryRun'), query('fieldManager'), query('fieldValidation'), { name: 'force', in: 'query', schema: { type: 'boolean' } }],
        'x-kubernetes-action': 'patch',
        'x-kubernetes-group-version-kind': gvk,
      },
    };
  }
  return { openapi: '3.0.0', info: { title: 'Kubernetes', version: SERVER_VERSION.gitVersion }, paths, components: { schemas: {} } };
}

/** The OpenAPI v3 document at /openapi/v3/<path>, or undefined. */
export function openApiV3ForPath(path: string): Obj | undefined {
  const gv = groupVersions().find((g) => openApiPath(g) === path);
  return gv ? openApiV3Document(gv) : undefined;
}
