import { Column, Entity, PrimaryColumn } from 'typeorm';

/**
 * A row under a composite key whose fence column has a database name of its own (`last_fence`): the
 * second fixture of the `fencedUpdate` tests.
 */
@Entity({ name: 'fixture_fenced_bin' })
export class FencedBin {
  @PrimaryColumn({ type: 'varchar', length: 64 })
  shop!: string;

  @PrimaryColumn({ type: 'varchar', length: 64 })
  bin!: string;

  @Column({ type: 'int' })
  quantity!: number;

  @Column({ type: 'bigint', name: 'last_fence', default: 0 })
  lastFence!: number | string;
}
