import { DataSource } from 'typeorm';
import { InMemoryLockStrategy, LockManager, LockService } from '@app/distributed-lock';
import { demoDataSourceOptions } from '../../apps/demo-inventory/src/app.module';
import { demoConfig, type DemoConfig } from '../../apps/demo-inventory/src/config/demo-config';
import { HoldLog } from '../../apps/demo-inventory/src/inventory/hold-log';
import { SoldOutError } from '../../apps/demo-inventory/src/inventory/inventory.errors';
import { InventoryService } from '../../apps/demo-inventory/src/inventory/inventory.service';
import { Order } from '../../apps/demo-inventory/src/inventory/order.entity';
import { initializeDataSource } from '../support/initialize-data-source';

/** The demo's lock-free reference purchase on PostgreSQL: one statement that takes the item and writes its order. */
describe('the demo’s lock-free purchase on PostgreSQL', () => {
  const config: DemoConfig = { ...demoConfig(), database: 'postgres', instance: 'int-atomic', postgresUrl: process.env.LOCK_TEST_POSTGRES_URL };
  let dataSource: DataSource;
  let manager: LockManager;
  let inventory: InventoryService;

  beforeAll(async () => {
    dataSource = await initializeDataSource(demoDataSourceOptions(config, true));
    manager = new LockManager(new InMemoryLockStrategy());
    inventory = new InventoryService(dataSource, config, new LockService(manager), new HoldLog(config));
  });

  afterAll(async () => {
    await manager?.close();
    await dataSource?.destroy();
  });

  it('takes the item and writes its order together, and moves the version column as TypeORM’s update does', async () => {
    await inventory.createProduct('int-atomic-1', 'Cup', 1);
    const before = await inventory.product('int-atomic-1');
    const order = await inventory.buyAtomic('int-atomic-1', 'ann');
    const after = await inventory.product('int-atomic-1');
    expect(after.stock).toBe(0);
    // An optimistic purchase that read the stock before this one must see a conflict, not write over it.
    expect(after.version).toBe(before.version + 1);
    expect(await dataSource.getRepository(Order).findOneByOrFail({ id: order.id })).toMatchObject({ sku: 'int-atomic-1', buyer: 'ann', strategy: 'atomic', instance: 'int-atomic', fencingToken: null });
    await expect(inventory.buyAtomic('int-atomic-1', 'bob')).rejects.toBeInstanceOf(SoldOutError);
    expect(await dataSource.getRepository(Order).countBy({ sku: 'int-atomic-1' })).toBe(1);
  });
});
