// The HTTPS front of the test API server: authentication, authorization, routing of resource and discovery requests,
// content negotiation (JSON, Table, PartialObjectMetadata), protobuf request bodies, watch streams and the audit log.
import { createServer, type Server } from 'node:https';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { parse as parseYaml } from 'yaml';
import {
  ApiError,
  badRequest,
  methodNotAllowed,
  notAcceptable,
  pathNotFound,
  unauthorized,
  unsupportedMediaType,
  type StatusBody,
} from './api-errors.js';
import { AuditLog } from './audit.js';
import { authenticate, type TokenAuthenticator } from './authn.js';
import { authorizationError, authorize, authorizeNonResource, nonResourceAuthorizationError } from './authz.js';
import { SERVER_VERSION, apiGroupDocument, apiGroupList, apiResourceList, apiVersions, openApiV3ForPath, openApiV3Root } from './discovery.js';
import { issueClientCert, type Pki } from './pki.js';
import { bindPod, evictPod, podLog, type KubeletClientCredentials } from './pod-subresources.js';
import { PROTOBUF_MEDIA_TYPE, decodeProtobufBody, endpointKind } from './protobuf.js';
import { PATCH_TYPES, Registry, type DeleteOptions, type WriteContext } from './registry.js';
import { requestInfo, type RequestInfo } from './request-info.js';
import { allFieldLabels, apiVersionOf, eventsV1FieldLabel, findResource, objectFields, type Obj, type ResourceDef } from './resources.js';
import { checkFieldLabels, matchesFields, matchesLabels, parseFieldSelector, parseLabelSelector, type FieldRequirement } from './selectors.js';
import { toTable, type IncludeObject } from './tables.js';
import { createTokenRequest } from './tokens.js';
import type { RequestAttributes, UserInfo } from './types.js';
import { serveWatch } from './watch.js';

export interface ApiServerOptions {
  registry: Registry;
  pki: Pki;
  tokens: TokenAuthenticator;
  /** Service account token issuer (and default API audience). */
  issuer: string;
  host?: string;
  port?: number;
  auditLogPath?: string;
  /** How often watches with allowWatchBookmarks get a BOOKMARK (kube: about a minute). */
  bookmarkIntervalMs?: number;
  /** Watch length when the client gives no timeoutSeconds (kube: --min-request-timeout 1800 s). */
  defaultWatchTimeoutMs?: number;
}

const MAX_BODY_BYTES = 3 * 1024 * 1024;
type Negotiated = { as: 'json' } | { as: 'Table'; includeObject: IncludeObject } | { as: 'PartialObjectMetadata' } | { as: 'PartialObjectMetadataList' };

function rec(v: unknown): Obj {
  return v !== null && typeof v === 'object' && !Array.isArray(v) ? (v as Obj) : {};
}

/** Parses Accept as kube's negotiation does for the media types this server produces. */
function negotiate(accept: string | undefined, query: URLSearchParams): Negotiated {
  if (!accept) return { as: 'json' };
  let anyJson = false;
  for (const raw of accept.split(',')) {
    const [type, ...paramParts] = raw.split(';').map((s) => s.trim());
    const params = new Map(paramParts.map((p) => p.split('=').map((s) => s.trim()) as [string, string]));
    if (type !== 'application/json' && type !== '*/*' && type !== 'application/*') continue;
    const as = params.get('as');
    if (!as) {
      anyJson = true;
      break;
    }
    const g = params.get('g');
    const v = params.get('v');
    if (g !== 'meta.k8s.io' || (v !== 'v1' && v !== 'v1beta1')) continue;
    if (as === 'Table') {
      const include = query.get('includeObject');
      return { as: 'Table', includeObject: include === 'None' || include === 'Object' ? include : 'Metadata' };
    }
    if (as === 'PartialObjectMetadata' || as === 'PartialObjectMetadataList') return { as };
  }
  if (anyJson) return { as: 'json' };
  throw notAcceptable(['application/json', 'application/yaml', 'application/vnd.kubernetes.protobuf']);
}

/** An HTTPS server in front of a Registry. */
export class ApiServer {
  private server: Server | undefined;
  private readonly audit: AuditLog | undefined;
  private readonly sockets = new Set<Socket>();
  private readonly stopWatches = new AbortController();
  private kubeletCredentials: Promise<KubeletClientCredentials> | undefined;

