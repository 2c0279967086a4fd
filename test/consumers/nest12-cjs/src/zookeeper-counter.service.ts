import { Inject, Injectable } from '@nestjs/common';
import { Locked } from 'nest-distributed-lock';
import { COUNTER_STORE, type CounterStore } from './counter.service';

/** The counter's read-modify-write under ZooKeeper; provided only when the app is given an ensemble. */
@Injectable()
export class ZooKeeperCounterService {
  constructor(@Inject(COUNTER_STORE) private readonly store: CounterStore) {}

  @Locked('zk-counter:{0}', { strategy: 'zookeeper' })
  async increment(name: string): Promise<number> {
    const value = await this.store.read(name);
    await new Promise((resolve) => setTimeout(resolve, 1));
    await this.store.write(name, value + 1);
    return value + 1;
  }
}
