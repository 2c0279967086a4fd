// Who holds what, from a shell, without a Nest app: the held keys under a prefix with their holders and
// waiters (LockService.queryPrefix), one line per key, every page.
// Run: node -r @swc-node/register examples/who-holds.ts --redis redis://127.0.0.1:6379 [--prefix stock:] [--key-prefix shop:]
//      (or --etcd 127.0.0.1:2379, or --zookeeper 127.0.0.1:2181)
import { parseArgs } from 'node:util';
import { LockManager, LockService, type LockInfo, type LockOwnerInfo, type LockStrategy } from '@app/distributed-lock';

const { values } = parseArgs({
  options: {
    redis: { type: 'string' },
    etcd: { type: 'string' },
    zookeeper: { type: 'string' },
    prefix: { type: 'string', default: '' },
    'key-prefix': { type: 'string', default: '' },
  },
});

/** The strategy the flags name; its client library is loaded only when asked for. */
async function strategyOf(): Promise<LockStrategy> {
  if (values.redis) return new (await import('@app/distributed-lock/strategies/redis')).RedisLockStrategy({ connection: values.redis });
  if (values.etcd) return new (await import('@app/distributed-lock/strategies/etcd')).EtcdLockStrategy({ connection: { hosts: values.etcd.split(',') } });
  if (values.zookeeper) return new (await import('@app/distributed-lock/strategies/zookeeper')).ZooKeeperLockStrategy({ connect: values.zookeeper });
  throw new Error('name the server: --redis <url>, --etcd <host:port,…> or --zookeeper <host:port,…>');
}

const who = (owner: LockOwnerInfo): string => (owner.host === null ? owner.id : `${owner.instance ?? owner.host}/${owner.pid}`);

function line(lock: LockInfo, now: number): string {
  const holders = lock.held.map((holder) => {
    const left = holder.expiresAt === null ? '' : ` ${Math.max(0, holder.expiresAt - now)} ms left`;
    return `${who(holder.owner)}${holder.fencingToken === null ? '' : ` token ${holder.fencingToken}`}${left}`;
  });
  const waiting = lock.pending === null ? 'no queue' : `${lock.pending.length} waiting${lock.pending.length ? `: ${lock.pending.map((waiter) => who(waiter.owner)).join(', ')}` : ''}`;
  return `${lock.key}\theld by ${holders.join(' + ') || 'nobody'}\t${waiting}`;
}

async function main(): Promise<void> {
  const manager = new LockManager(await strategyOf(), { operationTimeout: 5_000 });
  try {
    const locks = new LockService(manager, { keyPrefix: values['key-prefix'] });
    let count = 0;
    for (let cursor: string | null = null; ; ) {
      const page = await locks.queryPrefix(values.prefix ?? '', { cursor });
      const now = Date.now();
      for (const lock of page.locks) process.stdout.write(`${line(lock, now)}\n`);
      count += page.locks.length;
      if (!(cursor = page.next)) break;
    }
    process.stdout.write(`${count} key(s) held under "${values['key-prefix']}${values.prefix}"\n`);
  } finally {
    await manager.close();
  }
}

main().catch((error: unknown) => {
  process.stderr.write(`${error instanceof Error ? `${error.name}: ${error.message}` : String(error)}\n`);
  process.exitCode = 1;
});