  constructor(private readonly options: ApiServerOptions) {
    this.audit = options.auditLogPath ? new AuditLog(options.auditLogPath) : undefined;
  }

  get registry(): Registry {
    return this.options.registry;
  }

  /** Starts listening; resolves with the URL (https://127.0.0.1:<port>). */
  async listen(): Promise<string> {
    const { pki } = this.options;
    const server = createServer(
      { key: pki.serverKeyPem, cert: pki.serverCertPem, ca: pki.caCertPem, requestCert: true, rejectUnauthorized: false },
      (req, res) => {
        void this.handle(req, res);
      },
    );
    server.on('secureConnection', (socket) => {
      this.sockets.add(socket);
      socket.on('close', () => this.sockets.delete(socket));
    });
    this.server = server;
    const host = this.options.host ?? '127.0.0.1';
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(this.options.port ?? 0, host, () => {
        server.off('error', reject);
        resolve();
      });
    });
    return this.url;
  }

  get url(): string {
    const address = this.server?.address() as AddressInfo | null;
    if (!address) throw new Error('server not listening');
    return `https://${address.address}:${address.port}`;
  }

  /** Stops serving: ends watches, closes every connection. */
  async close(): Promise<void> {
    this.stopWatches.abort();
    const server = this.server;
    if (!server) return;
    const closed = new Promise<void>((resolve) => server.close(() => resolve()));
    for (const s of this.sockets) s.destroy();
    await closed;
    this.server = undefined;
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const received = new Date();
    const url = new URL(req.url ?? '/', 'https://localhost');
    const info = requestInfo(req.method ?? 'GET', url);
    const user = authenticate(req, this.options.tokens);
    let decision: 'allow' | 'forbid' | undefined;
    // Warnings (unknown fields with fieldValidation=Warn) go out with the answer, failed or not.
    const warnings: string[] = [];
    const auditFor = (code: number, stage: 'ResponseStarted' | 'ResponseComplete', failure?: StatusBody): void => {
      this.audit?.write({
        info,
        requestURI: req.url ?? '/',
        user,
        sourceIP: req.socket.remoteAddress ?? '',
        userAgent: String(req.headers['user-agent'] ?? ''),
        received,
        code,
        stage,
        ...(failure ? { failure: { ...(failure.reason ? { reason: failure.reason } : {}), ...(failure.message ? { message: failure.message } : {}) } } : {}),
        ...(decision ? { decision } : {}),
      });
    };
    try {
      if (!user) throw unauthorized();
      if (!info.isResourceRequest) {
        const d = authorizeNonResource({ user, verb: info.verb, path: info.path });
        decision = d.allowed ? 'allow' : 'forbid';
        if (!d.allowed) throw nonResourceAuthorizationError({ user, verb: info.verb, path: info.path }, d.reason);
        const code = this.serveNonResource(info, url, res);
        auditFor(code, 'ResponseComplete');
        return;
      }
      const def = findResource(info.apiGroup, info.apiVersion, info.resource);
      if (!def || info.extra.length > 0) throw pathNotFound();
      if (!info.verb || (info.subresource === '' && !def.verbs.includes(info.verb))) throw methodNotAllowed();
      const attrs: RequestAttributes = {
        user,
        verb: info.verb,
        apiGroup: info.apiGroup,
        apiVersion: info.apiVersion,
        resource: info.resource,
        subresource: info.subresource,
        namespace: info.namespace,
        name: info.name,
        ...(url.searchParams.get('fieldSelector') ? { fieldSelector: url.searchParams.get('fieldSelector') as string } : {}),
      };
      const d = authorize(attrs, this.registry.view);
      decision = d.allowed ? 'allow' : 'forbid';
      if (!d.allowed) throw authorizationError(attrs, d.reason);
      if (info.verb === 'watch') {
        const watch = this.startWatch(def, info, url, req, res);
        auditFor(200, 'ResponseStarted');
        await watch;
        return;
      }
      if (info.subresource === 'log' && info.verb === 'get' && def.storage === 'pods') {
        await this.servePodLog(info, url, req, res);
        auditFor(res.statusCode, 'ResponseComplete');
        return;
      }
      const body = await this.readBody(req, info, def);
      const { code, result } = this.serveResource(def, info, attrs, url, req, body, warnings);
      if (warnings.length > 0) res.setHeader('Warning', warningHeader(warnings));
      writeJson(res, code, this.encode(def, info, result, negotiate(req.headers.accept, url.searchParams)));
      auditFor(code, 'ResponseComplete');
    } catch (err) {
      const apiErr = err instanceof ApiError ? err : new ApiError({ kind: 'Status', apiVersion: 'v1', metadata: {}, status: 'Failure', message: String(err instanceof Error ? err.message : err), code: 500 }, { cause: err });
      if (!(err instanceof ApiError)) console.error('test-apiserver: internal error', err);
      if (!res.headersSent) {
        if (warnings.length > 0) res.setHeader('Warning', warningHeader(warnings));
        writeJson(res, apiErr.code, apiErr.status as unknown as Obj);
      }
      else res.end();
      auditFor(apiErr.code, 'ResponseComplete', apiErr.status);
    }
  }

  private serveNonResource(info: RequestInfo, url: URL, res: ServerResponse): number {
    const path = info.path.replace(/\/+$/, '') || '/';
    if (info.verb !== 'get' && info.verb !== 'head') throw methodNotAllowed();
    if (path === '/healthz' || path === '/livez' || path === '/readyz') {
      res.writeHead(200, { 'Content-Type': 'text/plain; charset=utf-8', 'X-Content-Type-Options': 'nosniff' });
      res.end('ok');
      return 200;
    }
    let doc: Obj | undefined;
    const segments = path.split('/').filter((s) => s);
    if (path === '/version') doc = SERVER_VERSION;
    else if (path === '/api') doc = apiVersions(url.host);
    else if (path === '/apis') doc = apiGroupList();
    else if (segments[0] === 'api' && segments.length === 2) doc = apiResourceList('', segments[1] as string);
    else if (segments[0] === 'apis' && segments.length === 2) doc = apiGroupDocument(segments[1] as string);
    else if (segments[0] === 'apis' && segments.length === 3) doc = apiResourceList(segments[1] as string, segments[2] as string);
    else if (path === '/openapi/v3') doc = openApiV3Root();
    else if (segments[0] === 'openapi' && segments[1] === 'v3') doc = openApiV3ForPath(segments.slice(2).join('/'));
    if (!doc) throw pathNotFound();
    writeJson(res, 200, doc);
    return 200;
  }

  private async readBody(req: IncomingMessage, info: RequestInfo, def: ResourceDef): Promise<unknown> {
    const chunks: Buffer[] = [];
    let size = 0;
    for await (const chunk of req) {
      size += (chunk as Buffer).length;
      if (size > MAX_BODY_BYTES) {
        throw new ApiError({ kind: 'Status', apiVersion: 'v1', metadata: {}, status: 'Failure', message: `Request entity too large: limit is ${MAX_BODY_BYTES}`, reason: 'RequestEntityTooLarge', code: 413 });
      }
      chunks.push(chunk as Buffer);
    }
    const data = Buffer.concat(chunks);
    const text = data.toString('utf8');
    if (text.trim() === '') return undefined;
    const contentType = String(req.headers['content-type'] ?? 'application/json').split(';')[0]?.trim() ?? '';
    if (info.verb === 'patch') {
      if (!PATCH_TYPES.includes(contentType)) throw unsupportedMediaType(contentType, PATCH_TYPES);
    } else if (contentType === PROTOBUF_MEDIA_TYPE) {
      return decodeProtobufBody(data, endpointKind(def, info.verb, info.subresource));
    } else if (!['application/json', 'application/yaml', ''].includes(contentType)) {
      throw unsupportedMediaType(contentType, ['application/json', 'application/yaml']);
    }
    try {
      return contentType === 'application/yaml' ? parseYaml(text) : JSON.parse(text);
    } catch (err) {
      throw badRequest(`couldn't get version/kind; json parse error: ${err instanceof Error ? err.message : String(err)}`);
    }
  }

  private writeContext(user: UserInfo, attrs: RequestAttributes, query: URLSearchParams, warnings: string[]): WriteContext {
    const dryRun = query.getAll('dryRun');
    for (const d of dryRun) if (d !== 'All') throw badRequest(`Invalid dryRun: "${d}": supported values: "All"`);
    const fv = query.get('fieldValidation') ?? '';
    if (!['', 'Strict', 'Warn', 'Ignore'].includes(fv)) {
      throw badRequest(`fieldValidation: Unsupported value: "${fv}": supported values: "Ignore", "Strict", "Warn"`);
    }
    return { user, attrs, dryRun: dryRun.length > 0, fieldValidation: (fv || 'Warn') as WriteContext['fieldValidation'], warnings };
  }

  /** The non-streaming verbs; returns the HTTP code and the object to encode. */
  private serveResource(def: ResourceDef, info: RequestInfo, attrs: RequestAttributes, url: URL, req: IncomingMessage, body: unknown, warnings: string[]): { code: number; result: Obj } {
    const q = url.searchParams;
    const ns = def.namespaced ? info.namespace : '';
    if (!def.namespaced && info.namespace !== '' && def.storage !== 'namespaces') throw pathNotFound();
    if (def.namespaced && info.namespace === '' && !['list', 'watch'].includes(info.verb)) throw pathNotFound();
    const sub = info.subresource;
    const subDef = def.subresources.find((s) => s.name === sub);
    if (sub !== '' && !subDef) throw pathNotFound();
    const ctx = (): WriteContext => this.writeContext(attrs.user, attrs, q, warnings);
    const name = info.name;
    const registry = this.registry;

    if (sub === 'binding' || sub === 'eviction' || sub === 'token') {
      if (info.verb !== 'create') throw methodNotAllowed();
      const c = ctx();
      if (sub === 'binding') return { code: 201, result: bindPod(registry, ns, name, body, c, new Date()) as unknown as Obj };
      if (sub === 'eviction') return { code: 201, result: evictPod(registry, ns, name, body, c) as unknown as Obj };
      const tr = createTokenRequest(this.options.pki, registry.view, {
        namespace: ns,
        serviceAccountName: name,
        body: rec(body),
        now: new Date(),
        issuer: this.options.issuer,
        apiAudiences: this.options.tokens.audiences,
      });
      return { code: 201, result: tr };
    }
    if (sub !== '' && sub !== 'status') throw methodNotAllowed();
    if (def.resource === 'bindings') {
      if (info.verb !== 'create' || name !== '') throw methodNotAllowed();
      const c = ctx();
      return { code: 201, result: bindPod(registry, ns, String(rec(rec(body).metadata).name ?? ''), body, c, new Date()) as unknown as Obj };
    }

    switch (info.verb) {
      case 'get':
        return { code: 200, result: registry.get(def, ns, name) };
      case 'list':
        return { code: 200, result: this.list(def, info, q) };
      case 'create': {
        if (sub !== '') throw methodNotAllowed();
        const c = ctx();
        return { code: 201, result: registry.create(def, ns, body, c) };
      }
      case 'update': {
        const c = ctx();
        const { object, created } = registry.update(def, ns, name, sub, body, c);
        return { code: created ? 201 : 200, result: object };
      }
      case 'patch': {
        const c = ctx();
        const contentType = String(req.headers['content-type'] ?? '').split(';')[0]?.trim() ?? '';
        if (body === undefined) throw badRequest('the body of the request was empty');
        return { code: 200, result: registry.patch(def, ns, name, sub, contentType, body, c) };
      }
      case 'delete': {
        if (sub !== '') throw methodNotAllowed();
        const c = ctx();
        const { result } = registry.delete(def, ns, name, deleteOptions(body, q), c);
        return { code: 200, result: result as unknown as Obj };
      }
      case 'deletecollection': {
        if (sub !== '' || !def.verbs.includes('deletecollection')) throw methodNotAllowed();
        const c = ctx();
        const listed = this.list(def, info, q);
        const items: Obj[] = [];
        for (const item of listed.items as Obj[]) {
          const m = rec(item.metadata);
          const itemCtx = { ...c, attrs: { ...attrs, verb: 'delete', name: String(m.name) } };
          try {
            const { result } = registry.delete(def, String(m.namespace ?? ''), String(m.name), deleteOptions(body, q), itemCtx);
            items.push(rec(result).kind === 'Status' ? item : (result as Obj));
          } catch (err) {
            if (!(err instanceof ApiError && err.code === 404)) throw err;
          }
        }
        return { code: 200, result: { ...listed, items } };
      }
      default:
        throw methodNotAllowed();
    }
  }

  /** Parses and checks label and field selectors; field labels of events.k8s.io are mapped to the stored form's. */
  private selectors(def: ResourceDef, q: URLSearchParams): { labels: ReturnType<typeof parseLabelSelector>; fields: FieldRequirement[] } {
    const labels = parseLabelSelector(q.get('labelSelector') ?? '');
    let fields = parseFieldSelector(q.get('fieldSelector') ?? '');
    if (def.group === 'events.k8s.io') fields = fields.map((f) => ({ ...f, field: eventsV1FieldLabel(f.field) }));
    checkFieldLabels(fields, allFieldLabels(def));
    return { labels, fields };
  }

  /** A list with selectors and limit/continue (continuing from a key; the list keeps the first page's resourceVersion). */
  private list(def: ResourceDef, info: RequestInfo, q: URLSearchParams): Obj {
    const { labels, fields } = this.selectors(def, q);
    let rv = q.get('resourceVersion') ?? '';
    const token = q.get('continue') ?? '';
    let after = '';
    if (token) {
      try {
        const parsed = JSON.parse(Buffer.from(token, 'base64url').toString('utf8')) as { rv: number; after: string };
        after = parsed.after;
        rv = '';
        if (typeof after !== 'string') throw new Error('bad token');
        const continueRv = parsed.rv;
        const result = this.registry.list(def, info.namespace, rv, '');
        return this.page(def, result.items, labels, fields, q, after, continueRv);
      } catch (err) {
        if (err instanceof ApiError) throw err;
        throw badRequest(`continue key is not valid: ${err instanceof Error ? err.message : String(err)}`);
      }
    }
    const result = this.registry.list(def, info.namespace, rv, q.get('resourceVersionMatch') ?? '');
    return this.page(def, result.items, labels, fields, q, after, result.resourceVersion);
  }

  private page(def: ResourceDef, all: Obj[], labels: ReturnType<typeof parseLabelSelector>, fields: FieldRequirement[], q: URLSearchParams, after: string, rv: number): Obj {
    const storedFields = (obj: Obj): Record<string, string> => objectFields(def, this.registry.toStored(def, obj));
    const keyOf = (obj: Obj): string => `${String(rec(obj.metadata).namespace ?? '')}/${String(rec(obj.metadata).name)}`;
    let items = all.filter((o) => keyOf(o) > after && matchesLabels(labels, rec(o.metadata).labels as Record<string, string> | undefined) && matchesFields(fields, storedFields(o)));
    const limit = Number(q.get('limit') ?? '0');
    const metadata: Obj = { resourceVersion: String(rv) };
    if (Number.isInteger(limit) && limit > 0 && items.length > limit) {
      items = items.slice(0, limit);
      metadata.continue = Buffer.from(JSON.stringify({ rv, after: keyOf(items[items.length - 1] as Obj) })).toString('base64url');
      metadata.remainingItemCount = all.length - limit;
    }
    return { kind: `${def.kind}List`, apiVersion: apiVersionOf(def), metadata, items };
  }

  /** Encodes a result for the negotiated media type: JSON (list items without kind/apiVersion), Table, or metadata only. */
  private encode(def: ResourceDef, info: RequestInfo, result: Obj, how: Negotiated): Obj {
    const isList = result.kind === `${def.kind}List`;
    if (result.kind === 'Status' || (info.subresource !== '' && info.subresource !== 'status') || info.verb === 'delete' || info.verb === 'deletecollection') {
      return isList ? stripItemTypes(result) : result;
    }
    const items = isList ? (result.items as Obj[]) : [result];
    const metaOf = (o: Obj): Obj => rec(o.metadata);
    switch (how.as) {
      case 'json':
        return isList ? stripItemTypes(result) : result;
      case 'Table': {
        const storedForm = items.map((o) => this.registry.toStored(def, o));
        return toTable(def.storage, storedForm, {
          resourceVersion: String(isList ? rec(result.metadata).resourceVersion : metaOf(result).resourceVersion ?? ''),
          includeObject: how.includeObject,
          ...(isList && rec(result.metadata).continue ? { continueToken: String(rec(result.metadata).continue) } : {}),
        });
      }
      case 'PartialObjectMetadata':
      case 'PartialObjectMetadataList': {
        const partial = (o: Obj): Obj => ({ kind: 'PartialObjectMetadata', apiVersion: 'meta.k8s.io/v1', metadata: metaOf(o) });
        if (!isList) return partial(result);
        return { kind: 'PartialObjectMetadataList', apiVersion: 'meta.k8s.io/v1', metadata: result.metadata, items: items.map(partial) };
      }
    }
  }

  private startWatch(def: ResourceDef, info: RequestInfo, url: URL, req: IncomingMessage, res: ServerResponse): Promise<void> {
    const q = url.searchParams;
    const { labels, fields } = this.selectors(def, q);
    const how = negotiate(req.headers.accept, q);
    const timeoutSeconds = Number(q.get('timeoutSeconds') ?? '');
    const timeoutMs = Number.isFinite(timeoutSeconds) && timeoutSeconds > 0 ? timeoutSeconds * 1000 : (this.options.defaultWatchTimeoutMs ?? 1_800_000);
    const flag = (name: string): boolean => ['true', '1'].includes((q.get(name) ?? '').toLowerCase());
    let first = true;
    return serveWatch(
      this.registry,
      def,
      {
        namespace: def.namespaced ? info.namespace : '',
        labels,
        fields,
        resourceVersion: q.get('resourceVersion') ?? '',
        allowBookmarks: flag('allowWatchBookmarks'),
        sendInitialEvents: flag('sendInitialEvents'),
        timeoutMs,
        bookmarkIntervalMs: this.options.bookmarkIntervalMs ?? 60_000,
        encode: (obj) => {
          if (how.as !== 'Table') return how.as === 'json' ? obj : { kind: 'PartialObjectMetadata', apiVersion: 'meta.k8s.io/v1', metadata: obj.metadata };
          const stored = this.registry.toStored(def, obj);
          const table = toTable(def.storage, [stored], { resourceVersion: String(rec(obj.metadata).resourceVersion ?? ''), includeObject: how.includeObject });
          // Column definitions travel with the first event only, as kube's watch encoder sends them.
          if (!first) table.columnDefinitions = [];
          first = false;
          return table;
        },
      },
      res,
      this.stopWatches.signal,
    );
  }

  private async servePodLog(info: RequestInfo, url: URL, req: IncomingMessage, res: ServerResponse): Promise<void> {
    this.kubeletCredentials ??= issueClientCert(this.options.pki, { name: 'kube-apiserver-kubelet-client', groups: ['system:masters'] });
    const credentials = await this.kubeletCredentials;
    const abort = new AbortController();
    res.on('close', () => abort.abort());
    const result = await podLog(this.registry, info.namespace, info.name, url.searchParams, credentials, abort.signal);
    res.writeHead(200, { 'Content-Type': 'text/plain' });
    if (result.kind === 'empty') {
      res.end();
      return;
    }
    void req;
    result.response.pipe(res);
    await new Promise<void>((resolve) => {
      res.on('close', resolve);
      result.response.on('end', resolve);
      result.response.on('error', () => {
        res.destroy();
        resolve();
      });
    });
  }
}

