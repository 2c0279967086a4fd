import { OnApplicationShutdown } from '@nestjs/common';
import { Redis } from 'ioredis';
import type { CounterStore } from './counter.service';

/** Counters as plain Redis strings, read and written in two round trips: no atomic INCR on purpose. */
export class RedisCounterStore implements CounterStore, OnApplicationShutdown {
  private readonly redis: Redis;

  constructor(url: string) {
    this.redis = new Redis(url);
  }

  async read(name: string): Promise<number> {
    return Number((await this.redis.get(`consumer:${name}`)) ?? 0);
  }

  async write(name: string, value: number): Promise<void> {
    await this.redis.set(`consumer:${name}`, String(value));
  }

  async onApplicationShutdown(): Promise<void> {
    await this.redis.quit();
  }
}
