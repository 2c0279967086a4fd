import { spawn, type ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { LockBackendUnavailableError, LockManager, LockService, type LockHandle } from '@app/distributed-lock';
import { MemcachedLockStrategy } from '@app/distributed-lock/strategies/memcached';
import { memcachedLockKey } from '@app/distributed-lock/strategies/memcached/memcached-keys';
import { MemcacheClient, type MemcacheClientOptions } from 'memcache-client';
import { waitUntil } from '../../scripts/services/probes';
import { memcachedArgs } from '../../scripts/services/server-kinds';
import { makeTlsFiles } from '../../scripts/services/tls-certificates';
import { closedPort } from '../support/silent-server';
import { ensureSecurePackages } from '../support/secure-servers';

const run = randomUUID().slice(0, 8);
const OPERATION_TIMEOUT = 1_000;
// A refused handshake must end within the operation timeout; the rest is slack for a loaded machine.
const BOUND = OPERATION_TIMEOUT + 4_000;

/**
 * docs/security.md says the memcached strategy speaks TLS through memcache-client's `tls` option. A
 * memcached of this file's own (Debian's, built with TLS: `-Z`), serving TLS only with a throwaway CA's
 * certificate for 127.0.0.1: the strategy locks through it with that CA, and a client without TLS, or
 * trusting another CA, gets the typed error of a failed server within the operation timeout.
 */
describe('memcached strategy through TLS', () => {
  let dir: string;
  let server: ChildProcess;
  let address: string;
  let ca: Buffer;
  let otherCa: Buffer;
  let raw: MemcacheClient;
  const managers: LockManager[] = [];

  const tlsConnection = (trusted: Buffer): MemcacheClientOptions => ({ server: address, tls: { ca: trusted } });

  function locksOver(connection: string | MemcacheClientOptions): LockService {
    const manager = new LockManager(new MemcachedLockStrategy({ connection }), { operationTimeout: OPERATION_TIMEOUT });
    managers.push(manager);
    return new LockService(manager);
  }

  /** The owner id memcached holds under a lock's key, read through TLS by a client of its own. */
  async function ownerOnServer(key: string): Promise<unknown> {
    const item: { value: unknown } | undefined = await raw.gets<unknown>(memcachedLockKey('dlock:', key));
    return item?.value;
  }

  async function expectRefusedWithinBound(locks: LockService, cause: RegExp): Promise<void> {
    const started = Date.now();
    const error: unknown = await locks.acquire(`tls:${run}:refused`, { waitTimeout: 500 }).then(
      () => new Error('acquired without a working TLS connection'),
      (failure: unknown) => failure,
    );
    expect(Date.now() - started).toBeLessThan(BOUND);
    expect(error).toBeInstanceOf(LockBackendUnavailableError);
    expect((error as LockBackendUnavailableError).message).toMatch(/could not .*Check that the server is up/);
    expect(String(((error as LockBackendUnavailableError).cause as Error | undefined)?.message)).toMatch(cause);
  }

  beforeAll(async () => {
    // openssl makes the certificates: on a bare machine it comes with the other TLS topologies' packages.
    ensureSecurePackages();
    dir = mkdtempSync(join(tmpdir(), 'memcached-tls-'));
    const files = makeTlsFiles(join(dir, 'server'));
    ca = readFileSync(files.ca);
    // A second throwaway CA, which did not sign the server's certificate.
    otherCa = readFileSync(makeTlsFiles(join(dir, 'other')).ca);
    const port = await closedPort();
    address = `127.0.0.1:${port}`;
    server = spawn('memcached', [...memcachedArgs(port), '-Z', '-o', `ssl_chain_cert=${files.cert},ssl_key=${files.key}`], { stdio: 'ignore' });
    raw = new MemcacheClient({ ...tlsConnection(ca), cmdTimeout: 1_000, connectTimeout: 1_000 });
    // Ready once a TLS `version` answers (a plain-text probe would be reset by the TLS listener).
    await waitUntil(`memcached with TLS on ${address}`, () => raw.version().then(() => true, () => false), 10_000, 100);
  }, 20_000);

  afterAll(async () => {
    for (const manager of managers) await manager.close().catch(() => undefined);
    raw?.shutdown();
    server?.kill('SIGKILL');
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it('acquires, extends, hands over to a waiter of another strategy instance, and releases, all through TLS', async () => {
    const holder = locksOver(tlsConnection(ca));
    const waiter = locksOver(tlsConnection(ca));
    const key = `tls:${run}:cycle`;

    const first = await holder.acquire(key, { ttl: 5_000 });
    expect(await ownerOnServer(key)).toBe(first.owner);
    await first.extend(10_000);
    expect(first.isHeld).toBe(true);

    let waiterHolds = false;
    const waiting = waiter.acquire(key, { ttl: 5_000, waitTimeout: 10_000 }).then((lock) => {
      waiterHolds = true;
      return lock;
    });
    // The waiter polls through its own TLS connection for a while; the first holder keeps the lock meanwhile.
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(waiterHolds).toBe(false);
    expect(await ownerOnServer(key)).toBe(first.owner);
    await first.release();
    const second: LockHandle = await waiting;
    expect(second.owner).not.toBe(first.owner);
    expect(await ownerOnServer(key)).toBe(second.owner);

    await second.release();
    expect(await ownerOnServer(key)).toBeUndefined();
  }, 20_000);

  it('a client without TLS options cannot use it: LockBackendUnavailableError within the operation timeout', async () => {
    // memcached reads the plain-text command as a broken TLS handshake and resets the connection.
    await expectRefusedWithinBound(locksOver(address), /ECONNRESET/);
  }, 20_000);

  it('a client that does not trust the server’s CA cannot use it: LockBackendUnavailableError within the operation timeout', async () => {
    await expectRefusedWithinBound(locksOver(tlsConnection(otherCa)), /unable to verify the first certificate/);
  }, 20_000);
});
