// decodeParams(), the single decoder of untrusted input: anything that does not match its TypeBox
// schema, or holds text Postgres cannot store (a NUL, a lone surrogate: text-safety.ts), is
// INVALID_PARAMS naming the first problems.
import type { Static, TSchema } from "typebox";
import { Compile } from "typebox/compile";
import { AppError } from "./app-error.ts";
import { unsafeTextPath } from "./text-safety.ts";

const compiled = new WeakMap<TSchema, ReturnType<typeof Compile>>();

/** Checks untrusted input against a schema; a mismatch is INVALID_PARAMS naming the first problems. */
export function decodeParams<S extends TSchema>(schema: S, value: unknown): Static<S> {
  let validator = compiled.get(schema);
  if (!validator) {
    validator = Compile(schema);
    compiled.set(schema, validator);
  }
  if (validator.Check(value)) {
    const bad = unsafeTextPath(value);
    if (bad === null) return value as Static<S>;
    const problems = [`${bad} must not contain a NUL character or an unpaired surrogate`];
    throw new AppError("INVALID_PARAMS", `invalid params: ${problems[0]}`, { details: { problems } });
  }
  const problems = [...validator.Errors(value)]
    .slice(0, 5)
    .map((e) => `${e.instancePath || "/"} ${e.message}`);
  throw new AppError("INVALID_PARAMS", `invalid params: ${problems.join("; ")}`, { details: { problems } });
}
