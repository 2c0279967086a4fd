import { Module } from '@nestjs/common';
import { TypeOrmModule } from '@nestjs/typeorm';
import { DistributedLockModule } from 'nest-distributed-lock';
import { RowLockStrategy } from 'nest-distributed-lock/strategies/database';
import { RedisLockStrategy } from 'nest-distributed-lock/strategies/redis';
import { DataSource } from 'typeorm';
import { AppController } from './app.controller';
import { AppService } from './app.service';
import { COUNTER_STORE, CounterService } from './counter.service';
import { RedisCounterStore } from './redis-counter.store';

const redisUrl = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';

@Module({
  imports: [
    TypeOrmModule.forRoot({ type: 'better-sqlite3', database: process.env.SQLITE_FILE ?? 'app.sqlite' }),
    DistributedLockModule.forRootAsync({
      inject: [DataSource],
      useFactory: (dataSource: DataSource) => ({
        strategies: {
          default: new RedisLockStrategy({ connection: redisUrl }),
          orders: new RowLockStrategy({ dataSource }),
        },
      }),
    }),
  ],
  controllers: [AppController],
  providers: [AppService, CounterService, { provide: COUNTER_STORE, useFactory: () => new RedisCounterStore(redisUrl) }],
})
export class AppModule {}
