import { defineTool, type JsonObject, type ToolContext } from "@alma-harness/core";
import { toStandardJsonSchema } from "@valibot/to-json-schema";
import { type } from "arktype";
import * as v from "valibot";
import { describe, expect, expectTypeOf, it } from "vitest";
import { z } from "zod";
import { validationError } from "./thrown.js";

const base = { name: "book", description: "Books a slot.", handler: () => "ok" };

describe("defineTool: Standard Schema from the real libraries", () => {
  it("zod 4: converted once to draft-07 by zod, refinements and defaults run on the call", async () => {
    const input = z.object({
      day: z.string().refine((day) => day !== "sunday", "the clinic is closed on sunday"),
      slots: z.number().int().min(1).default(1),
    });
    const tool = defineTool({ ...base, input });
    expect(tool.inputSchema).toMatchObject({
      type: "object",
      properties: { day: { type: "string" }, slots: { type: "integer", minimum: 1, default: 1 } },
      required: ["day"],
    });
    expect(tool.inputSchema).not.toHaveProperty("$schema");
    expect(await tool.validator.validate({ day: "monday" })).toEqual({
      ok: true,
      value: { day: "monday", slots: 1 },
    });
    expect(await tool.validator.validate({ day: "sunday" })).toEqual({
      ok: false,
      problem: "/day the clinic is closed on sunday",
    });
    // The JSON Schema (the wire's description) is checked first: the library sees only its shape.
    expect(await tool.validator.validate({ day: 3 })).toMatchObject({ ok: false });
  });

  it("zod 4: a transform gives the handler the library's output", async () => {
    const input = z.object({ code: z.string().transform((code) => code.toUpperCase()) });
    const tool = defineTool({ ...base, input });
    expect(tool.inputSchema).toMatchObject({ properties: { code: { type: "string" } } });
    expect(await tool.validator.validate({ code: "ab" })).toEqual({
      ok: true,
      value: { code: "AB" },
    });
  });

  it("zod 4: a part JSON Schema cannot describe is refused at registration", () => {
    const error = validationError(() =>
      defineTool({ ...base, input: z.object({ when: z.date() }) }),
    );
    expect(error.rule).toBe("json_schema");
    expect(error.message).toContain("cannot be described faithfully");
    expect(error.message).toContain('tool "book".input');
  });

  it("zod 4: an async refinement runs, and its failure is a problem", async () => {
    const input = z.object({
      id: z.string().refine(async (id) => id.startsWith("p-"), "not a patient id"),
    });
    const tool = defineTool({ ...base, input });
    const pending = tool.validator.validate({ id: "x" });
    expect(pending).toBeInstanceOf(Promise);
    expect(await pending).toEqual({ ok: false, problem: "/id not a patient id" });
  });

  it("valibot, through its own toStandardJsonSchema: checks stay off the wire and run", async () => {
    const input = toStandardJsonSchema(
      v.object({
        day: v.pipe(
          v.string(),
          v.minLength(3),
          v.check((day) => day !== "sunday", "closed on sunday"),
        ),
      }),
    );
    const tool = defineTool({ ...base, input });
    expect(tool.inputSchema).toEqual({
      type: "object",
      properties: { day: { type: "string", minLength: 3 } },
      required: ["day"],
    });
    expect(await tool.validator.validate({ day: "sunday" })).toEqual({
      ok: false,
      problem: "/day closed on sunday",
    });
    expect(await tool.validator.validate({ day: "monday" })).toEqual({
      ok: true,
      value: { day: "monday" },
    });
  });

  it("valibot without its converter, or with a part it cannot describe, is refused", () => {
    const bare = validationError(() =>
      defineTool({ ...base, input: v.object({ day: v.string() }) as never }),
    );
    expect(bare.message).toContain("toStandardJsonSchema");
    const date = validationError(() =>
      defineTool({ ...base, input: toStandardJsonSchema(v.object({ when: v.date() })) }),
    );
    expect(date.rule).toBe("json_schema");
  });

  it("arktype: a narrowing predicate runs; a Date or bigint is refused, never widened to {}", async () => {
    const input = type({ day: type("string").narrow((day) => day !== "sunday"), n: "number" });
    const tool = defineTool({ ...base, input });
    expect(tool.inputSchema).toEqual({
      type: "object",
      properties: { day: { type: "string" }, n: { type: "number" } },
      required: ["day", "n"],
    });
    const refused = await tool.validator.validate({ day: "sunday", n: 1 });
    expect(refused).toMatchObject({ ok: false });
    expect(refused.ok === false && refused.problem.startsWith("/day ")).toBe(true);
    for (const bad of [type({ when: "Date" }), type({ big: "bigint" })]) {
      expect(validationError(() => defineTool({ ...base, input: bad })).rule).toBe("json_schema");
    }
  });

  it("a library whose validate throws, or answers outside the standard shape, throws", async () => {
    const input = z.object({
      id: z.string().refine(() => {
        throw new Error("bug in the tool");
      }),
    });
    const tool = defineTool({ ...base, input });
    // zod answers a throwing refinement with a rejected promise; either way it never reads as input.
    await expect(async () => tool.validator.validate({ id: "x" })).rejects.toThrow(
      "bug in the tool",
    );
    const odd = defineTool({
      ...base,
      input: {
        "~standard": {
          version: 1,
          vendor: "odd",
          jsonSchema: { input: () => ({ type: "object" }) },
          validate: () => ({}) as never,
        },
      },
    });
    expect(() => odd.validator.validate({})).toThrow("neither value nor issues");
  });

  it("a ~standard getter that throws, or that is not an object, is refused at registration", () => {
    const throwing = Object.defineProperty({}, "~standard", {
      get() {
        throw new Error("hostile");
      },
    });
    expect(validationError(() => defineTool({ ...base, input: throwing as never })).rule).toBe(
      "json_schema",
    );
    expect(
      validationError(() => defineTool({ ...base, input: { "~standard": 3 } as never })).rule,
    ).toBe("json_schema");
  });

  it("a long issue message is bounded", async () => {
    const input = z.object({ id: z.string().refine(() => false, "x".repeat(5000)) });
    const checked = await defineTool({ ...base, input }).validator.validate({ id: "a" });
    expect(checked.ok === false && checked.problem.length).toBeLessThanOrEqual(301);
  });
});

