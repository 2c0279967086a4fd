import { Module } from '@nestjs/common';
import { DistributedLockModule } from 'nest-distributed-lock';
import { RedisLockStrategy } from 'nest-distributed-lock/strategies/redis';
import { AppController } from './app.controller';
import { AppService } from './app.service';
import { CounterController } from './counter.controller';
import { COUNTER_STORE, CounterService } from './counter.service';
import { RedisCounterStore } from './redis-counter.store';

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
