import { BadRequestException, Body, Controller, Get, HttpCode, Inject, Post, Query, UseGuards, type Type } from '@nestjs/common';
import { LockRegistry } from '../lock-registry';
import type { LockService } from '../../locking/lock-service';
import { httpErrorOf, keyShown, optionalName, requestedKeys, type LockBreakAnswer, type LockPageAnswer, type LockQueryAnswer, type PermitsQueryAnswer } from './lock-operations-answers';
import type { ResolvedLockOperationsOptions } from './lock-operations-options';

/**
 * The operator's endpoints at `options.path`, behind `options.guards`: `GET ?key=…` answers
 * `LockService.query` for each key, `GET /prefix?prefix=…` `LockService.queryPrefix` (a page of keys),
 * `GET /permits?key=…` `LockService.queryPermits` for each semaphore, and
 * with `allowBreak`, `POST /break` runs `LockService.breakLock`.
 * Keys are named as the application's `LockService` takes them (its prefix is added; a feature module's
 * prefix is part of the key here), and answered as the telemetry shows them on spans: the whole key, with
 * the prefix, hashed or plain. A class is made per registration, as its route is the user's.
 */
export function lockOperationsController(options: ResolvedLockOperationsOptions): Type<unknown> {
  @Controller(options.path)
  class LockOperationsController {
    protected readonly show: ReturnType<typeof keyShown>;

    constructor(@Inject(LockRegistry) protected readonly registry: LockRegistry) {
      this.show = keyShown(options.keys ?? registry.telemetry?.key ?? 'hashed');
    }

    /** Who holds each key and who waits for it, from the strategy's backend. */
    @Get()
    async query(@Query('key') key: unknown, @Query('strategy') strategy: unknown): Promise<LockQueryAnswer> {
      const [name, locks] = await this.answerEach(key, strategy, (service, each) => service.query(each));
      return { strategy: name, locks };
    }

    /** The held keys under `prefix`, a page at a time (`LockService.queryPrefix`); `limit` and `cursor` as it takes them. */
    @Get('prefix')
    async prefix(@Query('prefix') prefix: unknown, @Query('limit') limit: unknown, @Query('cursor') cursor: unknown, @Query('strategy') strategy: unknown): Promise<LockPageAnswer> {
      if (typeof prefix !== 'string') throw new BadRequestException('Name the prefix: ?prefix=<prefix> (empty for every key: ?prefix=).');
      const [name, service] = this.serviceOf(strategy);
      const options = { ...(limit === undefined ? {} : { limit: Number(limit) }), ...(cursor === undefined ? {} : { cursor: optionalName(cursor, 'cursor') }) };
      try {
        const page = await service.queryPrefix(prefix, options);
        return { strategy: name, locks: page.locks.map((lock) => ({ ...lock, key: this.show.key(service.prefix + lock.key) })), next: page.next };
      } catch (error) {
        throw httpErrorOf(error, service.prefix + prefix, this.show);
      }
    }

    /** Who holds places of each semaphore and who waits, from the strategy's backend. */
    @Get('permits')
    async permits(@Query('key') key: unknown, @Query('strategy') strategy: unknown): Promise<PermitsQueryAnswer> {
      const [name, semaphores] = await this.answerEach(key, strategy, (service, each) => service.queryPermits(each));
      return { strategy: name, semaphores };
    }

    /** Asks the strategy's service about each requested key, and shows each answer's key as the options say. */
    private async answerEach<T extends { key: string }>(
      key: unknown,
      strategy: unknown,
      ask: (service: LockService, key: string) => Promise<T>,
    ): Promise<[string, Array<Omit<T, 'key'> & { key: string | null }>]> {
      const keys = requestedKeys(key);
      const [name, service] = this.serviceOf(strategy);
      const answers = await Promise.all(
        keys.map(async (each) => {
          try {
            return { ...(await ask(service, each)), key: this.show.key(service.prefix + each) };
          } catch (error) {
            throw httpErrorOf(error, service.prefix + each, this.show);
          }
        }),
      );
      return [name, answers];
    }

    protected serviceOf(strategy: unknown): [string, LockService] {
      const name = optionalName(strategy, 'strategy') ?? this.registry.defaultStrategy;
      try {
        return [name ?? '', this.registry.service({ strategy: name }, `DistributedLockModule.operations (${options.path})`)];
      } catch (error) {
        throw httpErrorOf(error, undefined, this.show);
      }
    }
  }

  if (!options.allowBreak) return guarded(LockOperationsController, options);

  @Controller(options.path)
  class LockOperationsWithBreakController extends LockOperationsController {
    /** Ends every hold of the key (`LockService.breakLock`), with the operator's reason, which is required. */
    @Post('break')
    @HttpCode(200)
    async break(@Body() body: unknown): Promise<LockBreakAnswer> {
      const request = (body ?? {}) as { key?: unknown; reason?: unknown; strategy?: unknown };
      if (typeof request.key !== 'string' || request.key === '') throw new BadRequestException('Name the key to break: { "key": "<key>", "reason": "<who and why>" }.');
      const key = request.key;
      const [name, service] = this.serviceOf(request.strategy);
      try {
        const broken = await service.breakLock(key, { reason: request.reason as string });
        return { strategy: name, key: this.show.key(service.prefix + key), broken };
      } catch (error) {
        throw httpErrorOf(error, service.prefix + key, this.show);
      }
    }
  }
  return guarded(LockOperationsWithBreakController, options);
}

/** The controller behind the user's guards (`@UseGuards` on the class). */
function guarded(controller: Type<unknown>, options: ResolvedLockOperationsOptions): Type<unknown> {
  if (options.guards.length > 0) UseGuards(...options.guards)(controller);
  return controller;
}
