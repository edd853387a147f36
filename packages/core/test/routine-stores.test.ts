import { inMemoryStores } from "@alma-harness/core/memory";
import { routineStoreContract } from "@alma-harness/testing";
import { describe, expect, it } from "vitest";

routineStoreContract("memory", () => inMemoryStores(), { describe, it, expect });
