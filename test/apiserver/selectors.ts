// Label and field selectors of list and watch requests, parsed and matched as apimachinery's labels and fields packages do.
import { badRequest } from './api-errors.js';

export type LabelOperator = 'exists' | '!exists' | '=' | '!=' | 'in' | 'notin' | 'gt' | 'lt';

export interface LabelRequirement {
  key: string;
  op: LabelOperator;
  values: string[];
}

const keyChars = /^[A-Za-z0-9._/-]+$/;

/** Splits at commas that are not inside parentheses. */
function splitTopLevel(selector: string): string[] {
  const parts: string[] = [];
  let depth = 0;
  let current = '';
  for (const ch of selector) {
    if (ch === '(') depth++;
    if (ch === ')') depth--;
    if (ch === ',' && depth === 0) {
      parts.push(current);
      current = '';
    } else {
      current += ch;
    }
  }
  parts.push(current);
  return parts;
}

function checkKey(key: string, whole: string): string {
  if (!keyChars.test(key)) throw badRequest(`unable to parse requirement: found '${key}', expected: identifier in selector "${whole}"`);
  return key;
}

/** Parses a labelSelector; throws a 400 ApiError on a malformed one. An empty selector has no requirements (matches all). */
export function parseLabelSelector(selector: string): LabelRequirement[] {
  const trimmed = selector.trim();
  if (trimmed === '') return [];
  const requirements: LabelRequirement[] = [];
  for (const raw of splitTopLevel(trimmed)) {
    const part = raw.trim();
    if (part === '') throw badRequest(`unable to parse requirement: found '', expected: !, identifier, or 'end of string'`);
    let m: RegExpMatchArray | null;
    if ((m = part.match(/^!\s*([^\s!=<>(),]+)$/))) {
      requirements.push({ key: checkKey(m[1] as string, selector), op: '!exists', values: [] });
    } else if ((m = part.match(/^([^\s!=<>(),]+)\s+(in|notin)\s*\(([^()]*)\)$/))) {
      const values = (m[3] as string).split(',').map((v) => v.trim());
      if (values.length === 1 && values[0] === '') {
        throw badRequest(`unable to parse requirement: for 'in', 'notin' operators, values set can't be empty`);
      }
      requirements.push({ key: checkKey(m[1] as string, selector), op: m[2] as 'in' | 'notin', values });
    } else if ((m = part.match(/^([^\s!=<>(),]+)\s*(==|=|!=|>|<)\s*([^\s!=<>(),]*)$/))) {
      const op = m[2] === '==' || m[2] === '=' ? '=' : m[2] === '!=' ? '!=' : m[2] === '>' ? 'gt' : 'lt';
      const value = m[3] as string;
      if ((op === 'gt' || op === 'lt') && !/^-?\d+$/.test(value)) {
        throw badRequest(`unable to parse requirement: for 'Gt', 'Lt' operators, the value must be an integer`);
      }
      requirements.push({ key: checkKey(m[1] as string, selector), op, values: [value] });
    } else if ((m = part.match(/^([^\s!=<>(),]+)$/))) {
      requirements.push({ key: checkKey(m[1] as string, selector), op: 'exists', values: [] });
    } else {
      throw badRequest(`unable to parse requirement: couldn't parse the selector string "${selector}"`);
    }
  }
  return requirements;
}

export function matchesLabels(requirements: LabelRequirement[], labels: Record<string, string> | undefined): boolean {
  const set = labels ?? {};
  return requirements.every((r) => {
    const has = Object.prototype.hasOwnProperty.call(set, r.key);
    const value = set[r.key];
    switch (r.op) {
      case 'exists':
        return has;
      case '!exists':
        return !has;
      case '=':
        return has && value === r.values[0];
      case '!=':
        return !has || value !== r.values[0];
      case 'in':
        return has && r.values.includes(value as string);
      case 'notin':
        return !has || !r.values.includes(value as string);
      case 'gt':
      case 'lt': {
        if (!has || !/^-?\d+$/.test(value as string)) return false;
        const n = Number(value);
        const bound = Number(r.values[0]);
        return r.op === 'gt' ? n > bound : n < bound;
      }
    }
  });
}

export interface FieldRequirement {
  field: string;
  op: '=' | '!=';
  value: string;
}

/** Splits a fieldSelector term list at unescaped commas and unescapes values (fields.ParseSelector). */
export function parseFieldSelector(selector: string): FieldRequirement[] {
  if (selector.trim() === '') return [];
  const terms: string[] = [];
  let current = '';
  for (let i = 0; i < selector.length; i++) {
    const ch = selector[i] as string;
    if (ch === '\\' && i + 1 < selector.length) {
      current += ch + (selector[i + 1] as string);
      i++;
    } else if (ch === ',') {
      terms.push(current);
      current = '';
    } else {
      current += ch;
    }
  }
  terms.push(current);
  return terms.map((term) => {
    for (const op of ['!=', '==', '='] as const) {
      const at = findUnescaped(term, op);
      if (at >= 0) {
        const field = term.slice(0, at);
        const value = unescapeFieldValue(term.slice(at + op.length), selector);
        return { field, op: op === '!=' ? '!=' : '=', value };
      }
    }
    throw badRequest(`invalid selector: '${selector}'; can't understand '${term}'`);
  });
}

function findUnescaped(term: string, op: string): number {
  for (let i = 0; i < term.length; i++) {
    if (term[i] === '\\') {
      i++;
      continue;
    }
    if (term.startsWith(op, i)) return i;
  }
  return -1;
}

function unescapeFieldValue(value: string, selector: string): string {
  let out = '';
  for (let i = 0; i < value.length; i++) {
    const ch = value[i] as string;
    if (ch === '\\') {
      const next = value[i + 1];
      if (next === '\\' || next === ',' || next === '=') {
        out += next;
        i++;
        continue;
      }
      throw badRequest(`invalid field selector: invalid escape sequence in '${selector}'`);
    }
    if (ch === ',' || ch === '=') throw badRequest(`invalid field selector: unescaped '${ch}' in '${selector}'`);
    out += ch;
  }
  return out;
}

/** Checks every requirement names a field the resource can be selected by (kube: `field label not supported: x`). */
export function checkFieldLabels(requirements: FieldRequirement[], supported: readonly string[]): void {
  for (const r of requirements) {
    if (!supported.includes(r.field)) throw badRequest(`field label not supported: ${r.field}`);
  }
}

export function matchesFields(requirements: FieldRequirement[], fields: Record<string, string>): boolean {
  return requirements.every((r) => {
    const value = fields[r.field] ?? '';
    return r.op === '=' ? value === r.value : value !== r.value;
  });
}
