/**
 * Waits for `work`, or until `giveUp` aborts, whichever comes first: a strategy's close that would
 * otherwise wait for a server that does not answer (see `LockStrategy.close`). Settles as `work` does when
 * it comes first; resolves when `giveUp` does, and a failure of `work` after that is dropped.
 */
export function untilGivenUp(work: Promise<unknown>, giveUp: AbortSignal | undefined): Promise<void> {
  if (!giveUp) return work.then(() => undefined);
  work.catch(() => undefined);
  if (giveUp.aborted) return Promise.resolve();
  return new Promise((resolve, reject) => {
    const givenUp = (): void => resolve();
    giveUp.addEventListener('abort', givenUp, { once: true });
    work.then(
      () => {
        giveUp.removeEventListener('abort', givenUp);
        resolve();
      },
      (error: unknown) => {
        giveUp.removeEventListener('abort', givenUp);
        reject(error);
      },
    );
  });
}
