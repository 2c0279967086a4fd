// A minimal Nest application using the library the way the README shows: two feature modules, each on
// its own strategy, and a @Locked service method that 200 concurrent buyers call for 50 items.
// Run: npm run example
import 'reflect-metadata';
import { Injectable, Module } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { currentLock, DistributedLockModule, InMemoryLockStrategy, Locked, LockService } from '@app/distributed-lock';

@Injectable()
class StockService {
  private readonly stock = new Map<string, number>([['sku-1', 50]]);
  readonly fencingTokens: number[] = [];

  /** Read, pause (as a database round trip would), write: without the lock, buyers oversell. */
  @Locked('stock:{0}', { waitTimeout: 30_000 })
  async buy(sku: string): Promise<boolean> {
    const left = this.stock.get(sku) ?? 0;
    await new Promise((resolve) => setTimeout(resolve, 1));
    if (left <= 0) return false;
    this.stock.set(sku, left - 1);
    this.fencingTokens.push(currentLock()?.fencingToken ?? -1);
    return true;
  }

  left(sku: string): number {
    return this.stock.get(sku) ?? 0;
  }
}

@Injectable()
class AuditService {
  constructor(readonly locks: LockService) {}

  /** Uses the service directly: the audit module's strategy and prefix apply. */
  async record(entry: string): Promise<string> {
    return this.locks.withLock('journal', (lock) => `${entry} written under ${lock.keys[0]}`);
  }
}

@Module({ imports: [DistributedLockModule.forFeature({ strategy: 'inventory', keyPrefix: 'inv:' })], providers: [StockService], exports: [StockService] })
class InventoryModule {}

@Module({ imports: [DistributedLockModule.forFeature({ strategy: 'audit', keyPrefix: 'audit:' })], providers: [AuditService], exports: [AuditService] })
class AuditModule {}

@Module({
  imports: [
    DistributedLockModule.forRoot({
      strategies: { default: new InMemoryLockStrategy(), inventory: new InMemoryLockStrategy({ name: 'inventory-memory' }), audit: new InMemoryLockStrategy({ name: 'audit-memory' }) },
    }),
    InventoryModule,
    AuditModule,
  ],
})
class AppModule {}

async function main(): Promise<void> {
  const app = await NestFactory.createApplicationContext(AppModule, { logger: ['error', 'warn'] });
  const stock = app.get(StockService);
  const results = await Promise.all(Array.from({ length: 200 }, () => stock.buy('sku-1')));
  const sold = results.filter(Boolean).length;
  console.log(`sold ${sold} of 50, ${stock.left('sku-1')} left, ${results.length - sold} buyers turned away`);
  console.log(await app.get(AuditService).record('sale closed'));
  const increasing = stock.fencingTokens.every((token, i, all) => i === 0 || token > all[i - 1]);
  console.log(`fencing tokens strictly increasing: ${increasing}`);
  await app.close();
  if (sold !== 50 || stock.left('sku-1') !== 0 || !increasing) process.exitCode = 1;
}

void main();
