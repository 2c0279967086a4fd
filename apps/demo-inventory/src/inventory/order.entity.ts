import { Column, CreateDateColumn, Entity, PrimaryGeneratedColumn } from 'typeorm';
import { bigintAsNumber } from './product.entity';

/** One successful purchase. Every order must match exactly one stock deduction. */
@Entity({ name: 'demo_orders' })
export class Order {
  @PrimaryGeneratedColumn('uuid')
  id!: string;

  @Column({ type: 'varchar', length: 64 })
  buyer!: string;

  @Column({ type: 'varchar', length: 64 })
  sku!: string;

  @Column({ type: 'varchar', length: 64 })
  instance!: string;

  @Column({ type: 'varchar', length: 32 })
  strategy!: string;

  @Column({ type: 'bigint', nullable: true, transformer: bigintAsNumber })
  fencingToken!: number | null;

  @CreateDateColumn()
  createdAt!: Date;
}
