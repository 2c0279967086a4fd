import { Module, type DynamicModule } from '@nestjs/common';
import { ConfigModule } from '@nestjs/config';
import { APP_FILTER } from '@nestjs/core';
import { getDataSourceToken, TypeOrmModule } from '@nestjs/typeorm';
import { DistributedLockModule, type DistributedLockModuleOptions } from '@app/distributed-lock';
import type { DataSource, DataSourceOptions } from 'typeorm';
import { BoardModule } from './board/board.module';
import { CheckoutModule } from './checkout/checkout.module';
import { demoConfig, SERVER_DATABASES, type DemoConfig } from './config/demo-config';
import { HealthModule } from './health/health.module';
import { InventoryModule } from './inventory/inventory.module';
import { PaymentsModule } from './payments/payments.module';
import { LockErrorsFilter } from './inventory/lock-errors.filter';
import { Order } from './inventory/order.entity';
import { Product } from './inventory/product.entity';
import { buildLockStrategies } from './locks/lock-strategies.factory';
import { LockMetrics } from './metrics/lock-metrics';
import { MetricsModule } from './metrics/metrics.module';
import { ReportsModule } from './reports/reports.module';
import { ShopController } from './shop.controller';

/** The demo's data source: an embedded SQLite file shared by the instances, MariaDB/MySQL, or PostgreSQL. */
export function demoDataSourceOptions(config: Pick<DemoConfig, 'database' | 'sqlitePath' | 'mysqlUrl'> & Partial<Pick<DemoConfig, 'postgresUrl'>>, synchronize: boolean): DataSourceOptions {
  const common = { entities: [Product, Order], synchronize };
  if (config.database === 'mysql') return { ...common, type: 'mysql', url: config.mysqlUrl, poolSize: 24 };
  if (config.database === 'postgres') return { ...common, type: 'postgres', url: config.postgresUrl, poolSize: 24 };
  // WAL lets readers run beside the single writer; the busy timeout makes writers wait for each other.
  return { ...common, type: 'better-sqlite3', database: config.sqlitePath, enableWAL: true, timeout: 15_000 };
}

@Module({})
export class AppModule {
  /** The app for one configuration (the checkout module only exists where the database can hold row locks). */
  static register(config: DemoConfig): DynamicModule {
    return {
      module: AppModule,
      imports: [
        ConfigModule.forRoot({ isGlobal: true, ignoreEnvFile: true, load: [demoConfig] }),
        TypeOrmModule.forRootAsync({
          inject: [demoConfig.KEY],
          useFactory: (c: DemoConfig) => demoDataSourceOptions(c, process.env.DEMO_SYNC === '1'),
        }),
        DistributedLockModule.forRootAsync({
          imports: [MetricsModule],
          inject: [demoConfig.KEY, getDataSourceToken(), LockMetrics],
          useFactory: (c: DemoConfig, dataSource: DataSource, metrics: LockMetrics): DistributedLockModuleOptions => ({
            strategies: buildLockStrategies(c, dataSource),
            defaultStrategy: 'inventory',
            // Each shop's name (shop-1, …) in its owner ids: the lock board and `query` show who holds what by it.
            instanceName: c.instance,
            // The locks' wait and hold histograms, served on GET /metrics; no tracer is registered, so spans go nowhere.
            telemetry: { meterProvider: metrics.meterProvider, key: 'omit' },
          }),
        }),
        // The operator's endpoints that the lock board reads. Unguarded here: the demo listens on 127.0.0.1
        // only. An application mounts them behind its own guard (docs/operations.md).
        DistributedLockModule.operations({ path: 'ops/locks', keys: 'plain' }),
        BoardModule,
        MetricsModule,
        InventoryModule,
        PaymentsModule,
        ReportsModule,
        HealthModule,
        ...(SERVER_DATABASES.includes(config.database) ? [CheckoutModule] : []),
      ],
      controllers: [ShopController],
      providers: [{ provide: APP_FILTER, useClass: LockErrorsFilter }],
    };
  }
}
