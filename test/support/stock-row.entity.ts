import { Column, Entity, PrimaryColumn, VersionColumn } from 'typeorm';

/** A row with a version column: the fixture of the optimistic tests and benchmarks. */
@Entity({ name: 'fixture_stock' })
export class StockRow {
  @PrimaryColumn({ type: 'varchar', length: 64 })
  sku!: string;

  @Column({ type: 'int' })
  quantity!: number;

  @VersionColumn()
  version!: number;
}
