import { spawn, type ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { join, resolve } from 'node:path';
import {
  DistributedLockError,
  InvalidLockKeyError,
  InvalidLockOptionsError,
  LockAcquireAbortedError,
  LockAcquireTimeoutError,
  LockLostError,
  LockManager,
  LockService,
  PermitsMismatchError,
  type LockStrategy,
  type PermitHandle,
} from '@app/distributed-lock';
import type { PermitGrant } from '@app/distributed-lock/strategy-kit';
import type { ContractSubject } from './contract-subject';
import { abortedWithin, countingProxy } from './contract-helpers';
import { runCrossProcessGauge } from './semaphore-gauge';
import { workerArgs } from '../support/worker-bundles';

const sleep = (ms: number): Promise<void> => new Promise((done) => setTimeout(done, ms));
const ROOT = resolve(__dirname, '..', '..');

/** A process holding one permit of `key` until it is killed (see permit-holder.worker.ts). */
interface PermitHolderProcess {
  readonly child: ChildProcess;
  /** The fencing token it got, if the backend fences. */
  readonly token: number | undefined;
  /** Everything it printed. */
  output(): string;
  /** What a failure should show of it: its stderr's end, and its exit code if it exited. */
  diagnostics(): string;
  kill(): void;
  readonly exited: Promise<unknown>;
}

function startPermitHolder(subject: string, key: string, permits: number, ttlMs: number): Promise<PermitHolderProcess> {
  return new Promise((done, fail) => {
    const child = spawn(process.execPath, [...workerArgs(join(__dirname, 'permit-holder.worker.ts')), subject, key, String(permits), String(ttlMs)], {
      cwd: ROOT,
      env: process.env,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let err = '';
    let out = '';
    let holding = false;
    const exited = new Promise((exit) => child.on('exit', exit));
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      fail(new Error(`permit holder did not hold within 30 s: ${err.slice(-1000)}`));
    }, 30_000);
    child.stderr.on('data', (chunk: Buffer) => (err += chunk.toString()));
    child.stdout.on('data', (chunk: Buffer) => {
      out += chunk.toString();
      const held = /held (\S+)/.exec(out);
      if (!held || holding) return;
      holding = true;
      clearTimeout(timer);
      done({
        child,
        token: held[1] === '-' ? undefined : Number(held[1]),
        output: () => out,
        diagnostics: () => `stdout: ${out.trim()} | stderr: ${err.slice(-4000).trim() || '(none)'} | exit code: ${child.exitCode ?? 'still running'}, signal: ${child.signalCode ?? 'none'}`,
        kill: () => child.kill('SIGKILL'),
        exited,
      });
    });
    child.on('exit', (code) => {
      clearTimeout(timer);
      fail(new Error(`permit holder exited with ${code} before holding: ${err.slice(-1000)}`));
    });
  });
}

/**
 * The semaphore part of the contract, for every strategy whose capabilities declare semaphores: never more
 * than `permits` holders (in one process and across processes, with a shared gauge), weights, leases that
 * give a crashed holder's permit back, lost permits reported, abort and timeout, the size as part of the
 * identity, bad input refused before any server is touched; by capability, FIFO and fencing.
 */
export function describeSemaphoreContract(subject: ContractSubject): void {
  const semaphores = subject.capabilities.semaphores;
  if (!semaphores) throw new Error(`${subject.name} declares no semaphores`);
  const removePermitsBehindBack = subject.removePermitsBehindBack?.bind(subject);
  if (!removePermitsBehindBack) throw new Error(`${subject.name} declares semaphores but gives no removePermitsBehindBack`);

  describe(`semaphore contract: ${subject.name}`, () => {
    let strategy: LockStrategy;
    let manager: LockManager;
    let locks: LockService;
    let contenderStrategy: LockStrategy;
    let contenderManager: LockManager;
    let contender: LockService;
    const run = randomUUID().slice(0, 8);
    let seq = 0;
    const key = (): string => `semaphore:${run}:${(seq += 1)}`;

    beforeAll(async () => {
      strategy = await subject.create();
      manager = new LockManager(strategy);
      locks = new LockService(manager);
      contenderStrategy = await subject.create();
      contenderManager = new LockManager(contenderStrategy);
      contender = new LockService(contenderManager);
    });

    afterAll(async () => {
      await manager?.close();
      await contenderManager?.close();
    }, 30_000);

    it('grants up to `permits` holders at once and keeps the next out until one leaves; release is safe to call twice', async () => {
      const k = key();
      const first = await locks.acquirePermit(k, { permits: 2, ttl: 10_000 });
      const second = await contender.acquirePermit(k, { permits: 2, ttl: 10_000 });
      expect([first.permits, first.weight, first.isHeld]).toEqual([2, 1, true]);
      expect(first.expiresAt).toBeGreaterThan(Date.now());
      expect(await contender.tryAcquirePermit(k, { permits: 2 })).toBeNull();
      expect(await first.release()).toBe(true);
      expect(await first.release()).toBe(false);
      const third = await contender.tryAcquirePermit(k, { permits: 2 });
      expect(third?.isHeld).toBe(true);
      await Promise.all([second.release(), third?.release()]);
    });

    it('never lets more than `permits` holders in (3 permits, two clients, 8 workers, a gauge)', async () => {
      const k = key();
      let inside = 0;
      let peak = 0;
      let violations = 0;
      // The first holders stay until three are in at once (bounded), so that the overlap asserted below does
      // not depend on grants coming faster than 3 ms sections end (on a loaded machine they may not).
      const fullBy = Date.now() + 10_000;
      const untilFull = async (): Promise<void> => {
        while (peak < 3 && Date.now() < fullBy) await sleep(2);
      };
      await Promise.all(
        Array.from({ length: 8 }, async (_, worker) => {
          for (let i = 0; i < 8; i += 1) {
            await (worker % 2 === 0 ? locks : contender).withPermit(
              k,
              async () => {
                inside += 1;
                peak = Math.max(peak, inside);
                if (inside > 3) violations += 1;
                await untilFull();
                await sleep(3);
                inside -= 1;
              },
              { permits: 3, waitTimeout: 60_000 },
            );
          }
        }),
      );
      expect(violations).toBe(0);
      expect(peak).toBe(3);
    }, 60_000);

    it('counts weights: a permit of weight 2 takes two places', async () => {
      const k = key();
      const heavy = await locks.acquirePermit(k, { permits: 3, weight: 2 });
      expect(heavy.weight).toBe(2);
      expect(await contender.tryAcquirePermit(k, { permits: 3, weight: 2 })).toBeNull();
      const light = await contender.tryAcquirePermit(k, { permits: 3 });
      expect(light).not.toBeNull();
      expect(await locks.tryAcquirePermit(k, { permits: 3 })).toBeNull();
      await heavy.release();
      const again = await contender.acquirePermit(k, { permits: 3, weight: 2, waitTimeout: 5_000 });
      await Promise.all([light?.release(), again.release()]);
    });

    it('throws LockAcquireTimeoutError when no place frees up in time', async () => {
      const k = key();
      const holder = await locks.acquirePermit(k, { permits: 1 });
      const error = await contender.acquirePermit(k, { permits: 1, waitTimeout: 200 }).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(LockAcquireTimeoutError);
      expect((error as LockAcquireTimeoutError).waitedMs).toBeGreaterThanOrEqual(150);
      await holder.release();
      // The timed-out waiter leaves the queue in the background: a place handed to it meanwhile comes back.
      const next = await contender.acquirePermit(k, { permits: 1, waitTimeout: 5_000 });
      await next.release();
    });

    it('cancels a waiter through its AbortSignal and frees its place in the queue', async () => {
      const k = key();
      // Two places, both taken; a heavy waiter first (it needs both), a light one behind it.
      const a = await locks.acquirePermit(k, { permits: 2 });
      const b = await locks.acquirePermit(k, { permits: 2 });
      const controller = new AbortController();
      const heavy = contender.acquirePermit(k, { permits: 2, weight: 2, signal: controller.signal, waitTimeout: 20_000 }).catch((e: unknown) => e);
      await sleep(100);
      const light = contender.acquirePermit(k, { permits: 2, waitTimeout: 20_000 });
      await sleep(100);
      controller.abort();
      expect(await heavy).toBeInstanceOf(LockAcquireAbortedError);
      // With the heavy waiter gone, one free place is enough for the light one, FIFO or not.
      await a.release();
      const next = await light;
      expect(next.isHeld).toBe(true);
      await Promise.all([b.release(), next.release()]);
    }, 30_000);

    it('refuses an already aborted signal before touching the server', async () => {
      const controller = new AbortController();
      controller.abort();
      await expect(locks.acquirePermit(key(), { permits: 2, signal: controller.signal })).rejects.toBeInstanceOf(LockAcquireAbortedError);
    });

    it('gives a crashed holder’s permit back when its lease ends', async () => {
      const k = key();
      const semaphore = contenderStrategy.semaphore;
      if (!semaphore) throw new Error('no semaphore');
      // A holder that never releases nor extends: the raw semaphore, with no manager to clean up after it.
      const crashed = await semaphore.tryAcquire({ key: k, owner: `crashed-${run}`, ttlMs: 400, mode: 'shared', permits: 1, weight: 1 });
      expect(crashed).not.toBeNull();
      expect(await locks.tryAcquirePermit(k, { permits: 1 })).toBeNull();
      const next = await locks.acquirePermit(k, { permits: 1, waitTimeout: 15_000 });
      expect(next.isHeld).toBe(true);
      await next.release();
    }, 20_000);

    it('refuses release and extend by an owner that does not hold the permit', async () => {
      const k = key();
      const semaphore = strategy.semaphore;
      const other = contenderStrategy.semaphore;
      if (!semaphore || !other) throw new Error('no semaphore');
      const grant = await semaphore.tryAcquire({ key: k, owner: `owner-a-${run}`, ttlMs: 5_000, mode: 'shared', permits: 1, weight: 1 });
      expect(grant).not.toBeNull();
      const impostor = { ...(grant as PermitGrant), owner: `owner-b-${run}` };
      expect(await other.release(impostor)).toBe(false);
      expect(await other.extend(impostor, 5_000)).toBeNull();
      expect(await contender.tryAcquirePermit(k, { permits: 1 })).toBeNull();
      expect(await semaphore.release(grant as PermitGrant)).toBe(true);
      expect(await semaphore.release(grant as PermitGrant)).toBe(false);
    });

    it('keeps a slow holder’s permit with the watchdog, and extends on demand', async () => {
      const k = key();
      const permit = await locks.acquirePermit(k, { permits: 1, ttl: 1_200, autoExtend: true });
      await sleep(2_000);
      expect(permit.signal.aborted).toBe(false);
      expect(await contender.tryAcquirePermit(k, { permits: 1 })).toBeNull();
      const before = permit.expiresAt;
      await permit.extend(5_000);
      expect(permit.expiresAt).toBeGreaterThan(before);
      await permit.release();
      await expect(permit.extend()).rejects.toThrow(/not held/);
    }, 20_000);

    it('aborts the holder’s signal when an explicit lease runs out unextended, and withPermit throws LockLostError', async () => {
      const permit = await locks.acquirePermit(key(), { permits: 2, ttl: 1_000 });
      const reason = await abortedWithin(permit.signal, 10_000);
      expect(reason).toBeInstanceOf(LockLostError);
      expect((reason as LockLostError).reason).toBe('expired');
      const error = await locks
        .withPermit(key(), async (held) => {
          await abortedWithin(held.signal, 10_000);
          return 'done';
        }, { permits: 2, ttl: 1_000 })
        .catch((e: unknown) => e);
      expect(error).toBeInstanceOf(LockLostError);
      expect((error as LockLostError).sectionResult).toEqual({ value: 'done' });
    }, 30_000);

    it(`reports a permit deleted behind its holder ${subject.pushesRemoval ? 'at once' : 'at its next extension'}: withPermit rejects, and the place is free for the contender`, async () => {
      const k = key();
      // Pushed: a lease far longer than the bound, so only the push can tell in time. Otherwise a lease of 3 s,
      // extended every second: the first extension must find the permit gone (not its expiry at 3 s).
      const ttl = subject.pushesRemoval ? 60_000 : 3_000;
      let told: unknown;
      let token: number | undefined;
      const section = locks.withPermit(
        k,
        async (permit) => {
          token = permit.fencingToken;
          await sleep(100); // past the moment a backend arms its watch on the holder's entry
          await removePermitsBehindBack(k);
          told = await abortedWithin(permit.signal, 2_500).catch((error: unknown) => error);
        },
        { permits: 1, ttl, autoExtend: true },
      );
      await expect(section).rejects.toBeInstanceOf(LockLostError);
      expect(told).toBeInstanceOf(LockLostError);
      expect((told as LockLostError).reason).toBe(subject.pushesRemoval ? 'removed' : 'extension-refused');
      const next = await contender.acquirePermit(k, { permits: 1, waitTimeout: 5_000 });
      if (semaphores.fencing) expect(next.fencingToken).toBeGreaterThan(token as number);
      expect(await next.release()).toBe(true);
    }, 20_000);

    it('withPermit rejects with LockLostError, the section’s own failure as its cause, when a failing section’s permit was deleted behind it', async () => {
      const k = key();
      const error = await locks
        .withPermit(
          k,
          async () => {
            await removePermitsBehindBack(k);
            throw new Error('the write failed');
          },
          // No extension before the release: only the release (or a push) can find the permit gone.
          { permits: 1, ttl: 60_000 },
        )
        .catch((e: unknown) => e);
      expect(error).toBeInstanceOf(LockLostError);
      expect(((error as LockLostError).cause as Error)?.message).toBe('the write failed');
      expect((error as LockLostError).sectionResult).toBeUndefined();
    });

    it('runs withPermit’s function and gives the permit back on success and on failure', async () => {
      const k = key();
      expect(await locks.withPermit(k, (permit: PermitHandle) => permit.permits * 10, { permits: 1 })).toBe(10);
      await expect(locks.withPermit(k, () => Promise.reject(new Error('boom')), { permits: 1 })).rejects.toThrow('boom');
      const after = await contender.tryAcquirePermit(k, { permits: 1 });
      expect(after).not.toBeNull();
      await after?.release();
    });

    it('treats `permits` as part of the semaphore’s identity', async () => {
      const k = key();
      const holder = await locks.acquirePermit(k, { permits: 3 });
      const error = await contender.acquirePermit(k, { permits: 2, waitTimeout: 1_000 }).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(PermitsMismatchError);
      expect((error as PermitsMismatchError).requested).toBe(2);
      expect((error as PermitsMismatchError).actual).toBe(3);
      expect((error as Error).message).toMatch(/3 permits.*asked for 2/);
      await expect(contender.tryAcquirePermit(k, { permits: 4 })).rejects.toBeInstanceOf(PermitsMismatchError);
      await holder.release();
      // Nobody holds or waits any more: the size is forgotten.
      const resized = await contender.acquirePermit(k, { permits: 2, waitTimeout: 5_000 });
      expect(resized.permits).toBe(2);
      await resized.release();
    }, 20_000);

    it('refuses a caller of another size without disturbing the holders or the waiter of the size its first holder fixed', async () => {
      const k = key();
      const holders = await Promise.all([locks, contender, locks].map((side) => side.acquirePermit(k, { permits: 3, ttl: 15_000 })));
      const waiter = contender.acquirePermit(k, { permits: 3, ttl: 15_000, waitTimeout: 10_000 }).catch((e: unknown) => e);
      await sleep(200); // in line behind the three holders
      // A caller that gives the wrong size, again and again, tries and waits: refused each time, truthfully.
      const refusals: unknown[] = [];
      for (let i = 0; i < 10; i += 1) {
        refusals.push(await locks.tryAcquirePermit(k, { permits: 5 }).catch((e: unknown) => e));
        refusals.push(await locks.acquirePermit(k, { permits: 5, waitTimeout: 300 }).catch((e: unknown) => e));
      }
      for (const refusal of refusals) {
        expect(refusal).toBeInstanceOf(PermitsMismatchError);
        expect((refusal as PermitsMismatchError).requested).toBe(5);
        expect((refusal as PermitsMismatchError).actual).toBe(3);
      }
      // Nobody of the right size was thrown out: the holders still hold, and the waiter gets the first place
      // that frees up.
      for (const holder of holders) {
        expect(holder.isHeld).toBe(true);
        expect(holder.signal.aborted).toBe(false);
      }
      await holders[0].release();
      const granted = await waiter;
      expect(granted).not.toBeInstanceOf(Error);
      expect((granted as PermitHandle).permits).toBe(3);
      await Promise.all([...holders.slice(1), granted as PermitHandle].map((permit) => permit.release()));
    }, 30_000);

    it('lets callers of two sizes racing on a fresh key agree: one size is granted, the other refused, nobody waits for nothing', async () => {
      for (let round = 0; round < 3; round += 1) {
        const k = key();
        const sizes = [2, 5, 2, 5, 2, 5];
        const held: number[] = [];
        const outcomes = await Promise.all(
          sizes.map(async (permits, i) => {
            try {
              await (i % 2 === 0 ? locks : contender).withPermit(
                k,
                async (permit: PermitHandle) => {
                  held.push(permit.permits);
                  await sleep(100);
                },
                { permits, ttl: 10_000, waitTimeout: 8_000 },
              );
              return { permits, outcome: 'granted' };
            } catch (error) {
              if (!(error instanceof PermitsMismatchError)) throw error;
              // The size it was refused for is the other one, which others held.
              expect(error.actual).toBe(permits === 2 ? 5 : 2);
              return { permits, outcome: 'refused' };
            }
          }),
        );
        // Somebody got in, and every caller was answered: granted, or refused for the other size.
        expect(held.length).toBeGreaterThan(0);
        expect(outcomes.filter(({ outcome }) => outcome === 'granted')).toHaveLength(held.length);
      }
    }, 60_000);

    it('gives permits back when the lock service closes', async () => {
      const k = key();
      const ownStrategy = await subject.create();
      const own = new LockManager(ownStrategy);
      const permit = await new LockService(own).acquirePermit(k, { permits: 1 });
      await own.close();
      expect(permit.isHeld).toBe(false);
      const next = await contender.acquirePermit(k, { permits: 1, waitTimeout: 5_000 });
      await next.release();
    }, 20_000);

    it('ends a permit wait at close() with a typed error, and its place in the queue keeps nobody waiting', async () => {
      const k = key();
      const holder = await locks.acquirePermit(k, { permits: 1 });
      const closing = new LockManager(await subject.create());
      const waiterSide = new LockService(closing);
      // Its connections and session open first (another key), so that the wait below is in the queue well
      // within the 200 ms before close().
      await (await waiterSide.acquirePermit(`${k}:warm-up`, { permits: 1 })).release();
      const started = Date.now();
      const waiter = waiterSide.acquirePermit(k, { permits: 1, waitTimeout: 10_000 }).catch((e: unknown) => e);
      await sleep(200); // in the queue
      await closing.close();
      const error = await waiter;
      expect(error).toBeInstanceOf(DistributedLockError);
      expect(Date.now() - started).toBeLessThan(200 + 3_000);
      // The closed waiter left the line: the next one is served at the release, not after a dead place's claim.
      const next = contender.acquirePermit(k, { permits: 1, waitTimeout: 1_000 });
      await sleep(100);
      expect(await holder.release()).toBe(true);
      expect(await (await next).release()).toBe(true);
    }, 20_000);

    it('takes a permit from a section still running at close() and tells its holder (LockLostError "closed")', async () => {
      const k = key();
      const closing = new LockManager(await subject.create());
      let closeDone: Promise<unknown> = Promise.resolve();
      const section = new LockService(closing)
        .withPermit(
          k,
          async (permit) => {
            closeDone = closing.close();
            await sleep(300);
            return permit.signal.aborted ? 'told' : 'not told';
          },
          { permits: 1 },
        )
        .catch((e: unknown) => e);
      const error = await section;
      await closeDone;
      expect(error).toBeInstanceOf(LockLostError);
      expect((error as LockLostError).reason).toBe('closed');
      expect((error as LockLostError).sectionResult).toEqual({ value: 'told' });
      const next = await contender.tryAcquirePermit(k, { permits: 1 });
      expect(next).not.toBeNull();
      await next?.release();
    }, 20_000);

    it('rejects bad input with a typed error before any server is touched', async () => {
      const counting = countingProxy(strategy);
      const service = new LockService(new LockManager(counting.strategy));
      const bad: Array<[unknown, unknown]> = [
        ['ok', undefined],
        ['ok', {}],
        ['ok', { permits: 0 }],
        ['ok', { permits: -1 }],
        ['ok', { permits: 1.5 }],
        ['ok', { permits: Number.NaN }],
        ['ok', { permits: Number.POSITIVE_INFINITY }],
        ['ok', { permits: '3' }],
        ['ok', { permits: 2_000_000 }],
        ['ok', { permits: 3, weight: 0 }],
        ['ok', { permits: 3, weight: 1.5 }],
        ['ok', { permits: 3, weight: Number.NaN }],
        ['ok', { permits: 3, weight: 4 }],
        ['ok', { permits: 3, mode: 'exclusive' }],
        ['ok', { permits: 3, reentrant: true }],
        ['ok', { permits: 3, ttl: -1 }],
        ['ok', { permits: 3, waitTimeout: Number.NaN }],
        ['', { permits: 3 }],
        ['line\nbreak', { permits: 3 }],
        [42, { permits: 3 }],
      ];
      for (const [badKey, options] of bad) {
        const error = await service.acquirePermit(badKey as string, options as never).catch((e: unknown) => e);
        expect(error, JSON.stringify([badKey, options])).toBeInstanceOf(InvalidLockOptionsError);
        expect((error as InvalidLockOptionsError).option).toMatch(/^(key|options(\.(permits|weight|mode|reentrant|ttl|waitTimeout))?)$/);
        expect((error as Error).message).toMatch(/must|expected|unknown|needs|pass |use /);
      }
      await expect(service.acquirePermit('', { permits: 1 })).rejects.toBeInstanceOf(InvalidLockKeyError);
      await expect(service.tryAcquirePermit('ok', { permits: 1, waitTimeout: 5 } as never)).rejects.toBeInstanceOf(InvalidLockOptionsError);
      expect(counting.calls()).toBe(0);
    });

    if (semaphores.fencing) {
      it('gives every grant a fencing token that strictly increases, also after a lease expiry', async () => {
        const k = key();
        const tokens: number[] = [];
        for (let i = 0; i < 4; i += 1) {
          const permit = await (i % 2 === 0 ? locks : contender).acquirePermit(k, { permits: 2 });
          tokens.push(permit.fencingToken as number);
          await permit.release();
        }
        // Two holders at once: each grant its own token, in the order of the grants.
        const a = await locks.acquirePermit(k, { permits: 2 });
        const b = await contender.acquirePermit(k, { permits: 2 });
        tokens.push(a.fencingToken as number, b.fencingToken as number);
        await Promise.all([a.release(), b.release()]);
        const semaphore = strategy.semaphore;
        const crashed = await semaphore?.tryAcquire({ key: k, owner: `fence-crash-${run}`, ttlMs: 400, mode: 'shared', permits: 2, weight: 2 });
        tokens.push(crashed?.fencingToken as number);
        const after = await contender.acquirePermit(k, { permits: 2, waitTimeout: 15_000 });
        tokens.push(after.fencingToken as number);
        await after.release();
        for (const token of tokens) expect(Number.isSafeInteger(token)).toBe(true);
        for (let i = 1; i < tokens.length; i += 1) expect(tokens[i]).toBeGreaterThan(tokens[i - 1]);
      }, 30_000);
    }

    /** Waits until the semaphore's server lists `count` waiters of `k` (bounded: the test fails, never hangs). */
    const inLine = async (k: string, count: number): Promise<void> => {
      for (const started = Date.now(); (await locks.queryPermits(k)).pending?.length !== count; await sleep(10)) {
        if (Date.now() - started > 10_000) throw new Error(`the server never listed ${count} waiters of ${k}`);
      }
    };

    if (semaphores.fifo) {
      it('serves waiters in arrival order, a heavy one not overtaken by lighter ones behind it', async () => {
        const k = key();
        const holders = [await locks.acquirePermit(k, { permits: 2 }), await locks.acquirePermit(k, { permits: 2 })];
        const order: number[] = [];
        const tokens: number[] = [];
        const waiters: Promise<void>[] = [];
        // Each grant comes alone: the light waiter 4 must not overtake the heavy 3, though a place is free.
        const weights = [1, 2, 1, 2, 1];
        for (let i = 0; i < weights.length; i += 1) {
          waiters.push(
            (i % 2 === 0 ? contender : locks).withPermit(
              k,
              async (permit) => {
                order.push(i);
                tokens.push(permit.fencingToken ?? 0);
                await sleep(20);
              },
              { permits: 2, weight: weights[i], waitTimeout: 30_000 },
            ),
          );
          // Each in line before the next asks: where the semaphore answers queryPermits, as its server lists
          // the line (a create on a loaded 3-node ensemble took longer than any fixed pause: the next asked
          // first); elsewhere a pause.
          if (subject.answersPermitQuery) await inLine(k, i + 1);
          else await sleep(150);
        }
        for (const holder of holders) await holder.release();
        await Promise.all(waiters);
        expect(order).toEqual([0, 1, 2, 3, 4]);
        if (semaphores.fencing) for (let i = 1; i < tokens.length; i += 1) expect(tokens[i]).toBeGreaterThan(tokens[i - 1]);
      }, 40_000);
    }

    if (subject.capabilities.crossProcess) {
      it('never lets more than `permits` holders in across processes (3 processes × 2 workers, a shared gauge)', async () => {
        const outcome = await runCrossProcessGauge(subject.name, `semaphore:${run}:xproc`, { processes: 3, workers: 2, iterations: 8, permits: 2, holdMs: 15 });
        expect(outcome.violations).toBe(0);
        expect(outcome.sections).toBe(3 * 2 * 8);
        expect(outcome.peak).toBe(2);
      }, 90_000);

      it('lets the next holder in past a frozen (SIGSTOP) holder’s lease, and tells the woken holder it lost its permit', async () => {
        const k = key();
        const holder = await startPermitHolder(subject.name, k, 1, 1_000);
        try {
          process.kill(holder.child.pid as number, 'SIGSTOP');
          // The lease (1 s, or the backend's session or lease for ZooKeeper and etcd) lets the next one in.
          const next = await locks.acquirePermit(k, { permits: 1, waitTimeout: 20_000 });
          if (semaphores.fencing) expect(next.fencingToken).toBeGreaterThan(holder.token as number);
          process.kill(holder.child.pid as number, 'SIGCONT');
          for (let waited = 0; !/lost \S+/.test(holder.output()); waited += 50) {
            if (waited > 5_000) throw new Error(`the woken holder was not told within 5 s: ${holder.diagnostics()}`);
            await sleep(50);
          }
          // A renewal in flight when it froze fails once it wakes: 'backend-unreachable' tells it too.
          expect(holder.output()).toMatch(/lost (expired|extension-refused|removed|session-ended|backend-unreachable)/);
          expect(await next.release()).toBe(true);
        } finally {
          holder.kill();
          await holder.exited;
        }
      }, 60_000);

      it('gives a SIGKILLed holder’s permit back at its lease end', async () => {
        const k = key();
        const holder = await startPermitHolder(subject.name, k, 1, 1_000);
        expect(await locks.tryAcquirePermit(k, { permits: 1 })).toBeNull();
        const started = Date.now();
        holder.kill();
        await holder.exited;
        const next = await locks.acquirePermit(k, { permits: 1, waitTimeout: 30_000 });
        expect(next.isHeld).toBe(true);
        // The lease (1 s, or the backend's session or lease for ZooKeeper and etcd), not the wait timeout.
        expect(Date.now() - started).toBeLessThan(15_000);
        await next.release();
      }, 60_000);
    }
  });
}

/** For a strategy without semaphores: permits are refused with a typed error before any server is touched. */
export function describeNoSemaphores(subject: ContractSubject): void {
  describe(`semaphore contract: ${subject.name} (no semaphores)`, () => {
    it('refuses permits with InvalidLockOptionsError before touching the server', async () => {
      const strategy = await subject.create();
      const counting = countingProxy(strategy);
      const manager = new LockManager(counting.strategy);
      try {
        const error = await new LockService(manager).acquirePermit('semaphore:none', { permits: 2 }).catch((e: unknown) => e);
        expect(error).toBeInstanceOf(InvalidLockOptionsError);
        expect((error as InvalidLockOptionsError).option).toBe('permits');
        expect((error as Error).message).toMatch(/has no semaphores/);
        expect(counting.calls()).toBe(0);
      } finally {
        await manager.close();
      }
    });
  });
}
