// The server side of the METHODS table is typed: a handler gets its method's decoded params and must
// answer its method's result. The lines marked @ts-expect-error fail `npm run typecheck` if the
// types ever stop catching them (a handler of the wrong result type, a field its params do not have).
import { describe, expect, it } from "vitest";
import { ok, refuse } from "../../protocol/result.ts";
import type { AgentHandler, TokenHandler } from "./agent-api.ts";
import type { ClientHandler } from "./request-context.ts";

describe("client handler types", () => {
  it("take the method's params and answer its result or a refusal", async () => {
    const prompt: ClientHandler<"session.prompt"> = async (_principal, p) =>
      p.text === "" ? refuse("INVALID_PARAMS") : ok({ turnId: `turn-of-${p.sessionId}` });
    // @ts-expect-error session.prompt answers { turnId }, never a number
    const wrongResult: ClientHandler<"session.prompt"> = async () => ok(42);
    const unknownField: ClientHandler<"session.get"> = async (_principal, p) => {
      // @ts-expect-error session.get's params name a session, not a project
      const projectId: string = p.projectId;
      return refuse("SESSION_NOT_FOUND", projectId);
    };
    // @ts-expect-error a worker's append answers { appended: number }
    const wrongAppend: AgentHandler<"append"> = async () => ({ appended: "all" });
    expect(await wrongAppend({})).toEqual({ appended: "all" });
    // A worker method's handler gets its params decoded by the token gate, typed by the table.
    const deltaText: TokenHandler<"delta"> = async (_lease, p, _argsProblem) => {
      // @ts-expect-error delta's params carry text and kind, no sessionId
      const sessionId: string = p.sessionId;
      return { ok: sessionId === undefined && p.text.length >= 0 };
    };
    expect(typeof deltaText).toBe("function");
    expect(await prompt("alice", { sessionId: "s1", text: "go" }, {})).toEqual(ok({ turnId: "turn-of-s1" }));
    expect((await wrongResult("alice", { sessionId: "s1", text: "go" }, {})).ok).toBe(true);
    expect((await unknownField("alice", { sessionId: "s1" }, {})).ok).toBe(false);
  });
});
