// When to ask for the next client certificate: client-go's certificate manager's jittered 70-90 % of the lifetime.

/**
 * The rotation deadline of a certificate valid from `notBefore` to `notAfter` (ms): notBefore plus a uniformly jittered
 * 70-90 % of its lifetime (client-go's `wait.Jitter(total, 0.2) - 0.3 * total`). `random` is in [0, 1).
 */
export function rotationDeadline(notBefore: number, notAfter: number, random: number): number {
  const total = notAfter - notBefore;
  return notBefore + Math.floor((total * (7 + 2 * random)) / 10);
}

/**
 * The wait before retrying a failed rotation: 2 s doubling per consecutive failure, capped at 5 minutes and never past
 * what is left of the certificate's validity (less 10 s), and never below 1 s.
 */
export function rotationRetryDelay(failures: number, nowMs: number, notAfter: number): number {
  const backoff = Math.min(2_000 * 2 ** Math.max(0, failures - 1), 5 * 60_000);
  return Math.max(1_000, Math.min(backoff, notAfter - nowMs - 10_000));
}
