/** Share of a lease kept back for clock drift between this process and the server (Redlock's factor). */
export const CLOCK_DRIFT_FACTOR = 0.01;

/**
 * Local time at which a lease of `ttlMs` must be assumed gone, counted from the moment the request was
 * sent (the server started the lease after that). A margin for clock drift is taken off.
 */
export function leaseExpiry(sentAt: number, ttlMs: number): number {
  return sentAt + ttlMs - Math.ceil(ttlMs * CLOCK_DRIFT_FACTOR) - 2;
}
