import type { LockService } from '@app/distributed-lock';

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * The reads a strategy makes on a hand-over, counted by the test's own probe: none between two writers
 * of `here` (the holder tells its successor directly, whose token is higher), at least one for a writer
 * of `here` behind a holder of `elsewhere` (another process: the successor must look).
 */
export async function expectLocalHandOverWithoutReads(here: LockService, elsewhere: LockService, key: string, reads: { reset(): void; count(): number }): Promise<void> {
  const figures = await readsOnHandOver(here, elsewhere, key, reads);
  expect(figures.local).toBe(0);
  expect(figures.nextToken).toBeGreaterThan(figures.holderToken);
  expect(figures.remote).toBeGreaterThanOrEqual(1);
}

/** 8 writers over `here` and `elsewhere`: never two inside at once, fencing tokens distinct and in order. */
export async function expectWritersInTokenOrder(here: LockService, elsewhere: LockService, key: string): Promise<void> {
  const { overlaps, tokens } = await writersAcrossTwoProcesses(here, elsewhere, key);
  expect(overlaps).toBe(0);
  expect(tokens).toHaveLength(80);
  expect(tokens).toEqual([...tokens].sort((a, b) => a - b));
  expect(new Set(tokens).size).toBe(80);
}

async function readsOnHandOver(
  here: LockService,
  elsewhere: LockService,
  key: string,
  reads: { reset(): void; count(): number },
): Promise<{ local: number; remote: number; holderToken: number; nextToken: number }> {
  const holder = await here.acquire(key);
  const waiting = here.acquire(key, { waitTimeout: 5_000 });
  await sleep(100); // the waiter now waits for the holder's key
  reads.reset();
  await holder.release();
  const next = await waiting;
  const local = reads.count();
  await next.release();

  const remoteHolder = await elsewhere.acquire(key);
  const waitingBehindRemote = here.acquire(key, { waitTimeout: 5_000 });
  await sleep(100);
  reads.reset();
  await remoteHolder.release();
  await (await waitingBehindRemote).release();
  return { local, remote: reads.count(), holderToken: holder.fencingToken as number, nextToken: next.fencingToken as number };
}

/**
 * 8 writers, 2 of them on `elsewhere`, 10 sections each on `key`: how often two were inside at once,
 * and the fencing tokens in the order the sections ran.
 */
async function writersAcrossTwoProcesses(here: LockService, elsewhere: LockService, key: string): Promise<{ overlaps: number; tokens: number[] }> {
  const tokens: number[] = [];
  let inside = 0;
  let overlaps = 0;
  await Promise.all(
    Array.from({ length: 8 }, async (_, worker) => {
      for (let i = 0; i < 10; i += 1) {
        await (worker % 4 === 0 ? elsewhere : here).withLock(
          key,
          async (lock) => {
            inside += 1;
            if (inside > 1) overlaps += 1;
            tokens.push((lock as { fencingToken?: number }).fencingToken as number);
            await sleep(worker % 3);
            inside -= 1;
          },
          { waitTimeout: 30_000 },
        );
      }
    }),
  );
  return { overlaps, tokens };
}
