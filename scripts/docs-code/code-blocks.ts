// The fenced code blocks of the README and docs/, as CI checks them (docs-code.spec.ts, and
// scripts/consumers/readme-snippets.spec.ts for the blocks copied from the consumer apps). A block may be
// preceded by one HTML comment, invisible on GitHub, that says how it is checked:
// - `<!-- from test/consumers/<app>/src/<file> -->`: the whole file, as the consumer app has it (that app is
//   built by `npm run test:consumers`, so the block is compiled there);
// - `<!-- file: src/orders.service.ts -->`: the block is that file of the page's example app, so that the
//   page's other blocks can import it (`./orders.service.js`); later blocks naming the same file go on it
//   (a test file shown in steps).
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';

export const ROOT = join(__dirname, '..', '..');

export interface CodeBlock {
  /** The Markdown file, relative to the repository. */
  readonly doc: string;
  /** 1-based line of the block's first code line in the Markdown file. */
  readonly line: number;
  /** The fence's language: ts, bash, sql, … ('' when none). */
  readonly language: string;
  readonly code: string;
  /** `<!-- from path -->`: the file the block is copied from. */
  readonly from?: string;
  /** `<!-- file: path -->`: the file the block is (or goes on), in the page's example. */
  readonly file?: string;
}

/** README.md and every Markdown file under docs/, relative to the repository. */
export function documentationFiles(): string[] {
  const files = ['README.md'];
  const walk = (dir: string): void => {
    for (const entry of readdirSync(join(ROOT, dir)).sort()) {
      const path = join(dir, entry);
      if (statSync(join(ROOT, path)).isDirectory()) walk(path);
      else if (entry.endsWith('.md')) files.push(path);
    }
  };
  walk('docs');
  return files.map((file) => relative(ROOT, join(ROOT, file)));
}

/** The fenced blocks of one Markdown file, in order. */
export function codeBlocksOf(doc: string, markdown = readFileSync(join(ROOT, doc), 'utf8')): CodeBlock[] {
  const lines = markdown.split('\n');
  const blocks: CodeBlock[] = [];
  for (let i = 0; i < lines.length; i += 1) {
    const fence = /^(\s*)(```+)(\S*)\s*$/.exec(lines[i]);
    if (!fence) continue;
    const [, indent, ticks, language] = fence;
    const start = i + 1;
    let end = start;
    while (end < lines.length && !new RegExp(`^\\s*${ticks}\\s*$`).test(lines[end])) end += 1;
    const directive = i > 0 ? /^<!--\s*(from|file:)\s*(\S+)\s*-->$/.exec(lines[i - 1].trim()) : null;
    blocks.push({
      doc,
      line: start + 1,
      language,
      code: lines
        .slice(start, end)
        .map((line) => (line.startsWith(indent) ? line.slice(indent.length) : line))
        .join('\n'),
      from: directive?.[1] === 'from' ? directive[2] : undefined,
      file: directive?.[1] === 'file:' ? directive[2] : undefined,
    });
    i = end;
  }
  return blocks;
}

/** Every block of the README and docs/. */
export function allCodeBlocks(): CodeBlock[] {
  return documentationFiles().flatMap((doc) => codeBlocksOf(doc));
}
