// $(VAR) expansion with Kubernetes' escaping rules.
import { expandVars } from '../../../src/core/env-expansion.js';

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
