import { appendFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { runSale } from '../../scripts/demo/run-sale';
import { SALE_RUNS } from '../../scripts/demo/sale-plan';
import { ensureDebianPackages, faults, packagesFor, startTopology, stopTopology } from '../../scripts/services';
import { adminClient, healthyReplicas, promotedReplica, replicasConfirmWrites, sentinelMasterPort } from '../support/redis-fencing';
import { doubleGrants } from '../support/double-grants';

const SETTINGS = { buyers: 300, stock: 100, instances: 3, sqlitePath: join(tmpdir(), `sentinel-sale-${process.pid}.sqlite`) };
/** Sold, sold out, or a typed "try again": 423 busy, 503 lock backend down or replicas not confirming, 409 a stale write refused. */
const TYPED_ANSWER = /^(201|409 SOLD_OUT|409 STALE_LOCK|409 LOCK_LOST|423 \w+|503 \w+)$/;
const TOPOLOGY = 'redis-sentinel2';
const MASTER = `${TOPOLOGY}-master`;
/** Answers before the kill: early enough that most of the stock is still for sale. */
const KILL_AFTER = 20;

interface Case {
  readonly title: string;
  /** DEMO_REDIS_REPLICA_ACK: "" for none, "1:500" for one replica within 500 ms. */
  readonly replicaAck: string;
}

const CASES: readonly Case[] = [
  { title: 'asynchronous replication (the default)', replicaAck: '' },
  { title: 'replicaAck: 1 replica within 500 ms', replicaAck: '1:500' },
];

/**
 * The demo's flash sale (3 shop processes, 300 buyers, 100 items) on Redis behind Sentinel (the strategy on
 * ioredis's Sentinel connection), with the master SIGKILLed once 20 buyers were answered and a replica promoted.
 * Nothing is oversold, every order has its deduction, every answer is sold / sold out / a typed "try
 * again", and no write under a lock is accepted with a token below one already accepted (the deduction's
 * `lastFence < token` check). What the failover cost is printed: the sale's sections that overlapped (two
 * holders at once) and the writes refused as stale. Two replicas, so that after the failover the new master
 * still has one to acknowledge (a Sentinel that gives up on the master after 1 s).
 */
describe('Flash sale through a Sentinel failover (Redis master SIGKILLed)', () => {
  let mysqlUrl: string;

  beforeAll(async () => {
    ensureDebianPackages(packagesFor([TOPOLOGY, 'mariadb-faults']), (line) => process.stdout.write(`${line}\n`));
    mysqlUrl = (await startTopology('mariadb-faults')).value;
  }, 120_000);

  afterAll(async () => {
    await stopTopology(TOPOLOGY);
    await stopTopology('mariadb-faults');
  }, 60_000);

  for (const saleCase of CASES) {
    it(`${saleCase.title}: nothing oversold, no stale write accepted`, async () => {
      const run = SALE_RUNS.find((candidate) => candidate.name === 'redis');
      if (!run) throw new Error('no demo run "redis"');
      // A fresh master, replica and Sentinel: the last case killed the master.
      await stopTopology(TOPOLOGY);
      const address = new URL((await startTopology(TOPOLOGY)).value);
      const masterName = address.pathname.slice(1);
      const sentinel = adminClient(Number(address.port));
      try {
        await healthyReplicas(sentinel, masterName, 2);
        const masterPort = (await sentinelMasterPort(sentinel, masterName)) as number;
        const master = adminClient(masterPort);
        await replicasConfirmWrites(master, 2);
        master.disconnect();
        let killedAt = 0;
        let chaos: Promise<unknown> | undefined;
        const { row, outcome, timeline } = await runSale(run, SETTINGS, {
          env: { LOCK_TEST_MYSQL_URL: mysqlUrl, LOCK_TEST_REDIS_URL: address.href, DEMO_REDIS_REPLICA_ACK: saleCase.replicaAck },
          onProgress: (done) => {
            if (!chaos && done >= KILL_AFTER) {
              killedAt = Date.now();
              chaos = faults.kill(MASTER).then(() => promotedReplica(sentinel, masterName, masterPort));
            }
          },
          beforeCheck: async () => {
            await chaos;
          },
        });
        await chaos;
        const grants = doubleGrants(timeline.holds.filter((hold) => hold.kind === 'lock'));
        const answers = Object.keys(outcome.statusCounts);
        process.stdout.write(
          `sentinel sale, ${saleCase.title}: master killed ${killedAt - timeline.startedAt} ms into the sale; ${JSON.stringify(outcome.statusCounts)}; ` +
            `orders ${row.orders}, stock ${row.initialStock} → ${row.finalStock}, ${Math.round(outcome.durationMs)} ms; ` +
            `double grants ${grants.count} (${grants.windowsMs.map((ms) => `${ms.toFixed(1)} ms`).join(', ') || 'none'}); stale writes refused ${outcome.statusCounts['409 STALE_LOCK'] ?? 0}\n`,
        );
        const file = process.env.LOCK_DOUBLE_GRANT_REPORT;
        const entry = { case: `sale, ${saleCase.title}`, killedAtMs: killedAt - timeline.startedAt, answeredBeforeKill: KILL_AFTER, statusCounts: outcome.statusCounts, orders: row.orders, doubleGrants: grants.count, windowsMs: grants.windowsMs.map(Math.round), durationMs: Math.round(outcome.durationMs) };
        if (file) appendFileSync(file, `${JSON.stringify({ at: new Date().toISOString(), ...entry })}\n`);
        expect(chaos).toBeDefined();
        expect(row.orders).toBe(row.initialStock - row.finalStock);
        expect(row.finalStock).toBeGreaterThanOrEqual(0);
        expect(outcome.created).toBeLessThanOrEqual(row.orders);
        expect(answers.filter((answer) => !TYPED_ANSWER.test(answer))).toEqual([]);
        expect(outcome.created).toBeGreaterThan(0);
        // Accepted writes carry rising tokens, across the failover too: the promoted replica's tokens are above
        // the dead master's (its counter, or its clock in µs).
        const tokens = timeline.holds.filter((hold) => hold.kind === 'lock' && hold.fencingToken !== null).map((hold) => hold.fencingToken as number);
        expect(new Set(tokens).size).toBe(tokens.length);
        if (saleCase.replicaAck) expect(grants.count).toBe(0);
      } finally {
        sentinel.disconnect();
      }
    }, 240_000);
  }
});
