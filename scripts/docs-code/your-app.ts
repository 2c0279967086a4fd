// The application around the docs' examples: what a code block uses without declaring it, because the
// page's prose says it is yours (your Redis client, your DataSource, your entities). docs-code.spec.ts
// compiles every block with these in scope; nothing here runs.
import type { DataSource, QueryRunner, Repository } from 'typeorm';
import type { Etcd3 } from 'etcd3';
import type { Redis } from 'ioredis';
import type { DistributedLockModuleOptions, LockService, LockStrategy } from '../../libs/distributed-lock/src/index';

/** Your clients and connections. */
export declare const redis: Redis;
export declare const client: Redis;
export declare const a: Redis, b: Redis, c: Redis, d: Redis, e: Redis;
export declare const etcd: Etcd3;
export declare const dataSource: DataSource;
export declare const queryRunner: QueryRunner;
export declare const connection: string;
export declare const rootCertificate: Buffer;
export declare const username: string;
export declare const password: string;

/** Your configuration module and its options factory (docs/configuration.md, `useExisting`). */
export declare class LockConfig {
  createDistributedLockOptions(): DistributedLockModuleOptions;
}
export declare class LockConfigModule {}

/** Your feature's service. */
export declare class InventoryService {}

/** Your lock service, and a strategy built elsewhere. */
export declare const locks: LockService;
export declare const strategy: LockStrategy;

/** Your entities. */
export declare class Product {
  sku: string;
  stock: number;
  version: number;
  /** A bigint column (default 0): TypeORM reads it as a string. */
  lastFence: string;
}
export declare class Order {
  id: string;
}
export declare const products: Repository<Product>;

/** Your own work, and your metrics library. */
export declare function work(): Promise<void>;
export declare function runJob(): Promise<void>;
export declare const metrics: { increment(name: string, attributes?: Record<string, unknown>): void };

/** A payment provider's client. */
export declare class PaymentProvider {
  charge(order: Order, options: { signal?: AbortSignal }): Promise<void>;
  refund(order: Order): Promise<void>;
}

/** A backend client of the strategy written in docs/writing-a-strategy.md. */
export declare class MyClient {
  createIfAbsent(key: string, owner: string, ttlMs: number): Promise<number | null>;
  extendIfOwner(key: string, owner: string, ttlMs: number): Promise<boolean>;
  deleteIfOwner(key: string, owner: string): Promise<boolean>;
}
