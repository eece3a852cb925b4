// apimachinery's field errors and name checks, worded as the apiserver words them: shared by the pod and volume validation.

/** One problem with one field, worded like apimachinery's field.Error without the field prefix. */
export interface FieldError {
  field: string;
  message: string;
}

export type JsonObject = Record<string, unknown>;

export function isObject(value: unknown): value is JsonObject {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

// Go's %q for strings, plain for numbers: what `Invalid value: ...` shows.
export function showValue(value: unknown): string {
  if (typeof value === 'number' || typeof value === 'boolean') return String(value);
  return JSON.stringify(value) ?? String(value);
}

/** The API's image pull policies (containers' imagePullPolicy, image volumes' pullPolicy). */
export const pullPolicies = ['Always', 'IfNotPresent', 'Never'] as const;

export const required = (field: string, detail = ''): FieldError => ({ field, message: detail ? `Required value: ${detail}` : 'Required value' });
export const invalid = (field: string, value: unknown, detail: string): FieldError => ({
  field,
  message: `Invalid value: ${showValue(value)}: ${detail}`,
});
export const notSupported = (field: string, value: unknown, supported: readonly string[]): FieldError => ({
  field,
  message: `Unsupported value: ${showValue(value)}: supported values: ${supported.map((s) => JSON.stringify(s)).join(', ')}`,
});
export const tooLong = (field: string, maxBytes: number): FieldError => ({ field, message: `Too long: must have at most ${maxBytes} bytes` });
export const notFound = (field: string, value: unknown): FieldError => ({ field, message: `Not found: ${showValue(value)}` });
export const duplicate = (field: string, value: unknown): FieldError => ({ field, message: `Duplicate value: ${showValue(value)}` });

// Lists and objects are shown by shape only, as a field error cannot usefully quote them.
export const wrongType = (field: string, value: unknown, expected: string): FieldError => ({
  field,
  message: `Invalid value: ${Array.isArray(value) ? '[...]' : isObject(value) ? '{...}' : showValue(value)}: must be ${expected}`,
});

/** apimachinery's RegexError: the message, examples and the pattern checked. */
export function regexError(message: string, pattern: string, examples: string[]): string {
  return `${message} (e.g. ${examples.map((e) => `'${e}'`).join(',  or ')}, regex used for validation is '${pattern}')`;
}

const dns1123LabelFmt = '[a-z0-9]([-a-z0-9]*[a-z0-9])?';
const dns1123LabelRegexp = new RegExp(`^${dns1123LabelFmt}$`);
export const dns1123SubdomainFmt = `${dns1123LabelFmt}(\\.${dns1123LabelFmt})*`;
const dns1123SubdomainRegexp = new RegExp(`^${dns1123SubdomainFmt}$`);

/** apimachinery's IsDNS1123Label: a container name, a namespace. */
export function dns1123LabelErrors(value: string): string[] {
  const errs: string[] = [];
  if (value.length > 63) errs.push('must be no more than 63 characters');
  if (!dns1123LabelRegexp.test(value)) {
    errs.push(
      regexError(
        "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character",
        dns1123LabelFmt,
        ['my-name', '123-abc'],
      ),
    );
  }
  return errs;
}

/** apimachinery's IsDNS1123Subdomain: a pod name. */
export function dns1123SubdomainErrors(value: string): string[] {
  const errs: string[] = [];
  if (value.length > 253) errs.push('must be no more than 253 characters');
  if (!dns1123SubdomainRegexp.test(value)) {
    errs.push(
      regexError(
        "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character",
        dns1123SubdomainFmt,
        ['example.com'],
      ),
    );
  }
  return errs;
}
