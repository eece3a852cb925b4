// $(VAR) expansion with Kubernetes' escaping rules.
import { ExpansionLimitError, MAX_EXPANDED_LENGTH, expandVars } from '../../../src/core/env-expansion.js';

const vars = new Map([['A', 'x'], ['B', 'y y']]);

test.each([
  ['$(A)', 'x'],
  ['pre-$(A)-$(B)', 'pre-x-y y'],
  ['$$(A)', '$(A)'],
  ['$$$(A)', '$x'],
  ['$(UNKNOWN)', '$(UNKNOWN)'],
  ['$(A', '$(A'],
  ['cost $5', 'cost $5'],
  ['end$', 'end$'],
  ['', ''],
])('expandVars(%j) = %j', (input, out) => {
  expect(expandVars(input, vars)).toBe(out);
});

describe('limits', () => {
  test('an expansion past Linux MAX_ARG_STRLEN is refused, also when each variable repeats the one before', () => {
    const env = new Map([['A', 'x'.repeat(1000)]]);
    expect(expandVars('$(A)'.repeat(131), env)).toHaveLength(131_000);
    expect(() => expandVars('$(A)'.repeat(132), env)).toThrow(new ExpansionLimitError());
    expect(() => expandVars('y'.repeat(MAX_EXPANDED_LENGTH + 1), env)).toThrow(ExpansionLimitError);
    expect(new ExpansionLimitError().message).toBe("expands to more than 131072 characters, Linux's limit for one argument or environment variable");
  });

  test('an unclosed "$(" is literal, and many of them are not searched again (linear time)', () => {
    // Searching for ')' again at each '$(' would take minutes over this input.
    expect(expandVars('$($$'.repeat(200_000), new Map(), Infinity)).toBe('$($'.repeat(200_000));
  });
});
