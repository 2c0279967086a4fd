// Preloaded (`-r`) into an app process to set its wall clock `CLOCK_OFFSET_MS` ahead (or behind, when
// negative) of the machine's: `Date.now()` and `new Date()` move, as they would on a host whose clock is
// off; timers and the monotonic clock do not. Cron schedules (Luxon reads `Date.now()`) follow the offset.
const offset = Number(process.env.CLOCK_OFFSET_MS ?? 0);

if (offset !== 0) {
  const RealDate = Date;
  class OffsetDate extends RealDate {
    constructor(...args: ConstructorParameters<DateConstructor> | []) {
      if (args.length === 0) super(RealDate.now() + offset);
      else super(...(args as ConstructorParameters<DateConstructor>));
    }

    static override now(): number {
      return RealDate.now() + offset;
    }
  }
  globalThis.Date = OffsetDate as DateConstructor;
}
