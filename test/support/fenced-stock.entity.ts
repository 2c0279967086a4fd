import { Column, Entity, PrimaryColumn } from 'typeorm';

/** A row that records the token of its last fenced write: the fixture of the `fencedUpdate` tests. */
@Entity({ name: 'fixture_fenced_stock' })
export class FencedStock {
  @PrimaryColumn({ type: 'varchar', length: 64 })
  sku!: string;

  @Column({ type: 'int' })
  quantity!: number;

  /** No transformer on purpose: PostgreSQL and MySQL hand a bigint back as a string, as users get it. */
  @Column({ type: 'bigint', default: 0 })
  lastFence!: number | string;
}
