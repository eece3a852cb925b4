// The generic registry of the test API server: create, get, list, update, patch and delete of any served resource,
// with kube's order of decoding, defaulting, admission, strategy, validation, preconditions and storage.
import { randomInt, randomUUID } from 'node:crypto';
import {
  ApiError,
  OPTIMISTIC_LOCK_MESSAGE,
  alreadyExists,
  badRequest,
  conflict,
  forbidden,
  invalid,
  notFound,
  success,
  tooLargeResourceVersion,
  expired,
  type GroupResource,
  type StatusBody,
} from './api-errors.js';
import { admissionError, admit } from './authz.js';
import { applyDefaults } from './defaults.js';
import { coreEventToEventsV1, eventsV1ToCoreEvent } from './events-v1.js';
import { PatchError, applyJsonMergePatch, applyJsonPatch, applyStrategicMergePatch } from './patch.js';
import { apiVersionOf, type Obj, type ResourceDef } from './resources.js';
import { admitServiceAccount } from './sa-admission.js';
import { Store } from './store.js';
import { strategyFor } from './strategies.js';
import type { ClusterView, FieldError, RequestAttributes, UserInfo } from './types.js';
import { unknownFields, validateObject } from './validation.js';

/** What a write request carries besides its object. */
export interface WriteContext {
  user: UserInfo;
  attrs: RequestAttributes;
  /** dryRun=All: everything but the write. */
  dryRun: boolean;
  /** fieldValidation: Strict refuses unknown fields, Warn (the default) warns, Ignore drops them silently. */
  fieldValidation: 'Strict' | 'Warn' | 'Ignore';
  /** Warning headers to send (299 warnings), filled by the registry. */
  warnings: string[];
}

export interface DeleteOptions {
  gracePeriodSeconds?: number;
  preconditions?: { uid?: string; resourceVersion?: string };
  propagationPolicy?: string;
}

export const PATCH_TYPES = ['application/json-patch+json', 'application/merge-patch+json', 'application/strategic-merge-patch+json'];

/** The alphabet of apiserver's SimpleNameGenerator (no vowels, no confusable digits). */
const NAME_ALPHABET = 'bcdfghjklmnpqrstvwxz2456789';
const MAX_GENERATE_NAME_ATTEMPTS = 8;

function rec(v: unknown): Obj {
  return v !== null && typeof v === 'object' && !Array.isArray(v) ? (v as Obj) : {};
}
function meta(obj: Obj): Obj {
  if (obj.metadata === null || typeof obj.metadata !== 'object' || Array.isArray(obj.metadata)) obj.metadata = {};
  return obj.metadata as Obj;
}
function str(v: unknown): string {
  return typeof v === 'string' ? v : '';
}

/** RFC 3339 with seconds, as metav1.Time marshals. */
export function timestamp(d: Date): string {
  return d.toISOString().replace(/\.\d{3}Z$/, 'Z');
}

export function deepEqual(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (Array.isArray(a)) return Array.isArray(b) && a.length === b.length && a.every((v, i) => deepEqual(v, b[i]));
  if (a !== null && b !== null && typeof a === 'object' && typeof b === 'object' && !Array.isArray(b)) {
    const ka = Object.keys(a as Obj).filter((k) => (a as Obj)[k] !== undefined);
    const kb = Object.keys(b as Obj).filter((k) => (b as Obj)[k] !== undefined);
    return ka.length === kb.length && ka.every((k) => deepEqual((a as Obj)[k], (b as Obj)[k]));
  }
  return false;
}

export function groupResource(def: ResourceDef): GroupResource {
  return { group: def.group, resource: def.resource };
}

/** Removes the fields at paths such as `spec.foo` or `spec.containers[0].bar` (unknown fields kube's decoder drops). */
function dropField(obj: Obj, path: string): void {
  const parts = path.match(/[^.[\]]+|\[\d+\]/g) ?? [];
  let cur: unknown = obj;
  for (let i = 0; i < parts.length - 1; i++) {
    const p = parts[i] as string;
    cur = p.startsWith('[') ? (Array.isArray(cur) ? cur[Number(p.slice(1, -1))] : undefined) : rec(cur)[p];
    if (cur === undefined) return;
  }
  const last = parts[parts.length - 1];
  if (last !== undefined && cur !== null && typeof cur === 'object' && !Array.isArray(cur)) delete (cur as Obj)[last];
}

