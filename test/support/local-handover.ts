import type { LockHandle, LockService } from '@app/distributed-lock';

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * The looks at the server (reads, watches) a waiter makes, counted by the test's own probe from its
 * start: only those it makes on entering (`onEntering`) behind a writer of `here` (it waits for that
 * holder in the process, which tells it directly; its token is higher), at least one more behind a
 * holder of `elsewhere` (another process: the waiter must watch and look).
 */
export async function expectLocalHandOverWithoutLooks(
  here: LockService,
  elsewhere: LockService,
  key: string,
  reads: { reset(): void; count(): number; onEntering: number },
): Promise<void> {
  const figures = await looksOnHandOver(here, elsewhere, key, reads);
  expect(figures.local).toBe(reads.onEntering);
  expect(figures.nextToken).toBeGreaterThan(figures.holderToken);
  expect(figures.remote).toBeGreaterThan(reads.onEntering);
}

/**
 * A writer of `here` waiting behind another of `here` that gives up is not served by that: it waits on
 * for the holder ahead of both, then gets the lock with a higher token.
 */
export async function expectWaiterBehindAQuitterToWaitForTheHolder(here: LockService, key: string): Promise<void> {
  const holder = await here.acquire(key);
  const quitter = here.acquire(key, { waitTimeout: 300 }).then(
    () => 'acquired',
    () => 'gave up',
  );
  await sleep(50);
  let patientHolds = false;
  const patient = here.acquire(key, { waitTimeout: 10_000 }).then((lock) => {
    patientHolds = true;
    return lock;
  });
  expect(await quitter).toBe('gave up');
  await sleep(200);
  expect(patientHolds).toBe(false); // the holder has not released yet
  await holder.release();
  const next = await patient;
  expect(next.fencingToken).toBeGreaterThan(holder.fencingToken as number);
  await next.release();
}

/**
 * A writer of `here` waiting behind a holder of `here` whose server-side entry `vanish` removes (an
 * operator, a lost lease) gets the lock within its 5 s wait, although the holder's lease (60 s) would
 * only be checked again 20 s in: the waiter asks the server again on its own.
 */
export async function expectWaiterServedWhenHolderEntryVanishes(here: LockService, key: string, vanish: (holder: LockHandle) => Promise<void>): Promise<void> {
  const holder = await here.acquire(key, { ttl: 60_000 });
  const waiting = here.acquire(key, { waitTimeout: 5_000, ttl: 60_000 });
  await sleep(100);
  await vanish(holder);
  const next = await waiting;
  expect(next.fencingToken).toBeGreaterThan(holder.fencingToken as number);
  await next.release();
  await holder.release().catch(() => false);
}

/** 8 writers over `here` and `elsewhere`: never two inside at once, fencing tokens distinct and in order. */
export async function expectWritersInTokenOrder(here: LockService, elsewhere: LockService, key: string): Promise<void> {
  const { overlaps, tokens } = await writersAcrossTwoProcesses(here, elsewhere, key);
  expect(overlaps).toBe(0);
  expect(tokens).toHaveLength(80);
  expect(tokens).toEqual([...tokens].sort((a, b) => a - b));
  expect(new Set(tokens).size).toBe(80);
}

async function looksOnHandOver(
  here: LockService,
  elsewhere: LockService,
  key: string,
  reads: { reset(): void; count(): number },
): Promise<{ local: number; remote: number; holderToken: number; nextToken: number }> {
  const holder = await here.acquire(key);
  // Past the 50 ms after which a holder watches its own key or node: that look is the holder's, not the waiter's.
  await sleep(100);
  reads.reset();
  const waiting = here.acquire(key, { waitTimeout: 5_000 });
  await sleep(100); // the waiter now waits for the holder's key
  await holder.release();
  const next = await waiting;
  const local = reads.count();
  await next.release();

  const remoteHolder = await elsewhere.acquire(key);
  await sleep(100);
  reads.reset();
  const waitingBehindRemote = here.acquire(key, { waitTimeout: 5_000 });
  await sleep(100);
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
