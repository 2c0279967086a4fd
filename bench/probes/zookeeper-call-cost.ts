// What one call costs on the test servers' ZooKeeper, from this client: a write (`set`, which ZooKeeper
// makes durable before it answers), a read (`exists`), and an ephemeral create + delete. A pass of a lock
// within a process (`localHandover`) is one write; a hand-over to another process is a delete, the watch's
// event and a listing (see docs/strategies/zookeeper.md, "Strict FIFO or cohorts").
// Usage: LOCK_TEST_ZOOKEEPER=host:port node -r @swc-node/register bench/probes/zookeeper-call-cost.ts [calls]
// Prints the mean time per call of each, after 50 calls of warm-up, one call at a time.
import { ZooKeeperSession } from '../../libs/distributed-lock/src/strategies/zookeeper/zookeeper-session';

const EPHEMERAL = 1;

async function main(): Promise<void> {
  const calls = Number(process.argv[2] ?? 300);
  const connect = process.env.LOCK_TEST_ZOOKEEPER;
  if (!connect) throw new Error('Set LOCK_TEST_ZOOKEEPER (npm run services -- up prints it).');
  const session = new ZooKeeperSession({ connect }, 'zookeeper-call-cost', 10_000);
  const client = await session.client();
  const path = `/zookeeper-call-cost-${process.pid}`;
  await client.create(path, 'x', EPHEMERAL);
  const operations: ReadonlyArray<[string, () => Promise<unknown>]> = [
    ['set (a write)', () => client.set(path, 'y', -1)],
    ['exists (a read)', () => client.exists(path, false)],
    ['create + delete (two writes)', async () => client.delete_(await client.create(`${path}-child`, 'x', EPHEMERAL), -1)],
  ];
  for (const [name, operation] of operations) {
    for (let i = 0; i < 50; i += 1) await operation();
    const started = performance.now();
    for (let i = 0; i < calls; i += 1) await operation();
    console.log(`${name}: ${((performance.now() - started) / calls).toFixed(3)} ms per call`);
  }
  await session.close();
}

void main();
