import { createRequire } from "node:module";
import { describe, expect, it } from "vitest";
import { AlmaError, loadPeer, MissingDependencyError } from "../src/index.js";

const require = createRequire(import.meta.url);

/**
 * The stores' drivers (`better-sqlite3`, `pg`) are optional peers, loaded by `loadPeer` when a store
 * first needs them: a missing one is a typed error that names the package and how to install it.
 */
describe("loadPeer", () => {
  it("returns the package when it is installed", () => {
    expect(loadPeer<typeof import("node:path")>("node:path", "A test", require).sep).toBe("/");
  });

  it("names a missing package in a MissingDependencyError", () => {
    let thrown: unknown;
    try {
      loadPeer("alma-not-installed-driver", "The SQLite store", require);
    } catch (error) {
      thrown = error;
    }
    expect(thrown).toBeInstanceOf(MissingDependencyError);
    expect(thrown).toBeInstanceOf(AlmaError);
    expect(thrown).toMatchObject({
      code: "missing_dependency",
      packageName: "alma-not-installed-driver",
      retryable: false,
      message:
        "The SQLite store needs the package alma-not-installed-driver, which is not installed: npm install alma-not-installed-driver",
    });
  });

  it("rethrows any other failure as it is (a module the package itself cannot find)", () => {
    const inner = Object.assign(new Error("Cannot find module 'bindings'"), {
      code: "MODULE_NOT_FOUND",
    });
    const load = () => {
      throw inner;
    };
    expect(() => loadPeer("better-sqlite3", "The SQLite store", load)).toThrow(inner);
  });
});
