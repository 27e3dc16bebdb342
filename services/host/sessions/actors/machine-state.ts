// The session actor's state value as one string: the body of the `machine.state` event and
// SessionView.machineState (docs/protocol.md "Events"). Nested values are a dotted path. A state
// that runs one of the machine's I/O steps (it has an `invoke`) is left as soon as that step ends:
// it is published live and not stored; a resting state (idle, running, parked, queued) is stored.
import type { StateValue } from "xstate";
import { sessionMachine } from "../../../../machines/session.machine.ts";

/** The top-level states that invoke an I/O step, read from the machine's own definition. */
const STEP_STATES: ReadonlySet<string> = new Set(
  Object.entries(sessionMachine.config.states ?? {})
    .filter(([, node]) => node && typeof node === "object" && "invoke" in node && node.invoke !== undefined)
    .map(([name]) => name),
);

/** Whether the actor leaves this state when the step it runs ends (live only, never stored). */
export function isStepState(state: string): boolean {
  return STEP_STATES.has(state.split(/[.,]/)[0] ?? state);
}

/** What a session without a live actor reports: passivated (or degraded), the rows stay the truth. */
export const PASSIVATED = "passivated";

/** `"idle"` stays `"idle"`; `{running: "waiting"}` is `"running.waiting"`; parallel regions join with ",". */
export function stateValueString(value: StateValue): string {
  if (typeof value === "string") return value;
  return Object.entries(value)
    .map(([key, child]) => (child === undefined ? key : `${key}.${stateValueString(child)}`))
    .join(",");
}
