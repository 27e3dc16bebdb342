// The session actor's state value as one string: the body of the `machine.state` event and
// SessionView.machineState (docs/protocol.md "Events"). Nested values are a dotted path.
import type { StateValue } from "xstate";

/** What a session without a live actor reports: passivated (or degraded), the rows stay the truth. */
export const PASSIVATED = "passivated";

/** `"idle"` stays `"idle"`; `{running: "waiting"}` is `"running.waiting"`; parallel regions join with ",". */
export function stateValueString(value: StateValue): string {
  if (typeof value === "string") return value;
  return Object.entries(value)
    .map(([key, child]) => (child === undefined ? key : `${key}.${stateValueString(child)}`))
    .join(",");
}