/** Secret's stringData is write-only: conversion merges it into data (base64), as kube's v1 conversion does. */
function mergeStringData(secret: Obj): void {
  const stringData = rec(secret.stringData);
  if (secret.stringData === undefined) return;
  const data = rec(secret.data);
  for (const [k, v] of Object.entries(stringData)) data[k] = Buffer.from(String(v)).toString('base64');
  secret.data = data;
  delete secret.stringData;
}

/**
 * The registry over one Store. It applies kube's rules; authentication and authorization happened before it.
 * Objects are stored in their core form (events.k8s.io Events as core/v1 Events) and converted on the way in and out.
 */
export class Registry {
  readonly view: ClusterView;

  constructor(
    readonly store: Store,
    private readonly now: () => Date = () => new Date(),
  ) {
    this.view = {
      get: (resource, namespace, name) => this.store.get(resource, namespace, name),
      list: (resource, namespace) => this.store.list(resource, namespace).items,
    };
  }

  /** Converts a stored object to the form a resource serves. */
  present(def: ResourceDef, obj: Obj): Obj {
    if (def.group === 'events.k8s.io') return coreEventToEventsV1(obj);
    return obj;
  }

  /** Converts an object of a resource's form to the stored form (request bodies; Tables and field selectors of events.k8s.io). */
  toStored(def: ResourceDef, obj: Obj): Obj {
    if (def.group === 'events.k8s.io') return eventsV1ToCoreEvent(obj);
    return obj;
  }

  get(def: ResourceDef, namespace: string, name: string): Obj {
    const obj = this.store.get(def.storage, namespace, name);
    if (!obj) throw notFound(groupResource(def), name);
    return this.present(def, obj);
  }

  /** Lists in key order; `resourceVersion`/`resourceVersionMatch` as kube's list semantics allow without history. */
  list(def: ResourceDef, namespace: string, rv: string, rvMatch: string): { items: Obj[]; resourceVersion: number } {
    const current = this.store.resourceVersion;
    if (rv !== '' && rv !== '0') {
      const n = Number(rv);
      if (!Number.isInteger(n) || n < 0) throw badRequest(`invalid resource version: ${rv}`);
      if (n > current) throw tooLargeResourceVersion(n, current);
      if (rvMatch === 'Exact' && n !== current) throw expired(`too old resource version: ${n} (${current})`);
    }
    const { items, resourceVersion } = this.store.list(def.storage, def.namespaced ? namespace : undefined);
    return { items: items.map((o) => this.present(def, o)), resourceVersion };
  }

  /** Decoding: the body's kind and apiVersion must be the endpoint's, its namespace the URL's. */
  private decode(def: ResourceDef, namespace: string, body: unknown, ctx: WriteContext, expectKind = def.kind, expectApiVersion = apiVersionOf(def)): Obj {
    if (body === null || typeof body !== 'object' || Array.isArray(body)) throw badRequest(`Object 'Kind' is missing in '${JSON.stringify(body)}'`);
    const obj = structuredClone(body) as Obj;
    if (obj.apiVersion === undefined || obj.apiVersion === '') obj.apiVersion = expectApiVersion;
    if (obj.kind === undefined || obj.kind === '') obj.kind = expectKind;
    if (obj.kind !== expectKind || obj.apiVersion !== expectApiVersion) {
      throw badRequest(`the API version in the data (${str(obj.apiVersion)}) does not match the expected API version (${expectApiVersion})`);
    }
    const m = meta(obj);
    if (def.namespaced) {
      if (m.namespace === undefined || m.namespace === '') m.namespace = namespace;
      else if (m.namespace !== namespace) throw badRequest('the namespace of the provided object does not match the namespace sent on the request');
    } else {
      delete m.namespace;
    }
    delete m.selfLink;
    delete m.managedFields;
    const stored = this.toStored(def, obj);
    if (stored.kind === 'Secret') mergeStringData(stored);
    this.checkUnknownFields(stored, ctx);
    applyDefaults(String(stored.kind), stored);
    return stored;
  }

