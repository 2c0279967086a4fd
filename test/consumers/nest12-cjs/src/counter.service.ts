import { Inject, Injectable } from '@nestjs/common';
import { Locked } from 'nest-distributed-lock';

export const COUNTER_STORE = Symbol('COUNTER_STORE');

/** Where the counters live: Redis in the app, a Map in the unit test. */
export interface CounterStore {
  read(name: string): Promise<number>;
  write(name: string, value: number): Promise<void>;
}

@Injectable()
export class CounterService {
  constructor(@Inject(COUNTER_STORE) private readonly store: CounterStore) {}

  @Locked('counter:{0}')
  async increment(name: string): Promise<number> {
    return this.readPauseWrite(name);
  }

  /** The same read-modify-write under the database's lock table (registered as "orders"). */
  @Locked('tally:{0}', { strategy: 'orders' })
  async incrementUnderRowLock(name: string): Promise<number> {
    return this.readPauseWrite(name);
  }

  /** The same under the "ledger" strategy: a row lock held by a transaction on MariaDB. */
  @Locked('ledger:{0}', { strategy: 'ledger' })
  async incrementUnderLedgerLock(name: string): Promise<number> {
    return this.readPauseWrite(name);
  }

  /** The same under the "named" strategy: the database's own lock (PostgreSQL advisory lock, GET_LOCK). */
  @Locked('named:{0}', { strategy: 'named' })
  async incrementUnderNamedLock(name: string): Promise<number> {
    return this.readPauseWrite(name);
  }

  /** The control: the same work with no lock, which loses updates when two callers overlap. */
  async incrementUnlocked(name: string): Promise<number> {
    return this.readPauseWrite(name);
  }

  // The pause between the read and the write is where an unguarded second caller slips in.
  private async readPauseWrite(name: string): Promise<number> {
    const value = await this.store.read(name);
    await new Promise((resolve) => setTimeout(resolve, 1));
    await this.store.write(name, value + 1);
    return value + 1;
  }
}
