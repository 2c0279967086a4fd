// The README's quick start and the docs' set-ups are files of the consumer apps that `npm run test:consumers`
// installs from the packed tarball, builds and runs. A block announced by `<!-- from <path> -->` is that whole
// file, as it is: a user copies it and has every line it needs (no `// …` gaps), and a block that no longer
// compiles fails the consumer check that builds its app. The other blocks are compiled by
// scripts/docs-code/docs-code.spec.ts.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { allCodeBlocks, codeBlocksOf, ROOT } from '../docs-code/code-blocks';

describe('README and docs blocks copied from the consumer apps', () => {
  const copied = allCodeBlocks().filter((block) => block.from !== undefined);

  it('the quick start shows whole files of the Nest 12 app, and the observability set-up its telemetry file', () => {
    const readme = copied.filter((block) => block.doc === 'README.md').map((block) => block.from);
    expect(readme).toEqual(
      expect.arrayContaining([
        'test/consumers/nest12-esm/src/app.module.ts',
        'test/consumers/nest12-esm/src/counter.service.ts',
        'test/consumers/nest12-esm/src/redis-counter.store.ts',
        'test/consumers/nest12-esm/src/counter.controller.ts',
      ]),
    );
    expect(copied.map((block) => block.from)).toContain('test/consumers/nest12-esm/src/telemetry.ts');
  });

  it.each(copied.map((block) => [`${block.doc}:${block.line} ${block.from}`, block] as const))('%s is that whole file', (_, block) => {
    expect(block.from).toMatch(/^test\/consumers\/[^/]+\/src\//);
    const file = readFileSync(join(ROOT, block.from as string), 'utf8');
    expect(block.code.trimEnd()).toBe(file.trimEnd());
  });

  it('no README code block leaves lines out (`// …`)', () => {
    const gaps = codeBlocksOf('README.md').filter((block) => /^\s*(\/\/|#)\s*…\s*$/m.test(block.code));
    expect(gaps.map((block) => `README.md:${block.line}`)).toEqual([]);
  });
});
