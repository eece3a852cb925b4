// The audit log of the test API server: one audit.k8s.io/v1 Event (level Metadata) per request, as JSON lines, so tests
// and the benchmark can count what a client asked for. Watches are logged when they start (stage ResponseStarted).
import { randomUUID } from 'node:crypto';
import { appendFileSync } from 'node:fs';
import type { RequestInfo } from './request-info.js';
import type { UserInfo } from './types.js';

/** Microsecond RFC 3339, as audit timestamps are written. */
function microTime(d: Date): string {
  return d.toISOString().replace(/\.(\d{3})Z$/, '.$1000Z');
}

export interface AuditRecord {
  info: RequestInfo;
  requestURI: string;
  user: UserInfo | undefined;
  sourceIP: string;
  userAgent: string;
  received: Date;
  code: number;
  /** For failures: the Status' reason and message. */
  failure?: { reason?: string; message?: string };
  stage: 'ResponseStarted' | 'ResponseComplete';
  decision?: 'allow' | 'forbid';
}

export class AuditLog {
  constructor(private readonly file: string) {}

  write(r: AuditRecord): void {
    const event: Record<string, unknown> = {
      kind: 'Event',
      apiVersion: 'audit.k8s.io/v1',
      level: 'Metadata',
      auditID: randomUUID(),
      stage: r.stage,
      requestURI: r.requestURI,
      verb: r.info.verb,
      user: r.user ? { username: r.user.username, ...(r.user.uid ? { uid: r.user.uid } : {}), groups: r.user.groups, ...(r.user.extra ? { extra: r.user.extra } : {}) } : {},
      sourceIPs: [r.sourceIP],
      userAgent: r.userAgent,
    };
    if (r.info.isResourceRequest) {
      const ref: Record<string, unknown> = { resource: r.info.resource };
      if (r.info.namespace) ref.namespace = r.info.namespace;
      if (r.info.name) ref.name = r.info.name;
      if (r.info.apiGroup) ref.apiGroup = r.info.apiGroup;
      ref.apiVersion = r.info.apiVersion;
      if (r.info.subresource) ref.subresource = r.info.subresource;
      event.objectRef = ref;
    }
    const status: Record<string, unknown> = { metadata: {}, code: r.code };
    if (r.failure) {
      status.status = 'Failure';
      if (r.failure.message) status.message = r.failure.message;
      if (r.failure.reason) status.reason = r.failure.reason;
    }
    event.responseStatus = status;
    event.requestReceivedTimestamp = microTime(r.received);
    event.stageTimestamp = microTime(new Date());
    if (r.decision) event.annotations = { 'authorization.k8s.io/decision': r.decision, 'authorization.k8s.io/reason': '' };
    appendFileSync(this.file, JSON.stringify(event) + '\n');
  }
}
