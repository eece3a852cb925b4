// Kubernetes resource quantities ("500m", "1.5Gi", "2e3"): parsing, exact arithmetic and canonical text, as apimachinery's resource.Quantity.

/** How a quantity is written back: the family of the suffix it was parsed with. */
export type QuantityFormat = 'DecimalSI' | 'BinarySI' | 'DecimalExponent';

const quantityPattern = '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$';
/** apimachinery's ErrFormatWrong, ErrSuffix and ErrNumeric texts, which the apiserver shows to users. */
export const quantityFormatError = `quantities must match the regular expression '${quantityPattern}'`;
export const quantitySuffixError = "unable to parse quantity's suffix";
export const quantityNumericError = 'unable to parse numeric part of quantity';

export class InvalidQuantityError extends Error {
  constructor(
    readonly input: string,
    message: string,
  ) {
    super(message);
    this.name = 'InvalidQuantityError';
  }
}

const decimalSuffixes: Record<string, number> = { n: -9, u: -6, m: -3, '': 0, k: 3, M: 6, G: 9, T: 12, P: 15, E: 18 };
const binarySuffixes: Record<string, number> = { Ki: 10, Mi: 20, Gi: 30, Ti: 40, Pi: 50, Ei: 60 };
const decimalSuffixByExponent = new Map(Object.entries(decimalSuffixes).map(([s, e]) => [e, s]));
const binarySuffixByExponent = new Map(Object.entries(binarySuffixes).map(([s, e]) => [e, s]));

const nanosPerUnit = 1_000_000_000n;
const maxInt64 = 2n ** 63n - 1n;
// Beyond this a decimal exponent only names values no resource can have; refusing it keeps the arithmetic bounded.
const maxDecimalExponent = 1000;

const pow10 = (n: number): bigint => 10n ** BigInt(n);

/** Division rounding away from zero, as inf.RoundUp does. */
function divAwayFromZero(a: bigint, b: bigint): bigint {
  const q = a / b;
  return a % b === 0n ? q : a < 0n ? q - 1n : q + 1n;
}

/** Division rounding towards +infinity, as Quantity.ScaledValue does for the values a pod spec can hold. */
function divCeil(a: bigint, b: bigint): bigint {
  const q = a / b;
  return a % b !== 0n && a > 0n ? q + 1n : q;
}

/** A quantity held exactly, in nano units (apimachinery rounds anything finer up to 1n). */
export class Quantity {
  private constructor(
    /** The value × 10^9. */
    readonly nanos: bigint,
    readonly format: QuantityFormat,
  ) {}

  static zero(format: QuantityFormat = 'DecimalSI'): Quantity {
    return new Quantity(0n, format);
  }

  static fromNanos(nanos: bigint, format: QuantityFormat): Quantity {
    return new Quantity(nanos, format);
  }

  /** The value rounded up to an integer (Quantity.Value). */
  value(): bigint {
    return divCeil(this.nanos, nanosPerUnit);
  }

  /** The value × 1000 rounded up to an integer (Quantity.MilliValue). */
  milliValue(): bigint {
    return divCeil(this.nanos, 1_000_000n);
  }

  isZero(): boolean {
    return this.nanos === 0n;
  }

  sign(): -1 | 0 | 1 {
    return this.nanos < 0n ? -1 : this.nanos > 0n ? 1 : 0;
  }

  cmp(other: Quantity): -1 | 0 | 1 {
    return this.nanos < other.nanos ? -1 : this.nanos > other.nanos ? 1 : 0;
  }

  /** The sum, in this quantity's format (Quantity.Add). */
  add(other: Quantity): Quantity {
    return new Quantity(this.nanos + other.nanos, this.format);
  }

  /** The canonical text apimachinery prints: no fractional digits, the largest suffix that loses nothing. */
  toString(): string {
    if (this.nanos === 0n) return '0';
    const sign = this.nanos < 0n ? '-' : '';
    const abs = this.nanos < 0n ? -this.nanos : this.nanos;
    if (this.format === 'BinarySI' && abs >= 1024n * nanosPerUnit && abs % nanosPerUnit === 0n) {
      let mantissa = abs / nanosPerUnit;
      let exponent = 0;
      while (exponent < 60 && mantissa % 1024n === 0n) {
        mantissa /= 1024n;
        exponent += 10;
      }
      return `${sign}${mantissa}${binarySuffixByExponent.get(exponent) ?? ''}`;
    }
    let mantissa = abs;
    let exponent = -9;
    while (mantissa % 10n === 0n) {
      mantissa /= 10n;
      exponent++;
    }
    while (exponent % 3 !== 0) {
      mantissa *= 10n;
      exponent--;
    }
    if (this.format === 'DecimalExponent') return `${sign}${mantissa}${exponent === 0 ? '' : `e${exponent}`}`;
    if (exponent > 18) {
      mantissa *= pow10(exponent - 18);
      exponent = 18;
    }
    return `${sign}${mantissa}${decimalSuffixByExponent.get(exponent)}`;
  }
}

