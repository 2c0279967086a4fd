/**
 * Resolves after `ms`, or as soon as `signal` aborts (resolving, not rejecting: the caller checks the
 * signal and decides which error to raise). The timer never keeps the process alive on its own.
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
    timer.unref?.();
    signal?.addEventListener('abort', done, { once: true });
  });
}