  private checkUnknownFields(obj: Obj, ctx: WriteContext): void {
    const unknown = unknownFields(String(obj.kind), obj);
    if (unknown.length === 0) return;
    if (ctx.fieldValidation === 'Strict') {
      const texts = unknown.map((f) => `unknown field "${f}"`);
      const kind = String(obj.kind);
      const version = String(obj.apiVersion).split('/').pop() as string;
      throw badRequest(`${kind} in version "${version}" cannot be handled as a ${kind}: strict decoding error: ${texts.join(', ')}`);
    }
    if (ctx.fieldValidation === 'Warn') for (const f of unknown) ctx.warnings.push(`unknown field "${f}"`);
    for (const f of unknown) dropField(obj, f);
  }

  private validate(def: ResourceDef, obj: Obj, old: Obj | undefined, subresource: string): void {
    const errors = dedupe(validateObject(String(obj.kind), obj, old, subresource || undefined));
    if (old) errors.push(...dedupe(metadataUpdateErrors(obj, old)).filter((e) => !errors.some((x) => x.field === e.field && x.message === e.message)));
    if (errors.length > 0) throw invalid(def.group, def.kind, str(meta(obj).name) || str(meta(obj).generateName), errors);
  }

  /** Admission in kube's order: ServiceAccount (pod create) then NodeRestriction. */
  private admit(def: ResourceDef, ctx: WriteContext, obj: Obj | undefined, old: Obj | undefined): void {
    if (obj && ctx.attrs.verb === 'create' && def.storage === 'pods' && ctx.attrs.subresource === '') {
      const d = admitServiceAccount(obj, this.view);
      if (!d.allowed) throw admissionError(ctx.attrs, obj, d);
    }
    const d = admit(ctx.attrs, obj, old, this.view);
    if (!d.allowed) throw admissionError(ctx.attrs, obj, d);
  }

  /** NamespaceLifecycle: no new objects in a missing or terminating namespace. */
  private checkNamespace(def: ResourceDef, namespace: string, name: string): void {
    if (!def.namespaced) return;
    const ns = this.store.get('namespaces', '', namespace);
    if (!ns) throw notFound({ group: '', resource: 'namespaces' }, namespace);
    if (rec(ns.status).phase === 'Terminating' || meta(ns).deletionTimestamp) {
      const err = forbidden(groupResource(def), name, `unable to create new content in namespace ${namespace} because it is being terminated`);
      err.status.details = { ...err.status.details, causes: [{ reason: 'NamespaceTerminating', message: `namespace ${namespace} is being terminated`, field: 'metadata.namespace' }] };
      throw err;
    }
  }

  create(def: ResourceDef, namespace: string, body: unknown, ctx: WriteContext): Obj {
    const obj = this.decode(def, namespace, body, ctx);
    return this.createDecoded(def, namespace, obj, ctx);
  }

  private createDecoded(def: ResourceDef, namespace: string, obj: Obj, ctx: WriteContext): Obj {
    const m = meta(obj);
    if (str(m.resourceVersion) !== '') throw badRequest('resourceVersion should not be set on objects to be created');
    this.checkNamespace(def, namespace, str(m.name) || str(m.generateName));
    this.admit(def, ctx, obj, undefined);
    delete m.deletionTimestamp;
    delete m.deletionGracePeriodSeconds;
    strategyFor(def.storage).prepareForCreate(obj);
    m.uid = randomUUID();
    m.creationTimestamp = timestamp(this.now());
    const generate = !str(m.name) && str(m.generateName);
    if (generate) m.name = this.generateName(str(m.generateName));
    this.validate(def, obj, undefined, '');
    for (let attempt = 1; ; attempt++) {
      if (!this.store.get(def.storage, def.namespaced ? namespace : '', str(m.name))) break;
      if (!generate || attempt >= MAX_GENERATE_NAME_ATTEMPTS) throw alreadyExists(groupResource(def), str(m.name));
      m.name = this.generateName(str(m.generateName));
    }
    if (ctx.dryRun) return this.present(def, obj);
    const stored = this.store.create(def.storage, obj);
    if (def.storage === 'namespaces') this.onNamespaceCreated?.(stored);
    return this.present(def, stored);
  }

