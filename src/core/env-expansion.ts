// Kubernetes' $(VAR) expansion for command, args and env values: `$$` escapes, unknown names stay as written.

/**
 * Linux's MAX_ARG_STRLEN: the longest single argument or environment string execve takes. An expansion beyond it
 * could never start, and a chain of variables that each repeat the one before grows exponentially.
 */
export const MAX_EXPANDED_LENGTH = 131_072;

/**
 * The most a container's environment may hold in all: the runtime's default gRPC message limit (16 MiB, kubelet's CRI
 * client's too), which the CreateContainer request carrying it must fit.
 */
export const MAX_CONTAINER_ENV_LENGTH = 16 * 1024 * 1024;
export const envTooLarge = `more than ${MAX_CONTAINER_ENV_LENGTH} characters in all, over the CRI message limit`;

/** An expansion that outgrew MAX_EXPANDED_LENGTH; the caller names the field. */
export class ExpansionLimitError extends Error {
  constructor() {
    super(`expands to more than ${MAX_EXPANDED_LENGTH} characters, Linux's limit for one argument or environment variable`);
    this.name = 'ExpansionLimitError';
  }
}

/** `input` with $(VAR) expanded from `vars`; throws ExpansionLimitError when the result grows over `maxLength`. */
export function expandVars(input: string, vars: Pick<ReadonlyMap<string, string>, 'get'>, maxLength = MAX_EXPANDED_LENGTH): string {
  let out = '';
  let i = 0;
  let noCloseAfter = false;
  while (i < input.length) {
    if (out.length > maxLength) throw new ExpansionLimitError();
    const ch = input[i]!;
    if (ch !== '$' || i + 1 >= input.length) {
      out += ch;
      i++;
      continue;
    }
    const next = input[i + 1];
    if (next === '$') {
      out += '$';
      i += 2;
    } else if (next === '(') {
      // Once no ')' follows, later '$(' are not searched again (that would be quadratic in the input).
      const close = noCloseAfter ? -1 : input.indexOf(')', i + 2);
      if (close < 0) {
        noCloseAfter = true;
        out += '$(';
        i += 2;
      } else {
        const name = input.slice(i + 2, close);
        out += vars.get(name) ?? `$(${name})`;
        i = close + 1;
      }
    } else {
      out += '$' + next;
      i += 2;
    }
  }
  if (out.length > maxLength) throw new ExpansionLimitError();
  return out;
}
