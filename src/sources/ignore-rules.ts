/**
 * Which files of a folder are the app's source: the one set of rules the CLI and the dashboard
 * share (the dashboard bundles this file), so a folder uploads the same files whichever way it
 * goes. Nothing here touches a filesystem: the CLI walks a disk, the browser a dropped folder.
 */
import ignore, { type Ignore } from 'ignore';

/** Never uploaded: history and installed dependencies are not the app's source. */
export const ALWAYS_LEFT_OUT: ReadonlySet<string> = new Set(['.git', 'node_modules']);
/** Read in every folder, in this order: a later file's `!pattern` can take back an earlier one. */
export const IGNORE_FILES: readonly string[] = ['.gitignore', '.slipwayignore'];

/** The rules of one folder's ignore files, which match paths relative to that folder. */
export interface FolderRules {
  base: string;
  rules: Ignore;
}

/** One folder's rules from the texts of its ignore files, in IGNORE_FILES order. */
export function folderRules(base: string, texts: readonly string[]): FolderRules | undefined {
  if (texts.length === 0) return undefined;
  const rules = ignore();
  for (const text of texts) rules.add(text);
  return { base, rules };
}

/**
 * Whether `path` (relative to the root, `/`-separated) is left out by the rules of the folders
 * above it, outermost first, with git's precedence: the deepest file that has a say decides.
 */
export function ignoredBy(stack: readonly FolderRules[], path: string, isDir: boolean): boolean {
  for (let i = stack.length - 1; i >= 0; i--) {
    const { base, rules } = stack[i] as FolderRules;
    const inner = base ? path.slice(base.length + 1) : path;
    // `ignore` tells a folder from a file by the trailing slash (for patterns such as `dist/`).
    const verdict = rules.test(isDir ? `${inner}/` : inner);
    if (verdict.ignored) return true;
    if (verdict.unignored) return false;
  }
  return false;
}

/** What `pickSources` kept, and what it left out: a file, or a folder and the files under it. */
export interface Picked {
  kept: string[];
  leftOut: { path: string; folder: boolean; files: number }[];
}

/**
 * The same choice as a walk that does not enter ignored folders, made over a flat list of file
 * paths (what a browser hands over). `ignoreTexts` holds the texts of the list's ignore files.
 */
export function pickSources(paths: readonly string[], ignoreTexts: Map<string, string>): Picked {
  const rulesOf = new Map<string, FolderRules | undefined>();
  const rulesFor = (dir: string): FolderRules | undefined => {
    if (!rulesOf.has(dir)) {
      const texts = IGNORE_FILES.map((name) => ignoreTexts.get(dir ? `${dir}/${name}` : name));
      rulesOf.set(
        dir,
        folderRules(
          dir,
          texts.filter((t) => t !== undefined),
        ),
      );
    }
    return rulesOf.get(dir);
  };
  const kept: string[] = [];
  const leftOut = new Map<string, { path: string; folder: boolean; files: number }>();
  for (const path of [...paths].sort()) {
    const parts = path.split('/');
    const stack: FolderRules[] = [];
    let out: { path: string; folder: boolean } | undefined;
    for (let depth = 0; depth < parts.length && out === undefined; depth += 1) {
      const here = rulesFor(parts.slice(0, depth).join('/'));
      if (here) stack.push(here);
      const sub = parts.slice(0, depth + 1).join('/');
      const isDir = depth < parts.length - 1;
      const always = ALWAYS_LEFT_OUT.has(parts[depth] as string);
      if (always || ignoredBy(stack, sub, isDir)) out = { path: sub, folder: isDir };
    }
    if (out === undefined) kept.push(path);
    else {
      const entry = leftOut.get(out.path) ?? { ...out, files: 0 };
      entry.files += 1;
      leftOut.set(out.path, entry);
    }
  }
  return { kept, leftOut: [...leftOut.values()] };
}