  /** Called after a namespace is created (the controllers' defaults: service account, root CA configmap). */
  onNamespaceCreated?: (ns: Obj) => void;
  /** Called after a namespace is deleted or an object in a terminating namespace goes (namespace finalization). */
  onObjectRemoved?: (storage: string, obj: Obj) => void;

  private generateName(base: string): string {
    let suffix = '';
    for (let i = 0; i < 5; i++) suffix += NAME_ALPHABET[randomInt(NAME_ALPHABET.length)];
    return base.slice(0, 63 - 5) + suffix;
  }

  update(def: ResourceDef, namespace: string, name: string, subresource: string, body: unknown, ctx: WriteContext): { object: Obj; created: boolean } {
    const ns = def.namespaced ? namespace : '';
    const existing = this.store.get(def.storage, ns, name);
    const obj = this.decode(def, namespace, body, ctx);
    const m = meta(obj);
    if (str(m.name) !== name) {
      throw badRequest(`the name of the object (${str(m.name)}) does not match the name on the URL (${name})`);
    }
    if (!existing) {
      if (subresource !== '' || !strategyFor(def.storage).allowCreateOnUpdate) throw notFound(groupResource(def), name);
      delete m.resourceVersion;
      const createCtx = { ...ctx, attrs: { ...ctx.attrs, verb: 'create' } };
      return { object: this.createDecoded(def, namespace, obj, createCtx), created: true };
    }
    return { object: this.updateExisting(def, existing, obj, subresource, ctx), created: false };
  }

  /** The update path shared by PUT and PATCH: preconditions, admission, strategy, validation, no-op detection. */
  private updateExisting(def: ResourceDef, existing: Obj, obj: Obj, subresource: string, ctx: WriteContext): Obj {
    const m = meta(obj);
    const old = meta(existing);
    const name = str(old.name);
    const rv = str(m.resourceVersion);
    if (rv !== '' && rv !== str(old.resourceVersion)) throw conflict(groupResource(def), name, OPTIMISTIC_LOCK_MESSAGE);
    this.admit(def, ctx, obj, existing);
    const strategy = strategyFor(def.storage);
    if (subresource === 'status') strategy.prepareForStatusUpdate?.(obj, existing);
    else strategy.prepareForUpdate(obj, existing);
    // rest.BeforeUpdate: what an update can never change.
    if (!str(m.uid)) m.uid = old.uid;
    m.creationTimestamp = old.creationTimestamp;
    if (old.deletionTimestamp !== undefined) m.deletionTimestamp = old.deletionTimestamp;
    else delete m.deletionTimestamp;
    if (old.deletionGracePeriodSeconds !== undefined && m.deletionGracePeriodSeconds === undefined) m.deletionGracePeriodSeconds = old.deletionGracePeriodSeconds;
    if (old.generation !== undefined) m.generation = old.generation;
    m.resourceVersion = old.resourceVersion;
    this.validate(def, obj, existing, subresource);
    // GuaranteedUpdate writes nothing (and keeps the resourceVersion) when the object did not change.
    if (deepEqual(obj, existing)) return this.present(def, existing);
    if (ctx.dryRun) return this.present(def, obj);
    const finalizing = old.deletionTimestamp !== undefined && !(Array.isArray(m.finalizers) && m.finalizers.length > 0) && m.deletionGracePeriodSeconds === 0;
    if (finalizing) {
      // The last finalizer went from an object already deleted: it goes now.
      const gone = this.store.delete(def.storage, str(old.namespace), name) as Obj;
      this.onObjectRemoved?.(def.storage, gone);
      return this.present(def, obj);
    }
    return this.present(def, this.store.update(def.storage, obj));
  }