describe("defineTool: types flow from the schema", () => {
  it("a zod schema types the handler's argument (output) and authorize's (input)", () => {
    defineTool({
      ...base,
      input: z.object({ day: z.string(), slots: z.number().default(1) }),
      authorize: (input) => {
        expectTypeOf(input).toEqualTypeOf<{ day: string; slots?: number | undefined }>();
        return { action: "book", subject: input.day };
      },
      handler: (input, ctx) => {
        expectTypeOf(input).toEqualTypeOf<{ day: string; slots: number }>();
        expectTypeOf(ctx).toEqualTypeOf<ToolContext>();
        return input.slots;
      },
    });
    defineTool({
      ...base,
      input: z.object({ n: z.number() }),
      // @ts-expect-error: the handler must take the schema's output type
      handler: (input: { n: string }) => input.n,
    });
  });

  it("valibot and arktype type the handler too; a JSON Schema gives a JsonObject", () => {
    defineTool({
      ...base,
      input: toStandardJsonSchema(v.object({ day: v.string() })),
      handler: (input) => expectTypeOf(input).toEqualTypeOf<{ day: string }>(),
    });
    defineTool({
      ...base,
      input: type({ day: "string" }),
      handler: (input) => expectTypeOf(input).toEqualTypeOf<{ day: string }>(),
    });
    defineTool({
      ...base,
      input: { type: "object" },
      handler: (input) => expectTypeOf(input).toEqualTypeOf<JsonObject>(),
    });
  });
});
