// docs/observability.md's set-up, run by the consumer check: telemetry.ts first, then an application with
// `telemetry: true` that takes a lock, then what Prometheus scrapes of it. The console exporter prints the
// lock's span when the SDK shuts down.
import './telemetry.js';
import { Module } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { DistributedLockModule } from 'nest-distributed-lock';
import { RedisLockStrategy } from 'nest-distributed-lock/strategies/redis';
import { COUNTER_STORE, CounterService } from './counter.service.js';
import { RedisCounterStore } from './redis-counter.store.js';
import { telemetry } from './telemetry.js';

const redisUrl = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';

@Module({
  imports: [
    DistributedLockModule.forRoot({
      strategies: { default: new RedisLockStrategy({ connection: redisUrl }) },
      telemetry: true,
    }),
  ],
  providers: [CounterService, { provide: COUNTER_STORE, useFactory: () => new RedisCounterStore(redisUrl) }],
})
class ObservedModule {}

const app = await NestFactory.createApplicationContext(ObservedModule, { logger: ['error', 'warn'] });
await app.get(CounterService).increment(process.env.COUNTER_NAME ?? 'observed');
const scraped = await (await fetch(`http://127.0.0.1:${process.env.METRICS_PORT ?? 9464}/metrics`)).text();
await app.close();
await telemetry.shutdown();
console.log(JSON.stringify({ scraped: scraped.split('\n').filter((line) => line.startsWith('lock_')) }));
