import { randomUUID } from 'node:crypto';
import { createConnection, type Connection, type RowDataPacket } from 'mysql2/promise';
import { DataSource } from 'typeorm';
import { redisLockKeys } from '../../libs/distributed-lock/src/strategies/redis/redis-keys';
import { demoDataSourceOptions } from '../../apps/demo-inventory/src/app.module';
import { Order } from '../../apps/demo-inventory/src/inventory/order.entity';
import { Product } from '../../apps/demo-inventory/src/inventory/product.entity';
import { startInstances, stopInstances, type ShopInstance } from '../../scripts/demo/instances';
import { waitUntil } from '../../scripts/services/probes';
import { adminClient } from '../support/redis-fencing';
import { initializeDataSource } from '../support/initialize-data-source';

const run = randomUUID().slice(0, 8);
const STOCK = 10;

/**
 * The demo's locked deduction reads the stock, does its checkout work, then writes the stock it read minus
 * one under the fencing check. A check of the writer's token alone is not enough: a newer holder that read
 * the stock before an older holder's late write landed writes the same stock again after it, both writes
 * pass `lastFence < token`, and one item is sold twice. What makes a write late here is the database: the
 * test holds the product's row, so the first buyer's UPDATE waits on it while its Redis lock is deleted
 * behind it and the second buyer, on another shop instance, gets the lock and reads the stock.
 */
describe("The demo's fenced deduction when a holder's write is held up past its lock", () => {
  const mysqlUrl = process.env.LOCK_TEST_MYSQL_URL as string;
  const redisUrl = process.env.LOCK_TEST_REDIS_URL as string;
  const sku = `fence-${run}`;
  let data: DataSource;
  let shops: ShopInstance[] = [];

  beforeAll(async () => {
    data = await initializeDataSource(demoDataSourceOptions({ database: 'mysql', sqlitePath: '', mysqlUrl }, true));
    await data.getRepository(Product).save({ sku, name: 'Fenced mug', stock: STOCK, lastFence: 0 });
    shops = await startInstances(2, { DEMO_DATABASE: 'mysql', DEMO_SYNC: '0', INVENTORY_LOCK: 'redis', LOCK_TEST_MYSQL_URL: mysqlUrl, LOCK_TEST_REDIS_URL: redisUrl });
  }, 90_000);

  afterAll(async () => {
    await stopInstances(shops);
    await data?.getRepository(Order).delete({ sku });
    await data?.getRepository(Product).delete({ sku });
    await data?.destroy();
  });

  const buy = async (shop: ShopInstance, buyer: string): Promise<string> => {
    const response = await fetch(`http://127.0.0.1:${shop.port}/buy`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ sku, buyer, mode: 'locked' }),
    });
    const body = (await response.json()) as { error?: string };
    return body.error ? `${response.status} ${body.error}` : String(response.status);
  };

  /** The product's UPDATEs under way: with the test holding the row, each of them waits on it. */
  const waitingWrites = async (inspector: Connection): Promise<number> => {
    const [rows] = await inspector.query<RowDataPacket[]>(
      "SELECT COUNT(*) AS n FROM information_schema.processlist WHERE Command = 'Query' AND Info LIKE 'UPDATE `demo_products`%' AND Info LIKE ?",
      [`%${sku}%`],
    );
    return Number(rows[0].n);
  };

  it('redis: the two buyers never both sell from the same stock they read', async () => {
    const blocker = await createConnection({ uri: mysqlUrl });
    const inspector = await createConnection({ uri: mysqlUrl });
    const redis = adminClient(Number(new URL(redisUrl).port));
    try {
      await blocker.query('START TRANSACTION');
      await blocker.query('SELECT stock FROM demo_products WHERE sku = ? FOR UPDATE', [sku]);
      const first = buy(shops[0], 'ann');
      await waitUntil("the first buyer's write to wait on the row", async () => (await waitingWrites(inspector)) === 1, 10_000, 20);
      // Its lock is gone while its write waits (as after a failover to a replica that never got the key).
      expect(await redis.del(redisLockKeys('dlock:', `inventory:stock:${sku}`).keys[0])).toBe(1);
      const second = buy(shops[1], 'bob');
      await waitUntil("the second buyer's write to wait on the row", async () => (await waitingWrites(inspector)) === 2, 10_000, 20);
      await blocker.query('COMMIT');
      const answers = await Promise.all([first, second]);
      const product = await data.getRepository(Product).findOneByOrFail({ sku });
      const orders = await data.getRepository(Order).countBy({ sku });
      process.stdout.write(`fenced deduction, write held up past its lock: answers ${answers.join(', ')}; orders ${orders}, stock ${STOCK} → ${product.stock}\n`);
      // The first buyer's write landed, fenced, though its lock was gone before its section ended: its order
      // stands and it is told so (201), not sent away with LOCK_LOST while it was sold the item. The second
      // buyer's write, computed from a read taken before that write landed, is refused.
      expect(answers).toEqual(['201', '409 STALE_LOCK']);
      expect(orders).toBe(STOCK - product.stock);
      expect(orders).toBe(1);
    } finally {
      await blocker.query('ROLLBACK').catch(() => undefined);
      await blocker.end();
      await inspector.end();
      redis.disconnect();
    }
  }, 60_000);
});
