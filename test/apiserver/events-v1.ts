// Conversion between the stored core/v1 Event and its events.k8s.io/v1 form (both groups serve one storage, as in kube).
import type { Obj } from './resources.js';

/** core/v1 field -> events.k8s.io/v1 field; the other fields keep their names. */
const RENAMES: [string, string][] = [
  ['involvedObject', 'regarding'],
  ['message', 'note'],
  ['source', 'deprecatedSource'],
  ['firstTimestamp', 'deprecatedFirstTimestamp'],
  ['lastTimestamp', 'deprecatedLastTimestamp'],
  ['count', 'deprecatedCount'],
  ['reportingComponent', 'reportingController'],
];

function rename(obj: Obj, pairs: [string, string][], apiVersion: string): Obj {
  const out: Obj = {};
  for (const [key, value] of Object.entries(obj)) {
    const pair = pairs.find(([from]) => from === key);
    out[pair ? pair[1] : key] = value;
  }
  out.apiVersion = apiVersion;
  out.kind = 'Event';
  return out;
}

export function coreEventToEventsV1(event: Obj): Obj {
  return rename(event, RENAMES, 'events.k8s.io/v1');
}

export function eventsV1ToCoreEvent(event: Obj): Obj {
  return rename(
    event,
    RENAMES.map(([a, b]) => [b, a]),
    'v1',
  );
}
