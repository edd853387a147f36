// Reads the workspace packages and orders them so that every package comes after what it imports.
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";

export function workspaces(root = process.cwd()) {
  const out = [];
  for (const dir of ["packages", "apps"]) {
    const base = join(root, dir);
    if (!existsSync(base)) continue;
    for (const name of readdirSync(base).sort()) {
      const file = join(base, name, "package.json");
      if (!existsSync(file)) continue;
      const pkg = JSON.parse(readFileSync(file, "utf8"));
      out.push({ dir: join(dir, name), name: pkg.name, pkg });
    }
  }
  return out;
}

export function topological(list) {
  const byName = new Map(list.map((w) => [w.name, w]));
  const seen = new Set();
  const order = [];
  const visit = (w) => {
    if (seen.has(w.name)) return;
    seen.add(w.name);
    const deps = { ...w.pkg.dependencies, ...w.pkg.peerDependencies, ...w.pkg.devDependencies };
    for (const dep of Object.keys(deps)) if (byName.has(dep)) visit(byName.get(dep));
    order.push(w);
  };
  for (const w of list) visit(w);
  return order;
}
