import { ArgumentsHost, Catch, HttpException, HttpStatus, Logger, type ExceptionFilter } from '@nestjs/common';
import type { Response } from 'express';
import {
  DistributedLockError,
  FencedWriteRefusedError,
  InvalidLockOptionsError,
  LockAcquireTimeoutError,
  LockBackendUnavailableError,
  LockLostError,
  LockNotReplicatedError,
  VersionConflictError,
} from '@app/distributed-lock';
import { SoldOutError, UnknownProductError } from './inventory.errors';

interface Mapped {
  readonly status: number;
  readonly error: string;
}

/** The library's errors are not HTTP errors; this is where the demo decides what each means to a client. */
function mapError(error: unknown): Mapped | undefined {
  if (error instanceof SoldOutError) return { status: HttpStatus.CONFLICT, error: 'SOLD_OUT' };
  if (error instanceof UnknownProductError) return { status: HttpStatus.NOT_FOUND, error: 'UNKNOWN_PRODUCT' };
  if (error instanceof FencedWriteRefusedError) return { status: HttpStatus.CONFLICT, error: 'STALE_LOCK' };
  if (error instanceof VersionConflictError) return { status: HttpStatus.CONFLICT, error: 'CONFLICT' };
  if (error instanceof LockLostError) return { status: HttpStatus.CONFLICT, error: 'LOCK_LOST' };
  if (error instanceof LockAcquireTimeoutError) return { status: HttpStatus.LOCKED, error: 'LOCK_BUSY' };
  if (error instanceof LockBackendUnavailableError) return { status: HttpStatus.SERVICE_UNAVAILABLE, error: 'LOCK_BACKEND_UNAVAILABLE' };
  // Replicas did not confirm the lock in time (during a failover, say): given back, try again.
  if (error instanceof LockNotReplicatedError) return { status: HttpStatus.SERVICE_UNAVAILABLE, error: 'LOCK_NOT_REPLICATED' };
  if (error instanceof InvalidLockOptionsError) return { status: HttpStatus.BAD_REQUEST, error: 'INVALID_LOCK_INPUT' };
  if (error instanceof DistributedLockError) return { status: HttpStatus.INTERNAL_SERVER_ERROR, error: 'LOCK_ERROR' };
  // The shop's own database went away (restart, lost connection): the buyer may try again, as for a lock backend.
  if (isDatabaseUnavailable(error)) return { status: HttpStatus.SERVICE_UNAVAILABLE, error: 'DATABASE_UNAVAILABLE' };
  return undefined;
}

@Catch()
export class LockErrorsFilter implements ExceptionFilter {
  private readonly logger = new Logger('LockErrorsFilter');

  catch(exception: unknown, host: ArgumentsHost): void {
    const response = host.switchToHttp().getResponse<Response>();
    if (exception instanceof HttpException) {
      response.status(exception.getStatus()).json(exception.getResponse());
      return;
    }
    const mapped = mapError(exception);
    if (!mapped) this.logger.error(exception instanceof Error ? (exception.stack ?? exception.message) : String(exception));
    const { status, error } = mapped ?? { status: HttpStatus.INTERNAL_SERVER_ERROR, error: 'INTERNAL' };
    response.status(status).json({ statusCode: status, error, message: exception instanceof Error ? exception.message : 'unexpected error' });
  }
}

const DATABASE_DOWN_CODES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'EPIPE',
  'ETIMEDOUT',
  // mysql2
  'PROTOCOL_CONNECTION_LOST',
  'ER_SERVER_SHUTDOWN',
  'ER_CONNECTION_KILLED',
  // PostgreSQL: the server shutting down or starting up (57P01–57P03), the connection failed or gone (08xxx)
  '57P01',
  '57P02',
  '57P03',
  '08000',
  '08001',
  '08003',
  '08006',
]);

/** A driver error that means "the database is not reachable right now", not "the query is wrong". */
function isDatabaseUnavailable(error: unknown): boolean {
  const candidate = error as { code?: unknown; driverError?: { code?: unknown }; message?: unknown } | null;
  const code = candidate?.driverError?.code ?? candidate?.code;
  if (typeof code === 'string' && DATABASE_DOWN_CODES.has(code)) return true;
  return typeof candidate?.message === 'string' && /Connection lost|Pool is closed|connection is in closed state|Can't add new command when connection is in closed state|Connection terminated|is not queryable/i.test(candidate.message);
}
