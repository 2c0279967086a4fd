import { Etcd3, type IOptions } from 'etcd3';
import { randomUUID } from 'node:crypto';
import { LockBackendUnavailableError, LockManager, LockPermissionDeniedError, LockService } from '@app/distributed-lock';
import { EtcdLockStrategy, type EtcdLeaseGrant } from '@app/distributed-lock/strategies/etcd';
import { etcdLockPrefix, etcdSemaphorePrefix } from '@app/distributed-lock/strategies/etcd/etcd-keys';
import { startTopology, stopTopology, type RunningTopology } from '../../scripts/services';
import { ETCD_SECURE, etcdSecureCredentials } from '../../scripts/services/etcd-secure';
import { describeLockStrategyContract } from '../contract/lock-strategy.contract';
import type { ContractSubject } from '../contract/contract-subject';
import { describeSemaphoreContract } from '../contract/semaphore.contract';
import { captureOutput, errorTexts, leaksOf, recordEvents } from '../support/secret-scan';

// An etcd with TLS, client certificates and auth on (the etcd-secure topology): the library connects as
// "locksvc", whose role covers the lock prefix "dlock/" and nothing else.
const run = randomUUID().slice(0, 8);
const hosts = (): string => process.env.LOCK_TEST_ETCD_SECURE as string;
type User = { readonly name: string; readonly password: string };
const connection = (user: User, credentials: IOptions['credentials'] = etcdSecureCredentials()): IOptions => ({
  hosts: hosts(),
  credentials,
  auth: { username: user.name, password: user.password },
});
const { locks: lockUser, stranger: strangerUser, readOnly: readOnlyUser } = ETCD_SECURE.users;

/** The error a promise rejects with (fails the test if it resolves). */
async function rejection(promise: Promise<unknown>): Promise<unknown> {
  return promise.then(
    () => expect.fail('expected a rejection'),
    (error: unknown) => error,
  );
}

let topology: RunningTopology | undefined;
beforeAll(async () => {
  topology = await startTopology('etcd-secure');
}, 60_000);
afterAll(async () => {
  if (topology?.managed) await stopTopology(topology.name);
}, 30_000);

/** Deletes every key under `prefix` as an operator of the lock prefix: the library's own role. */
async function deletePrefixAsOperator(prefix: string): Promise<void> {
  const operator = new Etcd3(connection(lockUser));
  try {
    await operator.delete().prefix(prefix).exec();
  } finally {
    operator.close();
  }
}

// The contract suite, locks and semaphores (permits live under the lock prefix too), through TLS and the
// narrow role: all of it but the cross-process parts, which start workers by subject name (their protocol
// is the same over any transport).
const secureSubject: ContractSubject = {
  name: 'etcd (TLS, client certificates, RBAC user limited to the lock prefix)',
  pushesRemoval: true,
  capabilities: { fencing: true, fifo: true, sharedLocks: true, crossProcess: false, semaphores: { fifo: true, fencing: true } },
  create: async () => new EtcdLockStrategy({ connection: connection(lockUser), name: 'etcd-secure' }),
  removeBehindBack: (_strategy, key) => deletePrefixAsOperator(etcdLockPrefix(ETCD_SECURE.prefix, key)),
  removePermitsBehindBack: (key) => deletePrefixAsOperator(etcdSemaphorePrefix(ETCD_SECURE.prefix, key)),
};
describeLockStrategyContract(secureSubject);
describeSemaphoreContract(secureSubject);

