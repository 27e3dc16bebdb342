// decodeParams(), the single decoder of untrusted input: anything that does not match its TypeBox
// schema is INVALID_PARAMS naming the first problems.
import type { Static, TSchema } from "typebox";
import { Compile } from "typebox/compile";
import { AppError } from "./app-error.ts";

const compiled = new WeakMap<TSchema, ReturnType<typeof Compile>>();

/** Checks untrusted input against a schema; a mismatch is INVALID_PARAMS naming the first problems. */
export function decodeParams<S extends TSchema>(schema: S, value: unknown): Static<S> {
  let validator = compiled.get(schema);
  if (!validator) {
    validator = Compile(schema);
    compiled.set(schema, validator);
  }
  if (validator.Check(value)) return value as Static<S>;
  const problems = [...validator.Errors(value)]
    .slice(0, 5)
    .map((e) => `${e.instancePath || "/"} ${e.message}`);
  throw new AppError("INVALID_PARAMS", `invalid params: ${problems.join("; ")}`, { details: { problems } });
}
