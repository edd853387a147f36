import { inMemoryMemoryStores } from "@alma-harness/memory/testing";
import { memoryContract } from "@alma-harness/testing";
import { describe, expect, it } from "vitest";

memoryContract("memory", () => inMemoryMemoryStores(), { describe, it, expect });
