// Ordering of names as Go's sort.Strings orders them (code unit by code unit; the same as bytes for the ASCII of
// Kubernetes names). Not localeCompare: its first call loads ICU's collator, about 2.6 MB of the Node binary's pages.

/** a before b: negative; after: positive; equal: 0. */
export function compareStrings(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}
