import { statSync } from "node:fs";
import { dirname, join, resolve } from "node:path";

/** The name of a host's home directory when `ALMA_HOME` does not name one. */
export const HOME_DIR = ".alma";

function isDirectory(path: string): boolean {
  try {
    return statSync(path).isDirectory();
  } catch {
    return false;
  }
}

/**
 * The host's home: `ALMA_HOME` (relative to `cwd`) when set; else the nearest existing `.alma/`
 * from `cwd` up to the filesystem's root, as git finds `.git/`, so `npx alma …` in any subfolder
 * of the project reads the secrets and the store of the host started at its top; else `cwd/.alma`
 * (created when something is first written there).
 */
export function findHome(almaHome: string | undefined, cwd: string): string {
  if (almaHome !== undefined) return resolve(cwd, almaHome);
  for (let dir = resolve(cwd); ; dir = dirname(dir)) {
    if (isDirectory(join(dir, HOME_DIR))) return join(dir, HOME_DIR);
    if (dirname(dir) === dir) break;
  }
  return resolve(cwd, HOME_DIR);
}
