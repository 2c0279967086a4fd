import { Logger } from '@nestjs/common';
import { LockLostError } from '@app/distributed-lock';
import { Order } from './order.entity';

const logger = new Logger('FencedOrder');

/**
 * The order of a locked purchase whose lock was lost, when that order still stands: the section ran to its
 * end and its stock deduction was a fenced write (the order carries the token it was checked with), so the
 * database refused it had anyone newer written, and a buyer whose order committed is told so. Anything else
 * (the section failed, or wrote unfenced on Redlock or memcached) is rethrown: the buyer hears `LOCK_LOST`.
 */
export function fencedOrderOf(error: unknown): Order {
  const value = error instanceof LockLostError ? error.sectionResult?.value : undefined;
  if (!(value instanceof Order) || value.fencingToken === null) throw error;
  logger.warn(`order ${value.id} stands: its fenced write (token ${value.fencingToken}) committed, though ${(error as LockLostError).message}`);
  return value;
}
