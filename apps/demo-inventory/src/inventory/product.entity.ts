import { Column, Entity, PrimaryColumn, VersionColumn } from 'typeorm';

/** BIGINT columns come back as strings from MySQL; fencing tokens fit a JS number (< 2^53). */
export const bigintAsNumber = { to: (value: number | null) => value, from: (value: string | number | null) => (value === null ? null : Number(value)) };

@Entity({ name: 'demo_products' })
export class Product {
  @PrimaryColumn({ type: 'varchar', length: 64 })
  sku!: string;

  @Column({ type: 'varchar', length: 200 })
  name!: string;

  @Column({ type: 'int' })
  stock!: number;

  /** Optimistic concurrency: bumped by every update. */
  @VersionColumn()
  version!: number;

  /** The highest fencing token that wrote this row: a holder with a lower one lost its lock and is refused. */
  @Column({ type: 'bigint', default: 0, transformer: bigintAsNumber })
  lastFence!: number;
}
