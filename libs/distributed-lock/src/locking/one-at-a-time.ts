/**
 * Runs the tasks given for one key one after the other: each starts once the previous has settled, or once
 * it has waited `maxWaitMs` for it (a task that hangs must not hold up the ones after it for good). Tasks
 * of different keys run side by side. For steps on the same held lock that must not interleave on the
 * server, such as two extensions one of which moves the lock's key. A task is told whether a later task of
 * its key has started meanwhile (which only happens when it overran `maxWaitMs`), so that it can leave the
 * later one's work alone.
 */
export class OneAtATime {
  private readonly keys = new Map<string, { tail: Promise<unknown>; started: number }>();

  run<T>(key: string, task: (overtaken: () => boolean) => Promise<T>, maxWaitMs = Number.POSITIVE_INFINITY): Promise<T> {
    const state = this.keys.get(key) ?? { tail: Promise.resolve(), started: 0 };
    const previous = state.tail;
    const start = (): Promise<T> => {
      state.started += 1;
      const mine = state.started;
      return task(() => state.started !== mine);
    };
    const result = waitAtMost(previous, maxWaitMs).then(start);
    const tail = result.then(
      () => undefined,
      () => undefined,
    );
    state.tail = tail;
    this.keys.set(key, state);
    void tail.then(() => {
      if (state.tail === tail && this.keys.get(key) === state) this.keys.delete(key);
    });
    return result;
  }
}

function waitAtMost(pending: Promise<unknown>, ms: number): Promise<void> {
  if (!Number.isFinite(ms)) return pending.then(() => undefined);
  let timer: NodeJS.Timeout | undefined;
  const waited = new Promise<void>((resolve) => {
    timer = setTimeout(resolve, Math.max(0, ms));
    timer.unref?.();
  });
  return Promise.race([pending.then(() => undefined), waited]).finally(() => clearTimeout(timer));
}
