// TypeDoc plugin (typedoc.json `plugin`): files each exported symbol of the API reference under a category
// by the folder it is declared in, so that the reference reads as the docs do (the module and decorators,
// LockService, errors, scheduled jobs, …) without a `@category` tag on every declaration. A declaration that
// carries its own `@category` keeps it. Each strategy and the strategy kit are entry points of their own;
// the kit's symbols are grouped by what an author does with them.
import { Comment, CommentTag, Converter, ReflectionKind } from 'typedoc';

/** The main entry's categories, by the path of the declaring file under libs/distributed-lock/src. */
const MAIN = [
  [/^nest\//, 'Module and decorators'],
  [/^locking\/key-template\b/, 'Module and decorators'],
  [/^locking\//, 'LockService'],
  [/^errors\//, 'Errors'],
  [/^scheduling\//, 'Scheduled jobs'],
  [/^election\//, 'Leader election'],
  [/^versioning\//, 'Optimistic concurrency'],
  [/^telemetry\//, 'Traces and metrics'],
  [/^strategies\/in-memory\//, 'In-memory strategy'],
];

/** The strategy kit's categories. */
const KIT = [
  [/^locking\/(lock-strategy\.interface|lock-lease|lock-options)\b/, 'The contract'],
  [/^locking\/wait-for-wake\b/, 'Waiting'],
  [/^locking\/hand-over-limits\b/, 'The line of contenders'],
  [/^locking\/(key-template|lock-key)\b/, 'Keys'],
  [/^(locking\/lock-observer|telemetry\/lock-observers)\b/, 'Observers'],
];

/** The category of a file for an entry point, or undefined (outside the library's sources, or unmatched). */
export function categoryOf(fileName, entry) {
  // An absolute path, or one relative to the library's package.json (a reference's target).
  const normal = fileName.replace(/\\/g, '/').replace(/^src\//, 'libs/distributed-lock/src/');
  const at = normal.indexOf('libs/distributed-lock/src/');
  if (at < 0) return undefined;
  const path = normal.slice(at + 'libs/distributed-lock/src/'.length);
  const table = entry === 'strategy-kit' ? KIT : entry === 'index' ? MAIN : [];
  return table.find(([pattern]) => pattern.test(path))?.[1];
}

function tag(reflection, file, entry) {
  if (reflection.comment?.getTag('@category')) return;
  const category = file && categoryOf(file, entry);
  if (!category) return;
  reflection.comment ??= new Comment();
  reflection.comment.blockTags.push(new CommentTag('@category', [{ kind: 'text', text: category }]));
}

/** @param {import('typedoc').Application} app */
export function load(app) {
  app.converter.on(Converter.EVENT_CREATE_DECLARATION, (context, reflection) => {
    // Only what an entry point exports: members of classes and interfaces stay with their owner.
    if (!reflection.parent?.kindOf(ReflectionKind.SomeModule)) return;
    tag(reflection, context.getSymbolFromReflection(reflection)?.declarations?.[0]?.getSourceFile().fileName, reflection.parent.name);
  });
  // A symbol two entry points export is declared in the first and a reference in the second: the
  // reference is filed by its target's file.
  app.converter.on(Converter.EVENT_RESOLVE_BEGIN, (context) => {
    for (const reflection of context.project.getReflectionsByKind(ReflectionKind.Reference)) {
      if (!reflection.parent?.kindOf(ReflectionKind.SomeModule)) continue;
      const target = reflection.tryGetTargetReflectionDeep();
      const id = target && context.project.getSymbolIdFromReflection(target);
      tag(reflection, id?.packagePath, reflection.parent.name);
    }
  });
}
