// Kubernetes' $(VAR) expansion for command, args and env values: `$$` escapes, unknown names stay as written.

export function expandVars(input: string, vars: Pick<ReadonlyMap<string, string>, 'get'>): string {
  let out = '';
  let i = 0;
  while (i < input.length) {
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
      const close = input.indexOf(')', i + 2);
      if (close < 0) {
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
  return out;
}
