import { Column, Entity, PrimaryColumn, VersionColumn } from 'typeorm';

/** The bookkeeping columns of a row, embedded: the fence among them. */
export class LedgerStamp {
  @Column({ type: 'bigint', default: 0 })
  fence!: number | string;

  @Column({ type: 'varchar', length: 64, default: '' })
  writer!: string;
}

/**
 * A row whose fence lives in an embedded object (`stamp.fence`, column `stampFence`) next to a version
 * column: the third fixture of the `fencedUpdate` tests.
 */
@Entity({ name: 'fixture_fenced_ledger' })
export class FencedLedger {
  @PrimaryColumn({ type: 'varchar', length: 64 })
  account!: string;

  @Column({ type: 'int' })
  balance!: number;

  @Column(() => LedgerStamp)
  stamp!: LedgerStamp;

  @VersionColumn()
  version!: number;
}
