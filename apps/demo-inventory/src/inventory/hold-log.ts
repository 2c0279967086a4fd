import { Inject, Injectable } from '@nestjs/common';
import { preciseNow } from '../clock/precise-now';
import { demoConfig, type DemoConfig } from '../config/demo-config';

/**
 * One critical section of this shop instance: a hold of a stock lock, or, where no lock is taken, the
 * stretch from reading the stock to writing it (which may overlap another instance's); or a payment call,
 * under a permit of the payment semaphore (up to its size overlap, by design).
 */
export interface Hold {
  readonly key: string;
  readonly instance: string;
  /** In ms since the epoch: the instances share the machine's clock. */
  readonly startedAt: number;
  readonly endedAt: number;
  readonly fencingToken: number | null;
  readonly kind: 'lock' | 'section' | 'permit';
}

/**
 * The shop instance's critical sections, as its services report them, for the demo's lock utilization
 * and timeline.
 */
@Injectable()
export class HoldLog {
  private holds: Hold[] = [];

  constructor(@Inject(demoConfig.KEY) private readonly config: DemoConfig) {}

  /**
   * Records a section run under the lock, from the method's first line to its last: what is inside the
   * lock for sure. (The lock's own events would add the release's round trip, which the next holder's
   * grant may overlap.)
   */
  locked(key: string, startedAt: number, fencingToken: number | null): void {
    this.holds.push({ key, instance: this.config.instance, startedAt, endedAt: preciseNow(), fencingToken, kind: 'lock' });
  }

  /** Records a call made under a permit of a semaphore, from its first line to its last. */
  permit(key: string, startedAt: number, fencingToken: number | null): void {
    this.holds.push({ key, instance: this.config.instance, startedAt, endedAt: preciseNow(), fencingToken, kind: 'permit' });
  }

  /** Records a section that took no lock. */
  section(key: string, startedAt: number): void {
    this.holds.push({ key, instance: this.config.instance, startedAt, endedAt: preciseNow(), fencingToken: null, kind: 'section' });
  }

  /** The sections recorded so far, forgotten once read. */
  drain(): Hold[] {
    const holds = this.holds;
    this.holds = [];
    return holds;
  }
}
