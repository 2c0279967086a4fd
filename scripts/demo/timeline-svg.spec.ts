import type { Hold } from '../../apps/demo-inventory/src/inventory/hold-log';
import { overlapping, timelineSvg } from './timeline-svg';

const hold = (instance: string, startedAt: number, endedAt: number, fencingToken: number | null = null): Hold => ({
  key: 'inventory:stock:x',
  instance,
  startedAt,
  endedAt,
  fencingToken,
  kind: fencingToken === null ? 'section' : 'lock',
});

describe('the sale timeline', () => {
  it('finds the sections that overlap, also one inside a long earlier one', () => {
    const long = hold('a', 0, 100);
    const inside = hold('b', 50, 60);
    const after = hold('c', 70, 80);
    const alone = hold('a', 120, 130);
    expect(overlapping([alone, after, inside, long])).toEqual(new Set([long, inside, after]));
    expect(overlapping([hold('a', 0, 10, 1), hold('b', 10, 20, 2)]).size).toBe(0);
  });

  it('draws one lane per instance, a bar per section, tokens in the tooltips and overlaps in red', () => {
    const svg = timelineSvg({ strategy: 'row', startedAt: 1_000, durationMs: 100, holds: [hold('shop-1', 1_000, 1_010, 7), hold('shop-2', 1_005, 1_020, 8)] });
    expect(svg).toContain('id="timeline-row"');
    expect(svg.match(/<rect class="hold overlap"/g)).toHaveLength(2);
    expect(svg).toContain('fencing token 7');
    expect(svg).toContain('>shop-1</text>');
    expect(svg).toContain('>shop-2</text>');
  });
});
