// Who may change host-wide settings (app defaults, plugins, a project's network and preview origins):
// any principal in development mode, else only PI_SETTINGS_ADMINS. One rule, checked by the bus for
// every method whose gate is `admin` (gates.ts).
import { refuse, type Result } from "../../protocol/result.ts";

export interface SettingsAdmins {
  /** Development mode: any principal may. */
  devMode: boolean;
  /** Production: the principals that may (PI_SETTINGS_ADMINS). */
  settingsAdmins: readonly string[];
}

/** FORBIDDEN unless the principal may change settings (`what` names them in the message), else null. */
export function settingsAdminRefusal(
  rule: SettingsAdmins,
  principal: string,
  what: string,
): Result<never> | null {
  if (rule.devMode || rule.settingsAdmins.includes(principal)) return null;
  return refuse("FORBIDDEN", `only the principals in PI_SETTINGS_ADMINS may ${what}`);
}