  patch(def: ResourceDef, namespace: string, name: string, subresource: string, contentType: string, patchBody: unknown, ctx: WriteContext): Obj {
    const ns = def.namespaced ? namespace : '';
    const existing = this.store.get(def.storage, ns, name);
    if (!existing) throw notFound(groupResource(def), name);
    const current = this.present(def, existing);
    let patched: unknown;
    try {
      if (contentType === 'application/merge-patch+json') patched = applyJsonMergePatch(current, patchBody);
      else if (contentType === 'application/json-patch+json') patched = applyJsonPatch(current, patchBody);
      else patched = applyStrategicMergePatch(current, rec(patchBody), def.kind);
    } catch (err) {
      if (err instanceof PatchError) throw patchFailure(err);
      throw err;
    }
    if (patched === null || typeof patched !== 'object' || Array.isArray(patched)) throw badRequest('the patched object is not an object');
    const pm = meta(patched as Obj);
    if (pm.name !== undefined && pm.name !== name) {
      throw badRequest(`the name of the object (${str(pm.name)}) does not match the name on the URL (${name})`);
    }
    const obj = this.decode(def, namespace, patched, ctx);
    return this.updateExisting(def, existing, obj, subresource, ctx);
  }

  /**
   * Delete with kube's rules: preconditions; graceful deletion for pods (a bound, running pod gets deletionTimestamp and
   * deletionGracePeriodSeconds; a later delete may only shorten it; 0 removes it); finalizers keep an object until removed.
   * Returns the pod (pods) or a Success Status (other resources), and whether the object is gone.
   */
  delete(def: ResourceDef, namespace: string, name: string, options: DeleteOptions, ctx: WriteContext): { result: Obj | StatusBody; deleted: boolean } {
    const ns = def.namespaced ? namespace : '';
    const existing = this.store.get(def.storage, ns, name);
    if (!existing) throw notFound(groupResource(def), name);
    const m = meta(existing);
    const pre = options.preconditions ?? {};
    if (pre.uid !== undefined && pre.uid !== str(m.uid)) {
      throw conflict(groupResource(def), name, `Precondition failed: UID in precondition: ${pre.uid}, UID in object meta: ${str(m.uid)}`);
    }
    if (pre.resourceVersion !== undefined && pre.resourceVersion !== str(m.resourceVersion)) {
      throw conflict(groupResource(def), name, `Precondition failed: ResourceVersion in precondition: ${pre.resourceVersion}, ResourceVersion in object meta: ${str(m.resourceVersion)}`);
    }
    this.admit(def, ctx, undefined, existing);
    if (def.storage === 'namespaces') return this.deleteNamespace(def, existing, ctx);
    const strategy = strategyFor(def.storage);
    const finalizers = Array.isArray(m.finalizers) ? m.finalizers : [];
    const updated = structuredClone(existing);
    const um = meta(updated);
    let removeNow = true;
    let changed = false;

    if (m.deletionTimestamp !== undefined) {
      // Already being deleted: only a shorter grace period is taken.
      const current = typeof m.deletionGracePeriodSeconds === 'number' ? m.deletionGracePeriodSeconds : undefined;
      if (current === undefined || current === 0) {
        removeNow = finalizers.length === 0;
      } else if (options.gracePeriodSeconds !== undefined && options.gracePeriodSeconds < current) {
        const period = options.gracePeriodSeconds;
        const start = Date.parse(str(m.deletionTimestamp)) - current * 1000;
        um.deletionTimestamp = timestamp(new Date(start + period * 1000));
        um.deletionGracePeriodSeconds = period;
        changed = true;
        removeNow = period === 0 && finalizers.length === 0;
      } else {
        removeNow = false;
      }
    } else if (strategy.gracePeriod) {
      const period = strategy.gracePeriod(existing, options.gracePeriodSeconds);
      um.deletionTimestamp = timestamp(new Date(this.now().getTime() + period * 1000));
      um.deletionGracePeriodSeconds = period;
      changed = true;
      removeNow = period === 0 && finalizers.length === 0;
    } else if (finalizers.length > 0) {
      um.deletionTimestamp = timestamp(this.now());
      um.deletionGracePeriodSeconds = 0;
      changed = true;
      removeNow = false;
    }

    if (ctx.dryRun) return { result: this.deleteResult(def, removeNow ? existing : updated, removeNow), deleted: removeNow };
    if (removeNow) {
      const gone = this.store.delete(def.storage, ns, name) as Obj;
      this.onObjectRemoved?.(def.storage, gone);
      return { result: this.deleteResult(def, gone, true), deleted: true };
    }
    const kept = changed ? this.store.update(def.storage, updated) : existing;
    return { result: this.deleteResult(def, kept, false), deleted: false };
  }

