import { createHash, randomUUID } from 'node:crypto';
import { createRequire } from 'node:module';
import { LockManager, LockPermissionDeniedError, LockService, type LockHandle } from '@app/distributed-lock';
import { ZooKeeperLockStrategy, type ZooKeeperLeaseGrant } from '@app/distributed-lock/strategies/zookeeper';
import type { NzkClient } from '@app/distributed-lock/strategies/zookeeper/node-zookeeper-client.type';
import { zkErrorCode, ZK_ERRORS, type ZooKeeperLockClient } from '@app/distributed-lock/strategies/zookeeper/zookeeper-client.type';
import { zkLockPath, zkSemaphorePath } from '@app/distributed-lock/strategies/zookeeper/zookeeper-paths';
import { ZooKeeperSession } from '@app/distributed-lock/strategies/zookeeper/zookeeper-session';
import { describeLockStrategyContract } from '../contract/lock-strategy.contract';
import type { ContractSubject } from '../contract/contract-subject';
import { describeSemaphoreContract } from '../contract/semaphore.contract';
import { captureOutput, errorTexts, leaksOf, recordEvents } from '../support/secret-scan';

// Digest authentication needs nothing of the server: the shared standalone ZooKeeper serves, under a base
// node of this run's own. The passwords are throwaway values, unique to the run, so that a scan for them
// can only find what this run leaked.
const run = randomUUID().slice(0, 8);
const BASE = `/dlock-acl-${run}`;
const OWNER_PASSWORD = `owner-pw-${randomUUID()}`;
const WRONG_PASSWORD = `wrong-pw-${randomUUID()}`;
const connect = (): string => process.env.LOCK_TEST_ZOOKEEPER as string;
/** A base node an operator made beforehand, with the recipe's ACL. */
const PRE_CREATED = `/dlock-acl-pre-${run}`;
/** The recipe's digest id: user:base64(sha1("user:password")). */
const digestId = (user: string, password: string): string => `${user}:${createHash('sha1').update(`${user}:${password}`).digest('base64')}`;

/** The base of the contract suite's locks. */
const CONTRACT_BASE = `/dlock-acl-contract-${run}`;

/** Deletes every child of `path` as an operator with the identity would: nobody else may (see below). */
async function deleteChildrenAsOperator(path: string): Promise<void> {
  const operator = new ZooKeeperSession({ connect: connect(), digestAuth: `locksvc:${OWNER_PASSWORD}` }, 'operator', 10_000);
  try {
    const client = await operator.client();
    for (const child of await client.get_children(path, false)) await client.delete_(`${path}/${child}`, -1);
  } finally {
    await operator.close();
  }
}

// The contract suite, locks and semaphores, with digest auth and the creator-only ACL: all of it but the
// cross-process parts, which start workers by subject name. Removing an entry behind its holder's back
// takes the identity too.
const digestSubject: ContractSubject = {
  name: 'zookeeper (digest auth, creator-only ACL)',
  pushesRemoval: true,
  capabilities: { fencing: true, fifo: true, sharedLocks: true, crossProcess: false, semaphores: { fifo: true, fencing: true } },
  create: async () => new ZooKeeperLockStrategy({ connect: connect(), basePath: CONTRACT_BASE, digestAuth: `locksvc:${OWNER_PASSWORD}`, sessionTimeout: 4_000 }),
  removeBehindBack: (_strategy, key) => deleteChildrenAsOperator(zkLockPath(CONTRACT_BASE, key)),
  removePermitsBehindBack: (key) => deleteChildrenAsOperator(zkSemaphorePath(CONTRACT_BASE, key)),
};
describeLockStrategyContract(digestSubject);
describeSemaphoreContract(digestSubject);

/** The error a promise rejects with (fails the test if it resolves). */
async function rejection(promise: Promise<unknown>): Promise<unknown> {
  return promise.then(
    () => expect.fail('expected a rejection'),
    (error: unknown) => error,
  );
}

