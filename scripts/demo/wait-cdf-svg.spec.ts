import { waitCdfSvg } from './wait-cdf-svg';
import type { WaitDistribution } from './lock-wait-metrics';

const NAMES = ['row', 'row-mysql', 'pessimistic', 'redis', 'redlock', 'zookeeper', 'etcd', 'advisory-mysql', 'row-postgres', 'advisory-postgres', 'pessimistic-postgres'];
const distribution = (strategy: string): WaitDistribution => ({ strategy, bounds: [0.001, 0.01, 0.1, 1, Infinity], counts: [10, 400, 900, 1000, 1000], total: 1000 });

describe('waitCdfSvg', () => {
  it('tells apart every line of `npm run demo -- --strategies all` (11 locked sales): a colour and dash of its own each', () => {
    const svg = waitCdfSvg(NAMES.map(distribution));
    const styles = [...svg.matchAll(/<polyline [^>]*\/>/g)].map(([line]) => `${/stroke="([^"]+)"/.exec(line)?.[1]}|${/stroke-dasharray="([^"]+)"/.exec(line)?.[1] ?? ''}`);
    expect(styles).toHaveLength(NAMES.length);
    expect(new Set(styles).size).toBe(NAMES.length);
  });

  it('keeps the lines apart past the palette: 36 lines, 36 styles (the colours again, dashed)', () => {
    const many = Array.from({ length: 36 }, (_, i) => distribution(`strategy-${i}`));
    const styles = [...waitCdfSvg(many).matchAll(/<polyline [^>]*\/>/g)].map(([line]) => `${/stroke="([^"]+)"/.exec(line)?.[1]}|${/stroke-dasharray="([^"]+)"/.exec(line)?.[1] ?? ''}`);
    expect(new Set(styles).size).toBe(36);
  });

  it('makes room for the longest legend label instead of cutting it at the edge', () => {
    const svg = waitCdfSvg(NAMES.map(distribution));
    const width = Number(/viewBox="0 0 (\d+)/.exec(svg)?.[1]);
    const legendX = Math.max(...[...svg.matchAll(/<text x="([\d.]+)"[^>]*class="legend">[a-z-]+ \(1000\)<\/text>/g)].map(([, x]) => Number(x)));
    // 12 px text: about 7 px per character of "pessimistic-postgres (1000)".
    expect(legendX + 7 * 'pessimistic-postgres (1000)'.length).toBeLessThanOrEqual(width);
  });
});