  /** Pods, and objects kept (grace period, finalizers), answer with the object; the others with a Success Status naming it. */
  private deleteResult(def: ResourceDef, obj: Obj, deleted: boolean): Obj | StatusBody {
    if (def.storage === 'pods' || !deleted) return this.present(def, obj);
    const m = meta(obj);
    return success({ name: str(m.name), ...(def.group ? { group: def.group } : {}), kind: def.resource, uid: str(m.uid) });
  }

  /** Namespace deletion: Terminating at once; the namespace controller's work is done by the server (namespaces.ts). */
  private deleteNamespace(def: ResourceDef, existing: Obj, ctx: WriteContext): { result: Obj; deleted: boolean } {
    const m = meta(existing);
    if (m.deletionTimestamp !== undefined) return { result: existing, deleted: false };
    const updated = structuredClone(existing);
    meta(updated).deletionTimestamp = timestamp(this.now());
    meta(updated).deletionGracePeriodSeconds = 0;
    updated.status = { ...rec(updated.status), phase: 'Terminating' };
    if (ctx.dryRun) return { result: updated, deleted: false };
    const kept = this.store.update(def.storage, updated);
    this.onNamespaceTerminating?.(kept);
    return { result: this.present(def, kept), deleted: false };
  }

  /** Called when a namespace starts terminating (the namespace controller empties it). */
  onNamespaceTerminating?: (ns: Obj) => void;

  /** Removes an object whatever its grace period or finalizers (for the namespace controller). */
  forceRemove(storage: string, namespace: string, name: string): void {
    const gone = this.store.delete(storage, namespace, name);
    if (gone) this.onObjectRemoved?.(storage, gone);
  }
}

function dedupe(errors: FieldError[]): FieldError[] {
  const out: FieldError[] = [];
  for (const e of errors) if (!out.some((x) => x.field === e.field && x.message === e.message && x.type === e.type)) out.push(e);
  return out;
}

function quote(v: unknown): string {
  return typeof v === 'string' ? `"${v}"` : JSON.stringify(v);
}

/** ValidateObjectMetaUpdate's immutable fields, checked for every kind. */
function metadataUpdateErrors(obj: Obj, old: Obj): FieldError[] {
  const m = rec(obj.metadata);
  const o = rec(old.metadata);
  const errors: FieldError[] = [];
  for (const field of ['name', 'namespace', 'uid', 'creationTimestamp', 'deletionGracePeriodSeconds'] as const) {
    if (m[field] !== undefined && !deepEqual(m[field], o[field])) {
      errors.push({ type: 'FieldValueInvalid', field: `metadata.${field}`, message: `Invalid value: ${quote(m[field])}: field is immutable` });
    }
  }
  return errors;
}

/** A patch that does not apply: 400 BadRequest, or 422 (NewGenericServerResponse: reason Invalid, the error's text). */
function patchFailure(err: PatchError): ApiError {
  if (err.status === 400) return badRequest(err.message);
  return new ApiError({ kind: 'Status', apiVersion: 'v1', metadata: {}, status: 'Failure', message: err.message, reason: 'Invalid', details: {}, code: 422 });
}

