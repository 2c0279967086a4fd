/** Resolves with the signal's reason once it aborts; rejects if that takes longer than `ms`. */
export function abortedWithin(signal: AbortSignal, ms: number): Promise<unknown> {
  return new Promise((resolve, reject) => {
    if (signal.aborted) return resolve(signal.reason);
    const timer = setTimeout(() => reject(new Error(`signal not aborted within ${ms} ms`)), ms);
    signal.addEventListener('abort', () => {
      clearTimeout(timer);
      resolve(signal.reason);
    });
  });
}