function stripItemTypes(list: Obj): Obj {
  const items = (list.items as Obj[]).map((item) => {
    const { kind: _kind, apiVersion: _apiVersion, ...rest } = item;
    void _kind;
    void _apiVersion;
    return rest;
  });
  return { ...list, items };
}

function deleteOptions(body: unknown, q: URLSearchParams): DeleteOptions {
  const b = rec(body);
  const options: DeleteOptions = {};
  const grace = b.gracePeriodSeconds ?? (q.get('gracePeriodSeconds') !== null ? Number(q.get('gracePeriodSeconds')) : undefined);
  if (typeof grace === 'number' && Number.isFinite(grace)) options.gracePeriodSeconds = grace;
  const pre = rec(b.preconditions);
  if (typeof pre.uid === 'string' || typeof pre.resourceVersion === 'string') {
    options.preconditions = {};
    if (typeof pre.uid === 'string') options.preconditions.uid = pre.uid;
    if (typeof pre.resourceVersion === 'string') options.preconditions.resourceVersion = pre.resourceVersion;
  }
  const policy = b.propagationPolicy ?? q.get('propagationPolicy');
  if (typeof policy === 'string') {
    if (!['Orphan', 'Background', 'Foreground'].includes(policy)) {
      throw badRequest(`propagationPolicy: Unsupported value: "${policy}": supported values: "Foreground", "Background", "Orphan"`);
    }
    options.propagationPolicy = policy;
  }
  return options;
}

function warningHeader(warnings: string[]): string[] {
  return warnings.map((w) => `299 - ${JSON.stringify(w)}`);
}

function writeJson(res: ServerResponse, code: number, body: Obj): void {
  const out = body.kind === 'Status' && body.code === 0 ? (({ code: _c, ...rest }) => (void _c, rest))(body) : body;
  const text = JSON.stringify(out) + '\n';
  res.writeHead(code, { 'Content-Type': 'application/json', 'Cache-Control': 'no-cache, private', 'Content-Length': Buffer.byteLength(text) });
  res.end(text);
}