describe('ZooKeeper strategy with digest authentication: lock nodes only its identity can touch', () => {
  let owner: LockManager;
  const sessions: ZooKeeperSession[] = [];
  /** A raw client of another ZooKeeper user of the same ensemble: unauthenticated, or with a digest of its own. */
  const stranger = async (digestAuth?: string): Promise<ZooKeeperLockClient> => {
    const session = new ZooKeeperSession({ connect: connect(), digestAuth }, 'stranger', 10_000);
    sessions.push(session);
    return session.client();
  };

  beforeAll(() => {
    owner = new LockManager(new ZooKeeperLockStrategy({ connect: connect(), basePath: BASE, digestAuth: `locksvc:${OWNER_PASSWORD}`, sessionTimeout: 4_000 }));
  });

  afterAll(async () => {
    await owner.close();
    // Leave the shared server as found, as far as it lets us: the bases go once their lock nodes are gone.
    const cleaner = await stranger(`locksvc:${OWNER_PASSWORD}`);
    for (const base of [BASE, PRE_CREATED, CONTRACT_BASE]) {
      const children = await cleaner.get_children(base, false).catch(() => [] as string[]);
      await Promise.all(children.map((child) => cleaner.delete_(`${base}/${child}`, -1).catch(() => undefined)));
      await cleaner.delete_(base, -1).catch(() => undefined);
    }
    await Promise.all(sessions.map((session) => session.close()));
  });

  it('lets neither an unauthenticated client nor another identity delete a held lock’s node, add a contender or change the ACL', async () => {
    const lock: LockHandle = await new LockService(owner).acquire(`held:${run}`);
    const znode = (lock.grant as ZooKeeperLeaseGrant).znode;
    const lockNode = znode.slice(0, znode.lastIndexOf('/'));
    for (const client of [await stranger(), await stranger(`mallory:${randomUUID()}`)]) {
      expect(zkErrorCode(await rejection(client.delete_(znode, -1)))).toBe(ZK_ERRORS.NO_AUTH);
      // A contender of its own, named to sort ahead of ours: would block every holder.
      expect(zkErrorCode(await rejection(client.create(`${lockNode}/_c_x-write-0000000000`, '', 0)))).toBe(ZK_ERRORS.NO_AUTH);
      expect(zkErrorCode(await rejection(client.delete_(lockNode, -1)))).toBe(ZK_ERRORS.NO_AUTH);
      expect(zkErrorCode(await rejection(client.set_acl(lockNode, -1, [{ perms: 31, scheme: 'world', auth: 'anyone' }] as never)))).toBe(ZK_ERRORS.NO_AUTH);
      expect(zkErrorCode(await rejection(client.set_acl(BASE, -1, [{ perms: 31, scheme: 'world', auth: 'anyone' }] as never)))).toBe(ZK_ERRORS.NO_AUTH);
    }
    expect(lock.isHeld).toBe(true);
    expect(lock.signal.aborted).toBe(false);
    expect(await lock.release()).toBe(true);
  });

  it('lets neither an unauthenticated client nor another identity delete a held permit’s node, add a waiter or change the semaphore’s ACL', async () => {
    const key = `permit-held:${run}`;
    const permit = await new LockService(owner).acquirePermit(key, { permits: 1 });
    const semaphoreNode = zkSemaphorePath(BASE, key);
    const reader = await stranger(`locksvc:${OWNER_PASSWORD}`);
    const [permitNode] = (await reader.get_children(semaphoreNode, false)).map((name) => `${semaphoreNode}/${name}`);
    for (const client of [await stranger(), await stranger(`mallory:${randomUUID()}`)]) {
      expect(zkErrorCode(await rejection(client.delete_(permitNode, -1)))).toBe(ZK_ERRORS.NO_AUTH);
      // A waiter of its own of weight 1, named to sort ahead of ours.
      expect(zkErrorCode(await rejection(client.create(`${semaphoreNode}/_p_x-p1-w1-0000000000`, '', 0)))).toBe(ZK_ERRORS.NO_AUTH);
      expect(zkErrorCode(await rejection(client.delete_(semaphoreNode, -1)))).toBe(ZK_ERRORS.NO_AUTH);
      expect(zkErrorCode(await rejection(client.set_acl(semaphoreNode, -1, [{ perms: 31, scheme: 'world', auth: 'anyone' }] as never)))).toBe(ZK_ERRORS.NO_AUTH);
    }
    expect(permit.isHeld).toBe(true);
    expect(await permit.release()).toBe(true);
  });

  it('refuses a permit to a client without the identity with a typed error naming the grant', async () => {
    const key = `permit-refused:${run}`;
    const held = await new LockService(owner).acquirePermit(key, { permits: 2 });
    const unauthenticated = new LockManager(new ZooKeeperLockStrategy({ connect: connect(), basePath: BASE }));
    try {
      const error = await rejection(new LockService(unauthenticated).acquirePermit(key, { permits: 2, waitTimeout: 60_000 }));
      expect(error).toBeInstanceOf(LockPermissionDeniedError);
      expect((error as LockPermissionDeniedError).grant).toContain('digestAuth');
    } finally {
      await unauthenticated.close();
      expect(await held.release()).toBe(true);
    }
  });

  it('gives the nodes it creates an ACL naming only its digest identity (digest:user:base64(sha1(user:password)):cdrwa)', async () => {
    const lock = await new LockService(owner).acquire(`acl:${run}`);
    const znode = (lock.grant as ZooKeeperLeaseGrant).znode;
    for (const path of [BASE, znode.slice(0, znode.lastIndexOf('/'))]) {
      const acl = await aclOf(path, `locksvc:${OWNER_PASSWORD}`);
      // The id the recipe's `openssl dgst -binary -sha1 | openssl base64` line computes.
      expect(acl).toEqual([{ perms: 31, scheme: 'digest', auth: digestId('locksvc', OWNER_PASSWORD) }]);
    }
    await lock.release();
  });

  it('locks under a base node made beforehand with the recipe’s ACL (setAcl digest:locksvc:<hash>:cdrwa), which strangers cannot write under', async () => {
    // The operator is not locksvc: the ACL names locksvc by its hash alone.
    const operator = await stranger();
    await operator.create(PRE_CREATED, '', 0);
    await operator.set_acl(PRE_CREATED, -1, [{ perms: 31, scheme: 'digest', auth: digestId('locksvc', OWNER_PASSWORD) }] as never);
    const locks = new LockManager(new ZooKeeperLockStrategy({ connect: connect(), basePath: PRE_CREATED, digestAuth: `locksvc:${OWNER_PASSWORD}` }));
    try {
      const lock = await new LockService(locks).acquire(`pre:${run}`);
      for (const client of [operator, await stranger(`mallory:${randomUUID()}`)]) {
        expect(zkErrorCode(await rejection(client.create(`${PRE_CREATED}/squatter`, '', 0)))).toBe(ZK_ERRORS.NO_AUTH);
        expect(zkErrorCode(await rejection(client.delete_((lock.grant as ZooKeeperLeaseGrant).znode, -1)))).toBe(ZK_ERRORS.NO_AUTH);
      }
      expect(await lock.release()).toBe(true);
    } finally {
      await locks.close();
    }
  });

  it('refuses a client with the wrong digest with a typed error naming the grant, and never prints the password', async () => {
    // The lock node exists (held by the owner) and one that does not: both paths are refused.
    const held = await new LockService(owner).acquire(`wrong:${run}`);
    const wrong = new LockManager(new ZooKeeperLockStrategy({ connect: connect(), basePath: BASE, digestAuth: `locksvc:${WRONG_PASSWORD}` }));
    const unauthenticated = new LockManager(new ZooKeeperLockStrategy({ connect: connect(), basePath: BASE }));
    const events = [...recordEvents(wrong.events), ...recordEvents(unauthenticated.events)];
    try {
      const { result: errors, printed } = await captureOutput(async () => [
        // A long wait: a refusal must end it at once, typed, not run it out (LockAcquireTimeoutError).
        await rejection(new LockService(wrong).acquire(`wrong:${run}`, { waitTimeout: 60_000 })),
        await rejection(new LockService(wrong).acquire(`wrong-free:${run}`, { waitTimeout: 60_000 })),
        await rejection(new LockService(wrong).tryAcquire(`wrong-free:${run}`)),
        await rejection(new LockService(unauthenticated).acquire(`wrong:${run}`, { waitTimeout: 60_000 })),
      ]);
      for (const error of errors) expect(error).toBeInstanceOf(LockPermissionDeniedError);
      const denied = errors[0] as LockPermissionDeniedError;
      expect(denied.grant).toContain(`"locksvc" needs cdrwa on ${BASE}`);
      expect(denied.key).toBe(`wrong:${run}`);
      expect((errors[3] as LockPermissionDeniedError).grant).toContain('set `digestAuth`');
      const texts = [...errors.flatMap(errorTexts), ...events, ...printed];
      expect(leaksOf(WRONG_PASSWORD, texts)).toEqual([]);
      expect(leaksOf(OWNER_PASSWORD, texts)).toEqual([]);
    } finally {
      await Promise.all([wrong.close(), unauthenticated.close()]);
      await held.release();
    }
    // The owner is not disturbed: the lock is free again for it.
    await (await new LockService(owner).acquire(`wrong:${run}`)).release();
  });
});

/** A node's ACL, read by a client of the `node-zookeeper-client` package (the strategy reads no ACL itself). */
async function aclOf(path: string, digestAuth: string): Promise<Array<{ perms: number; scheme: string; auth: string }>> {
  interface Acl {
    readonly permission: number;
    readonly id: { readonly scheme: string; readonly id: string };
  }
  const zk = createRequire(__filename)('node-zookeeper-client') as {
    createClient(connect: string): NzkClient & { getACL(path: string, callback: (error: unknown, acls: Acl[]) => void): void; once(event: 'connected', listener: () => void): void };
  };
  const client = zk.createClient(connect());
  client.addAuthInfo('digest', Buffer.from(digestAuth));
  const connected = new Promise<void>((resolve) => client.once('connected', resolve));
  client.connect();
  try {
    await connected;
    const acls = await new Promise<Acl[]>((resolve, reject) => client.getACL(path, (error, found) => (error ? reject(error) : resolve(found))));
    return acls.map((acl) => ({ perms: acl.permission, scheme: acl.id.scheme, auth: acl.id.id }));
  } finally {
    client.close();
  }
}
