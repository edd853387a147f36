import {
  compileSchema,
  DEFAULT_MAX_OUTPUT_CHARS,
  defineProviderTool,
  defineTool,
  isToolError,
  type JsonObject,
  MAX_OUTPUT_CHARS_LIMIT,
  type SchemaInput,
  SEARCH_TOOLS_NAME,
  shortToolName,
  type StandardJsonSchemaLike,
  type ToolConfig,
  toolError,
  toolSpec,
  validateToolName,
} from "@alma-harness/core";
import { describe, expect, it } from "vitest";
import { validationError } from "./thrown.js";

const LOOKUP_SCHEMA = {
  type: "object",
  properties: { id: { type: "string", minLength: 1 } },
  required: ["id"],
  additionalProperties: false,
} as const;

function config(overrides: Partial<Record<keyof ToolConfig, unknown>> = {}): ToolConfig {
  return {
    name: "lookup_patient",
    description: "Looks up a patient by id.",
    input: LOOKUP_SCHEMA,
    handler: () => "ok",
    ...overrides,
  } as ToolConfig;
}

/** A Standard Schema that can describe itself as JSON Schema, recording how it was asked. */
function standardSchema(schema: Record<string, unknown>) {
  const calls: { target: string }[] = [];
  const value: StandardJsonSchemaLike = {
    "~standard": {
      version: 1,
      vendor: "test",
      jsonSchema: {
        input: (options) => {
          calls.push({ target: options.target });
          return structuredClone(schema);
        },
      },
    },
  };
  return { value, calls };
}

describe("defineTool: names", () => {
  it("accepts names of 1 and 64 characters of [A-Za-z0-9_-]", () => {
    expect(defineTool(config({ name: "a" })).name).toBe("a");
    const long = "A-z_9".repeat(12) + "abcd";
    expect(long).toHaveLength(64);
    expect(defineTool(config({ name: long })).name).toBe(long);
  });

  it("rejects empty and 65-character names", () => {
    expect(validationError(() => defineTool(config({ name: "" }))).rule).toBe("tool_name");
    expect(validationError(() => defineTool(config({ name: "a".repeat(65) }))).rule).toBe(
      "tool_name",
    );
  });

  it("rejects characters outside the set, and non-strings", () => {
    for (const name of [
      "has space",
      "dot.name",
      "slash/name",
      "ñame",
      "emoji😀",
      "colon:name",
      "new\nline",
      42,
      null,
      undefined,
    ]) {
      const error = validationError(() => defineTool(config({ name })));
      expect(error.rule, String(name)).toBe("tool_name");
      expect(error.path).toBe("tool.name");
    }
  });

  it("splits a server prefix from the short name at the last __", () => {
    expect(defineTool(config({ name: "crm__lookup" })).shortName).toBe("lookup");
    expect(defineTool(config({ name: "lookup" })).shortName).toBe("lookup");
    expect(shortToolName("a__b__c")).toBe("c");
    expect(shortToolName("__hidden")).toBe("hidden");
    // A trailing __ leaves no short name: the whole name is kept.
    expect(shortToolName("server__")).toBe("server__");
  });

  it("reserves search_tools for the engine", () => {
    expect(SEARCH_TOOLS_NAME).toBe("search_tools");
    const error = validationError(() => defineTool(config({ name: "search_tools" })));
    expect(error.rule).toBe("reserved");
    expect(error.message).toContain("search_tools");
  });

  it("validateToolName names the path it was given", () => {
    expect(validateToolName("ok_name")).toBe("ok_name");
    expect(validationError(() => validateToolName("bad name", "request.tools[2]")).path).toBe(
      "request.tools[2]",
    );
  });
});

