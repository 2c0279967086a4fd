import { Module } from '@nestjs/common';
import { DistributedLockModule } from 'nest-distributed-lock';
import { RedisLockStrategy } from 'nest-distributed-lock/strategies/redis';
import { AppController } from './app.controller.js';
import { AppService } from './app.service.js';
import { CounterController } from './counter.controller.js';
import { COUNTER_STORE, CounterService } from './counter.service.js';
import { RedisCounterStore } from './redis-counter.store.js';

const redisUrl = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';

@Module({
  imports: [
    DistributedLockModule.forRoot({
      strategies: { default: new RedisLockStrategy({ connection: redisUrl }) },
    }),
  ],
  controllers: [AppController, CounterController],
  providers: [AppService, CounterService, { provide: COUNTER_STORE, useFactory: () => new RedisCounterStore(redisUrl) }],
})
export class AppModule {}
