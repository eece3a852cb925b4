// Resource quantity parsing, exact values and canonical text, checked against apimachinery's documented behaviour.
import {
  parseQuantity,
  quantityFormatError,
  quantityNumericError,
  quantitySuffixError,
  tryParseQuantity,
} from '../../../src/core/quantity.js';

describe('parseQuantity: values', () => {
  const cases: Array<[input: string | number, value: bigint, milli: bigint, canonical: string]> = [
    ['0', 0n, 0n, '0'],
    ['1', 1n, 1000n, '1'],
    ['500m', 1n, 500n, '500m'],
    ['0.5', 1n, 500n, '500m'],
    ['.5', 1n, 500n, '500m'],
    ['1.', 1n, 1000n, '1'],
    ['1.5', 2n, 1500n, '1500m'],
    ['2', 2n, 2000n, '2'],
    ['100m', 1n, 100n, '100m'],
    ['1000m', 1n, 1000n, '1'],
    ['0.1m', 1n, 1n, '100u'],
    ['1n', 1n, 1n, '1n'],
    ['0.0000000001', 1n, 1n, '1n'], // finer than a nano rounds up to 1n
    ['1k', 1000n, 1_000_000n, '1k'],
    ['1000', 1000n, 1_000_000n, '1k'],
    ['1M', 1_000_000n, 1_000_000_000n, '1M'],
    ['1G', 1_000_000_000n, 1_000_000_000_000n, '1G'],
    ['2T', 2_000_000_000_000n, 2_000_000_000_000_000n, '2T'],
    ['1E', 10n ** 18n, 10n ** 21n, '1E'],
    ['1Ki', 1024n, 1_024_000n, '1Ki'],
    ['20Mi', 20n * 1024n * 1024n, 20n * 1024n * 1024n * 1000n, '20Mi'],
    ['1024Mi', 1024n ** 3n, 1024n ** 3n * 1000n, '1Gi'],
    ['1.5Gi', 1536n * 1024n * 1024n, 1536n * 1024n * 1024n * 1000n, '1536Mi'],
    ['0.5Ki', 512n, 512_000n, '512'], // binary below 1024 prints in decimal
    ['100Mi', 104857600n, 104857600000n, '100Mi'],
    ['1e3', 1000n, 1_000_000n, '1e3'],
    ['1E3', 1000n, 1_000_000n, '1e3'],
    ['1.5e3', 1500n, 1_500_000n, '1500'],
    ['12e6', 12_000_000n, 12_000_000_000n, '12e6'],
    ['1e-3', 1n, 1n, '1e-3'],
    ['+1', 1n, 1000n, '1'],
    ['007', 7n, 7000n, '7'],
    ['-1', -1n, -1000n, '-1'],
    ['-500m', 0n, -500n, '-500m'],
    [512, 512n, 512_000n, '512'],
    [0.25, 1n, 250n, '250m'],
    [1e9, 1_000_000_000n, 1_000_000_000_000n, '1G'],
  ];
  test.each(cases)('%p -> value %p, milli %p, canonical %p', (input, value, milli, canonical) => {
    const q = parseQuantity(input);
    expect(q.value()).toBe(value);
    expect(q.milliValue()).toBe(milli);
    expect(q.toString()).toBe(canonical);
  });

  test('formats follow the suffix family', () => {
    expect(parseQuantity('1Gi').format).toBe('BinarySI');
    expect(parseQuantity('1G').format).toBe('DecimalSI');
    expect(parseQuantity('1e9').format).toBe('DecimalExponent');
    expect(parseQuantity('0.5Ki').format).toBe('BinarySI');
    expect(parseQuantity('0.0001Ki').format).toBe('DecimalSI');
  });

  test('binary quantities are capped at 2^63-1', () => {
    expect(parseQuantity('16Ei').value()).toBe(2n ** 63n - 1n);
  });

  test('apimachinery quirks: a bare suffix or sign is zero', () => {
    expect(parseQuantity('Ki').isZero()).toBe(true);
    expect(parseQuantity('m').isZero()).toBe(true);
    expect(parseQuantity('+').isZero()).toBe(true);
    expect(parseQuantity('.').isZero()).toBe(true);
  });
});

describe('parseQuantity: errors', () => {
  const cases: Array<[input: string, message: string]> = [
    ['', quantityFormatError],
    ['abc', quantityFormatError],
    ['1 Gi', quantityFormatError],
    ['1Gi5x', quantityFormatError],
    ['1.2.3', quantityFormatError],
    ['1K', quantitySuffixError],
    ['1Kb', quantityFormatError],
    ['1e', quantitySuffixError],
    ['1mi', quantitySuffixError],
    ['1Mi5', quantitySuffixError],
    ['1e100000', quantityNumericError],
  ];
  test.each(cases)('%p is refused', (input, message) => {
    expect(() => parseQuantity(input)).toThrow(message);
  });

  test('tryParseQuantity answers undefined for anything that is not a quantity', () => {
    expect(tryParseQuantity('1Kb')).toBeUndefined();
    expect(tryParseQuantity({})).toBeUndefined();
    expect(tryParseQuantity(undefined)).toBeUndefined();
    expect(tryParseQuantity('64Mi')?.value()).toBe(64n * 1024n * 1024n);
  });
});

describe('Quantity arithmetic', () => {
  test('exact comparison across formats and sums', () => {
    expect(parseQuantity('1Gi').cmp(parseQuantity('1073741824'))).toBe(0);
    expect(parseQuantity('1G').cmp(parseQuantity('1Gi'))).toBe(-1);
    expect(parseQuantity('0.5').cmp(parseQuantity('500m'))).toBe(0);
    const sum = parseQuantity('250m').add(parseQuantity('0.75'));
    expect(sum.cmp(parseQuantity('1'))).toBe(0);
    expect(sum.toString()).toBe('1');
    expect(parseQuantity('512Mi').add(parseQuantity('512Mi')).toString()).toBe('1Gi');
  });
});
