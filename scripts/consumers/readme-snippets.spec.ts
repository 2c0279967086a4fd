// The README's install snippets are copied from the consumer apps that `npm run test:consumers` proves.
// A block announced by `<!-- from <path> -->` must appear in that file: each part between `// …` lines
// as consecutive lines, in order.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';

const ROOT = join(__dirname, '..', '..');
const SNIPPET = /<!-- from (\S+) -->\n```\w*\n([\s\S]*?)```/g;

function partsOf(block: string): string[][] {
  const parts: string[][] = [[]];
  for (const line of block.split('\n')) {
    if (line.trim() === '// …') parts.push([]);
    else if (line.trim() !== '') parts[parts.length - 1].push(line);
  }
  return parts.filter((part) => part.length > 0);
}

/** Where `part` starts as consecutive lines of `lines` at or after `from`, or -1. */
function indexOfLines(lines: string[], part: string[], from: number): number {
  for (let start = from; start + part.length <= lines.length; start += 1) {
    if (part.every((line, offset) => lines[start + offset] === line)) return start;
  }
  return -1;
}

describe('README snippets copied from the consumer apps', () => {
  const readme = readFileSync(join(ROOT, 'README.md'), 'utf8');
  const snippets = [...readme.matchAll(SNIPPET)].map((match) => ({ path: match[1], block: match[2] }));

  it('there are some', () => {
    expect(snippets.map((snippet) => snippet.path)).toEqual(
      expect.arrayContaining(['test/consumers/nest12-esm/src/app.module.ts', 'test/consumers/nest11-cjs/src/app.module.ts']),
    );
  });

  it.each(snippets.map((snippet, index) => [`${index + 1}: ${snippet.path}`, snippet] as const))('%s is in its file', (_, snippet) => {
    const lines = readFileSync(join(ROOT, snippet.path), 'utf8').split('\n');
    let from = 0;
    for (const part of partsOf(snippet.block)) {
      const at = indexOfLines(lines, part, from);
      expect({ part: part.join('\n'), found: at >= 0 }).toEqual({ part: part.join('\n'), found: true });
      from = at + part.length;
    }
  });
});