describe("defineTool: configuration", () => {
  it("rejects a handler that is not a function", () => {
    for (const handler of [undefined, null, "run", {}, 1]) {
      const error = validationError(() => defineTool(config({ handler })));
      expect(error.rule).toBe("function");
      expect(error.path).toBe('tool "lookup_patient".handler');
    }
  });

  it("rejects authorize and access hooks that are not functions", () => {
    expect(validationError(() => defineTool(config({ authorize: "x" }))).path).toBe(
      'tool "lookup_patient".authorize',
    );
    expect(validationError(() => defineTool(config({ access: {} }))).path).toBe(
      'tool "lookup_patient".access',
    );
  });

  it("bounds the description to 1-4096 characters", () => {
    expect(defineTool(config({ description: "x" })).description).toBe("x");
    expect(defineTool(config({ description: "x".repeat(4096) })).description).toHaveLength(4096);
    for (const description of ["", "x".repeat(4097), undefined, 5]) {
      expect(validationError(() => defineTool(config({ description }))).rule).toBe("string_1_4096");
    }
  });

  it("applies the default output bound of 16,000 characters", () => {
    expect(DEFAULT_MAX_OUTPUT_CHARS).toBe(16_000);
    expect(defineTool(config()).maxOutputChars).toBe(16_000);
  });

  it("accepts maxOutputChars from 1 to the limit and rejects anything else", () => {
    expect(defineTool(config({ maxOutputChars: 1 })).maxOutputChars).toBe(1);
    expect(defineTool(config({ maxOutputChars: MAX_OUTPUT_CHARS_LIMIT })).maxOutputChars).toBe(
      MAX_OUTPUT_CHARS_LIMIT,
    );
    for (const maxOutputChars of [
      0,
      -1,
      MAX_OUTPUT_CHARS_LIMIT + 1,
      1.5,
      Number.NaN,
      Number.POSITIVE_INFINITY,
      "100",
    ]) {
      const error = validationError(() => defineTool(config({ maxOutputChars })));
      expect(error.rule, String(maxOutputChars)).toBe("range");
      expect(error.path).toBe('tool "lookup_patient".maxOutputChars');
    }
  });

  it("is deferred only when deferred is exactly true", () => {
    expect(defineTool(config()).deferred).toBe(false);
    expect(defineTool(config({ deferred: true })).deferred).toBe(true);
    expect(defineTool(config({ deferred: "yes" })).deferred).toBe(false);
  });

  it("defaults the authorization intent to the tool's name, and keeps a given one", () => {
    const input = { id: "p1" };
    expect(defineTool(config()).authorize(input)).toEqual({
      action: "lookup_patient",
      subject: "*",
    });
    const custom = defineTool(
      config({ authorize: (i: JsonObject) => ({ action: "read", subject: `patients/${i.id}` }) }),
    );
    expect(custom.authorize(input)).toEqual({ action: "read", subject: "patients/p1" });
  });

  it("returns a frozen definition whose wire spec is name, description and schema", () => {
    const tool = defineTool(config());
    expect(Object.isFrozen(tool)).toBe(true);
    expect(toolSpec(tool)).toEqual({
      name: "lookup_patient",
      description: "Looks up a patient by id.",
      inputSchema: LOOKUP_SCHEMA,
    });
  });

  it("rejects a tool that is not an object", () => {
    expect(validationError(() => defineTool(null as unknown as ToolConfig)).path).toBe("tool");
  });
});

describe("defineTool: input schema", () => {
  it("checks input against the JSON Schema", () => {
    const tool = defineTool(config());
    expect(tool.validator.check({ id: "p1" })).toBeUndefined();
    expect(tool.validator.check({})).toMatch(/id/);
    expect(tool.validator.check({ id: "" })).toMatch(/\/id/);
    expect(tool.validator.check({ id: "p1", extra: 1 })).toBeDefined();
    expect(tool.validator.check({ id: 7 })).toBeDefined();
  });

  it("compiles once: the schema is a frozen copy, detached from the original", () => {
    const schema = structuredClone(LOOKUP_SCHEMA) as {
      properties: { id: { type: string; minLength?: number } };
    };
    const tool = defineTool(config({ input: schema }));
    schema.properties.id.type = "number";
    delete schema.properties.id.minLength;
    expect(tool.validator.check({ id: "p1" })).toBeUndefined();
    expect(tool.validator.check({ id: 3 })).toBeDefined();
    expect(Object.isFrozen(tool.inputSchema)).toBe(true);
    expect(Object.isFrozen((tool.inputSchema.properties as JsonObject).id)).toBe(true);
  });

  it("drops $schema from the wire copy", () => {
    const tool = defineTool(
      config({ input: { $schema: "http://json-schema.org/draft-07/schema#", ...LOOKUP_SCHEMA } }),
    );
    expect(tool.inputSchema).toEqual(LOOKUP_SCHEMA);
  });

  it("rejects schemas that are not objects of type object, or not valid JSON Schema", () => {
    for (const input of [
      { type: "string" },
      {},
      [],
      null,
      "schema",
      { type: "object", properties: { a: { type: "no-such-type" } } },
    ]) {
      const error = validationError(() => defineTool(config({ input })));
      expect(error.rule).toBe("json_schema");
      expect(error.path).toBe('tool "lookup_patient".input');
    }
  });

  it("rejects a schema that is not JSON data", () => {
    const cyclic: Record<string, unknown> = { type: "object" };
    cyclic.self = cyclic;
    expect(validationError(() => defineTool(config({ input: cyclic }))).rule).toBe("json_schema");
  });

  it("registers the same schema $id more than once (two tools, or the same tool twice)", () => {
    const withId = { $id: "https://example.test/schemas/lookup", ...LOOKUP_SCHEMA };
    const first = defineTool(config({ input: withId }));
    const second = defineTool(config({ name: "lookup_again", input: structuredClone(withId) }));
    expect(first.validator.check({ id: "p" })).toBeUndefined();
    expect(second.validator.check({ id: 1 })).toBeDefined();
  });
});

