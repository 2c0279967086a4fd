import { Injectable } from '@nestjs/common';
import { currentPermit, Limited } from '@app/distributed-lock';
import { HoldLog } from '../inventory/hold-log';
import { preciseNow } from '../clock/precise-now';

/** How many payment calls may run at once across every shop instance: the provider's limit. */
export const PAYMENT_PERMITS = 4;
/** Stands for the payment provider's round trip. */
export const PAYMENT_CALL_MS = 15;
/** The payment semaphore's key, as the payments module's prefix makes it; its calls are logged under it. */
export const PAYMENT_KEY = 'checkout:payments';

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * The checkout's payment step. The provider allows `PAYMENT_PERMITS` concurrent calls per merchant, so
 * every call holds a permit of one counting semaphore shared by the instances: the others wait their turn
 * instead of being refused by the provider.
 */
@Injectable()
export class PaymentService {
  constructor(private readonly holds: HoldLog) {}

  // With the stock's 25 s, a purchase ends within 45 s plus its lock calls' bounds, well before the buyers
  // give up (90 s): a wait that runs out is a typed 423/503, never a buyer left without an answer.
  @Limited('payments', { permits: PAYMENT_PERMITS, waitTimeout: 20_000 })
  /** Charges the buyer of the order just placed (the provider call is simulated). */
  async charge(): Promise<void> {
    const startedAt = preciseNow();
    try {
      await sleep(PAYMENT_CALL_MS);
      // A permit lost mid-call (its lease ran out) must not be followed by the capture.
      currentPermit()?.throwIfLost();
    } finally {
      this.holds.permit(PAYMENT_KEY, startedAt, currentPermit()?.fencingToken ?? null);
    }
  }
}
