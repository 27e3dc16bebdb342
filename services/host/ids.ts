// Identifiers: random, URL- and subject-safe, prefixed by kind so logs and rows read clearly.
import { randomBytes } from "node:crypto";

export function newId(
  kind: "prj" | "ses" | "turn" | "plan" | "req" | "exe" | "tok" | "task" | "run",
): string {
  return `${kind}_${randomBytes(kind === "tok" ? 24 : 12).toString("base64url")}`;
}
