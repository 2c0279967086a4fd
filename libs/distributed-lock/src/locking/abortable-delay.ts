/**
 * Resolves after `ms`, or as soon as `signal` aborts (resolving, not rejecting: the caller checks the
 * signal and decides which error to raise). The timer keeps the process alive: someone awaits it (a
 * waiting acquisition over SQLite has no socket that would).
 */
export function abortableDelay(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal?.aborted) return resolve();
    const done = (): void => {
      clearTimeout(timer);
      signal?.removeEventListener('abort', done);
      resolve();
    };
    const timer = setTimeout(done, Math.max(0, ms));
    signal?.addEventListener('abort', done, { once: true });
  });
}
