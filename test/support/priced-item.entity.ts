import { Column, Entity, PrimaryColumn, UpdateDateColumn, VersionColumn } from 'typeorm';

/** Stored as DECIMAL (a string in mysql2), used as a number: a column with a transformer. */
const decimalAsNumber = { to: (value: number | null) => (value === null ? null : value.toFixed(2)), from: (value: string | null) => (value === null ? null : Number(value)) };

/**
 * A row with columns of every kind the driver prepares before a write (transformer, JSON, simple-array,
 * boolean, datetime), an @UpdateDateColumn, an @VersionColumn and a second counter usable as the
 * version property: the fixture that proves a direct optimistic update writes what TypeORM would.
 */
@Entity({ name: 'fixture_priced_item' })
export class PricedItem {
  @PrimaryColumn({ type: 'varchar', length: 64 })
  id!: string;

  @Column({ type: 'varchar', length: 64 })
  name!: string;

  @Column({ type: 'decimal', precision: 10, scale: 2, transformer: decimalAsNumber })
  price!: number;

  @Column({ type: 'simple-json' })
  meta!: { colour: string; sizes: number[] };

  @Column({ type: 'simple-array' })
  tags!: string[];

  @Column({ type: 'boolean' })
  onSale!: boolean;

  @Column({ type: 'datetime', precision: 3, nullable: true })
  restockAt!: Date | null;

  @Column({ type: 'int', default: 0 })
  revision!: number;

  @UpdateDateColumn({ type: 'datetime', precision: 3 })
  updatedAt!: Date;

  @VersionColumn()
  version!: number;
}
