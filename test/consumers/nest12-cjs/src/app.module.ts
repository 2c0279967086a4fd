import { Module } from '@nestjs/common';
import { TypeOrmModule } from '@nestjs/typeorm';
import { DistributedLockModule } from 'nest-distributed-lock';
import { PessimisticLockStrategy, RowLockStrategy } from 'nest-distributed-lock/strategies/database';
import { RedisLockStrategy } from 'nest-distributed-lock/strategies/redis';
import { DataSource } from 'typeorm';
import { AppController } from './app.controller';
import { AppService } from './app.service';
import { COUNTER_STORE, CounterService } from './counter.service';
import { RedisCounterStore } from './redis-counter.store';

const redisUrl = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';
// The app's database: MariaDB or MySQL when MYSQL_URL names one, else a SQLite file.
const mysqlUrl = process.env.MYSQL_URL;

@Module({
  imports: [
    TypeOrmModule.forRoot(mysqlUrl ? { type: 'mysql', url: mysqlUrl } : { type: 'better-sqlite3', database: process.env.SQLITE_FILE ?? 'app.sqlite' }),
    DistributedLockModule.forRootAsync({
      inject: [DataSource],
      useFactory: (dataSource: DataSource) => ({
        strategies: {
          default: new RedisLockStrategy({ connection: redisUrl }),
          orders: new RowLockStrategy({ dataSource }),
          // Row locks held by a transaction (SELECT … FOR UPDATE) need MySQL or MariaDB; on SQLite, the lock table.
          ledger: mysqlUrl ? new PessimisticLockStrategy({ dataSource }) : new RowLockStrategy({ dataSource }),
        },
      }),
    }),
  ],
  controllers: [AppController],
  providers: [AppService, CounterService, { provide: COUNTER_STORE, useFactory: () => new RedisCounterStore(redisUrl) }],
})
export class AppModule {}
