/**
 * Runs the tasks given for one key one after the other, each once the previous has settled; tasks of
 * different keys run side by side. For steps on the same held lock that must not interleave on the server
 * (two extensions, one of which moves the lock's key), including a step whose caller stopped waiting for
 * it: the next one still waits for the step itself, not for the caller's timeout.
 */
export class OneAtATime {
  private readonly tails = new Map<string, Promise<unknown>>();

  run<T>(key: string, task: () => Promise<T>): Promise<T> {
    const previous = this.tails.get(key);
    const result = previous ? previous.then(task) : task();
    const tail = result.then(
      () => undefined,
      () => undefined,
    );
    this.tails.set(key, tail);
    void tail.then(() => {
      if (this.tails.get(key) === tail) this.tails.delete(key);
    });
    return result;
  }
}
