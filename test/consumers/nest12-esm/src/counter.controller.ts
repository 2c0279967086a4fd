import { Controller, Get, Inject, Param, Post } from '@nestjs/common';
import { COUNTER_STORE, CounterService, type CounterStore } from './counter.service.js';

@Controller('counter')
export class CounterController {
  constructor(
    private readonly counter: CounterService,
    @Inject(COUNTER_STORE) private readonly store: CounterStore,
  ) {}

  /** One increment of the counter `name`, under its lock; answers the new value. */
  @Post(':name')
  increment(@Param('name') name: string): Promise<number> {
    return this.counter.increment(name);
  }

  @Get(':name')
  read(@Param('name') name: string): Promise<number> {
    return this.store.read(name);
  }
}