describe("defineTool: Standard Schema input", () => {
  it("converts a Standard Schema with ~standard.jsonSchema.input once, at registration", () => {
    const { value, calls } = standardSchema({ ...LOOKUP_SCHEMA });
    const tool = defineTool(config({ input: value }));
    expect(calls).toHaveLength(1);
    expect(tool.inputSchema).toEqual(LOOKUP_SCHEMA);
    expect(tool.validator.check({ id: "p1" })).toBeUndefined();
    expect(tool.validator.check({ id: 1 })).toBeDefined();
    tool.validator.check({ id: "again" });
    expect(calls).toHaveLength(1);
  });

  it("asks for a JSON Schema dialect its validator checks faithfully (tuples included)", () => {
    // A converter that honors the requested target, as Standard JSON Schema libraries do.
    const tuple: StandardJsonSchemaLike = {
      "~standard": {
        version: 1,
        vendor: "test",
        jsonSchema: {
          input: ({ target }) => ({
            type: "object",
            properties: {
              pair:
                target === "draft-2020-12"
                  ? {
                      type: "array",
                      prefixItems: [{ type: "string" }, { type: "number" }],
                      items: false,
                    }
                  : {
                      type: "array",
                      items: [{ type: "string" }, { type: "number" }],
                      additionalItems: false,
                    },
            },
            required: ["pair"],
          }),
        },
      },
    };
    const tool = defineTool(config({ input: tuple }));
    expect(tool.validator.check({ pair: ["a", 1] })).toBeUndefined();
    expect(tool.validator.check({ pair: [1, "a"] })).toBeDefined();
    expect(tool.validator.check({ pair: ["a", 1, 2] })).toBeDefined();
  });

  it("rejects a Standard Schema that cannot describe itself as JSON Schema", () => {
    const opaque = {
      "~standard": { version: 1, vendor: "test", validate: () => ({ value: {} }) },
    } as unknown as SchemaInput;
    const error = validationError(() => defineTool(config({ input: opaque })));
    expect(error.rule).toBe("json_schema");
    expect(error.path).toBe('tool "lookup_patient".input');
  });

  it("turns a converter that throws into a ValidationError naming the tool", () => {
    const failing: StandardJsonSchemaLike = {
      "~standard": {
        version: 1,
        vendor: "test",
        jsonSchema: {
          input: () => {
            throw new Error("cannot represent transforms");
          },
        },
      },
    };
    const error = validationError(() => defineTool(config({ input: failing })));
    expect(error.rule).toBe("json_schema");
    expect(error.path).toBe('tool "lookup_patient".input');
  });

  it("holds a converted schema to the same rules (type object)", () => {
    const { value } = standardSchema({ type: "string" });
    expect(validationError(() => defineTool(config({ input: value }))).rule).toBe("json_schema");
  });

  it("compileSchema is usable on its own and names its path", () => {
    const compiled = compileSchema(LOOKUP_SCHEMA, "output");
    expect(compiled.check({ id: "x" })).toBeUndefined();
    expect(validationError(() => compileSchema({ type: "array" }, "request.output")).path).toBe(
      "request.output",
    );
  });
});

describe("toolError", () => {
  it("is recognized by identity", () => {
    const marked = toolError({ message: "patient not found" });
    expect(isToolError(marked)).toBe(true);
    expect(marked.payload).toEqual({ message: "patient not found" });
    expect(Object.isFrozen(marked)).toBe(true);
  });

  it("does not recognize a clone or a look-alike", () => {
    const marked = toolError("not found");
    expect(isToolError(structuredClone(marked))).toBe(false);
    expect(isToolError({ ...marked })).toBe(false);
    expect(isToolError({ payload: "not found" })).toBe(false);
  });

  it("leaves a domain object with isError: true as ordinary output", () => {
    expect(isToolError({ isError: true, payload: "x" })).toBe(false);
    expect(isToolError({ isError: true })).toBe(false);
  });

  it("recognizes nothing that is not an object", () => {
    for (const value of [null, undefined, "error", 1, true]) expect(isToolError(value)).toBe(false);
  });
});

describe("defineProviderTool", () => {
  it("defaults the sensitivity ceiling to internal", () => {
    expect(defineProviderTool({ kind: "web_search" })).toEqual({
      kind: "web_search",
      maxSensitivity: "internal",
    });
    expect(
      defineProviderTool({ kind: "web_search", maxSensitivity: "public", maxUses: 3 }),
    ).toEqual({
      kind: "web_search",
      maxSensitivity: "public",
      maxUses: 3,
    });
  });

  it("rejects other kinds and maxUses outside 1-100", () => {
    expect(
      validationError(() => defineProviderTool({ kind: "code_exec" as "web_search" })).rule,
    ).toBe("closed");
    expect(defineProviderTool({ kind: "web_search", maxUses: 100 }).maxUses).toBe(100);
    for (const maxUses of [0, 101, 1.5]) {
      expect(validationError(() => defineProviderTool({ kind: "web_search", maxUses })).path).toBe(
        "providerTool.maxUses",
      );
    }
  });
});