/** The number and suffix of a quantity's text, scanned as apimachinery's parseQuantityString does. */
function scanQuantity(str: string): { negative: boolean; num: string; denom: string; suffix: string } {
  let pos = 0;
  const end = str.length;
  let negative = false;
  if (str[0] === '-' || str[0] === '+') {
    negative = str[0] === '-';
    pos++;
  }
  while (pos < end && str[pos] === '0') pos++;
  if (pos >= end) return { negative, num: '0', denom: '', suffix: '' };
  const numStart = pos;
  while (pos < end && str[pos]! >= '0' && str[pos]! <= '9') pos++;
  const num = str.slice(numStart, pos) || '0';
  let denom = '';
  if (str[pos] === '.') {
    const denomStart = ++pos;
    while (pos < end && str[pos]! >= '0' && str[pos]! <= '9') pos++;
    denom = str.slice(denomStart, pos);
  }
  const suffixStart = pos;
  while (pos < end && 'eEinumkKMGTP'.includes(str[pos]!)) pos++;
  if (str[pos] === '-' || str[pos] === '+') pos++;
  while (pos < end && str[pos]! >= '0' && str[pos]! <= '9') pos++;
  if (pos < end) throw new InvalidQuantityError(str, quantityFormatError);
  return { negative, num, denom, suffix: str.slice(suffixStart) };
}

function interpretSuffix(str: string, suffix: string): { base: 10 | 2; exponent: number; format: QuantityFormat } {
  const decimal = decimalSuffixes[suffix];
  if (decimal !== undefined) return { base: 10, exponent: decimal, format: 'DecimalSI' };
  const binary = binarySuffixes[suffix];
  if (binary !== undefined) return { base: 2, exponent: binary, format: 'BinarySI' };
  if (suffix.length > 1 && (suffix[0] === 'e' || suffix[0] === 'E') && /^[+-]?\d+$/.test(suffix.slice(1))) {
    const exponent = Number(suffix.slice(1));
    if (Math.abs(exponent) > maxDecimalExponent) throw new InvalidQuantityError(str, quantityNumericError);
    return { base: 10, exponent, format: 'DecimalExponent' };
  }
  throw new InvalidQuantityError(str, quantitySuffixError);
}

/**
 * Parses a quantity as the apiserver decodes one: from its text, or from a bare JSON/YAML number.
 * Throws InvalidQuantityError with apimachinery's message.
 */
export function parseQuantity(input: string | number): Quantity {
  const str = typeof input === 'number' ? String(input) : input;
  if (str === '') throw new InvalidQuantityError(str, quantityFormatError);
  const { negative, num, denom, suffix } = scanQuantity(str);
  const { base, exponent, format: parsedFormat } = interpretSuffix(str, suffix);
  // value = digits × 10^(decimalExponent) × 2^(binaryExponent), held as nanos rounded away from zero.
  const digits = BigInt(num + denom);
  const decimalExponent = (base === 10 ? exponent : 0) - denom.length + 9;
  let nanos = decimalExponent >= 0 ? digits * pow10(decimalExponent) : divAwayFromZero(digits, pow10(-decimalExponent));
  if (base === 2) nanos <<= BigInt(exponent);
  let format = parsedFormat;
  if (format === 'BinarySI') {
    if (nanos > maxInt64 * nanosPerUnit) nanos = maxInt64 * nanosPerUnit;
    // A binary quantity below one is printed in decimal rather than rounded.
    if (nanos > 0n && nanos < nanosPerUnit) format = 'DecimalSI';
  }
  return Quantity.fromNanos(negative ? -nanos : nanos, format);
}

/** Parses a quantity, or undefined when the input is not one (validation reports it; callers then ignore it). */
export function tryParseQuantity(input: unknown): Quantity | undefined {
  if (typeof input !== 'string' && typeof input !== 'number') return undefined;
  try {
    return parseQuantity(input);
  } catch (err) {
    if (err instanceof InvalidQuantityError) return undefined;
    throw err;
  }
}