describe('etcd strategy under RBAC: strangers and missing permissions', () => {
  const managers: LockManager[] = [];
  const clients: Etcd3[] = [];
  const managerAs = (user: User, credentials?: IOptions['credentials'], operationTimeout?: number): LockManager => {
    const manager = new LockManager(new EtcdLockStrategy({ connection: connection(user, credentials), name: 'etcd-secure' }), { operationTimeout });
    managers.push(manager);
    return manager;
  };

  afterAll(async () => {
    await Promise.all(managers.map((manager) => manager.close()));
    for (const client of clients) client.close();
  });

  it('keeps another user from deleting a held lock’s key, its prefix, or revoking its lease', async () => {
    const lock = await new LockService(managerAs(lockUser)).acquire(`held:${run}`);
    const grant = lock.grant as EtcdLeaseGrant;
    const stranger = new Etcd3(connection(strangerUser));
    clients.push(stranger);
    const refusals = [
      await rejection(stranger.delete().key(grant.etcdKey).exec()),
      await rejection(stranger.delete().prefix(ETCD_SECURE.prefix).exec()),
      await rejection(stranger.put(grant.etcdKey).value('mine').exec()),
      // Revoking a lease deletes its keys: etcd asks for write permission on each of them.
      await rejection(stranger.leaseClient.leaseRevoke({ ID: grant.leaseId })),
    ];
    for (const refusal of refusals) expect(String(refusal)).toMatch(/permission denied/);
    expect(lock.isHeld).toBe(true);
    expect(lock.signal.aborted).toBe(false);
    expect(await lock.release()).toBe(true);
  });

  it('names the grant when the role lacks write on the lock prefix', async () => {
    const error = await rejection(new LockService(managerAs(readOnlyUser)).acquire(`read-only:${run}`, { waitTimeout: 60_000 }));
    expect(error).toBeInstanceOf(LockPermissionDeniedError);
    const denied = error as LockPermissionDeniedError;
    expect(denied.key).toBe(`read-only:${run}`);
    expect(denied.grant).toContain(`etcdctl role grant-permission <role> --prefix=true readwrite ${ETCD_SECURE.prefix}`);
    expect(denied.grant).toContain(`etcdctl user grant-role ${readOnlyUser.name} <role>`);
  });

  it('names the grant when the role lacks write on the lock prefix, for a permit too', async () => {
    const error = await rejection(new LockService(managerAs(readOnlyUser)).acquirePermit(`read-only-permit:${run}`, { permits: 2, waitTimeout: 60_000 }));
    expect(error).toBeInstanceOf(LockPermissionDeniedError);
    const denied = error as LockPermissionDeniedError;
    expect(denied.key).toBe(`read-only-permit:${run}`);
    expect(denied.grant).toContain(`etcdctl role grant-permission <role> --prefix=true readwrite ${ETCD_SECURE.prefix}`);
  });

  it('refuses a wrong password with a typed error, and never prints it', async () => {
    const password = `wrong-${randomUUID()}`;
    const manager = managerAs({ name: lockUser.name, password });
    const events = recordEvents(manager.events);
    const { result: errors, printed } = await captureOutput(async () => [
      await rejection(new LockService(manager).acquire(`wrong:${run}`, { waitTimeout: 60_000 })),
      await rejection(new LockService(manager).tryAcquire(`wrong:${run}`)),
    ]);
    for (const error of errors) {
      expect(error).toBeInstanceOf(LockPermissionDeniedError);
      expect((error as LockPermissionDeniedError).grant).toContain(`credentials of user "${lockUser.name}"`);
    }
    expect(leaksOf(password, [...errors.flatMap(errorTexts), ...events, ...printed])).toEqual([]);
  });

  it('authenticates by the client certificate alone: its CN names the user', async () => {
    const manager = new LockManager(new EtcdLockStrategy({ connection: { hosts: hosts(), credentials: etcdSecureCredentials() }, name: 'etcd-secure' }));
    managers.push(manager);
    const lock = await new LockService(manager).acquire(`cn:${run}`);
    expect(await lock.release()).toBe(true);
  });

  it('cannot connect without a client certificate: unavailable within the operation bound, not a hang', async () => {
    const manager = managerAs(lockUser, { rootCertificate: etcdSecureCredentials().rootCertificate }, 1_000);
    const error = await rejection(new LockService(manager).tryAcquire(`no-cert:${run}`));
    expect(error).toBeInstanceOf(LockBackendUnavailableError);
    expect(leaksOf(lockUser.password, errorTexts(error))).toEqual([]);
  });
});
