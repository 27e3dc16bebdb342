// Who may change host-wide settings (app defaults, plugins, a project's network and preview origins):
// any principal in development mode, else only PI_SETTINGS_ADMINS. One rule, used by every API
// that changes such settings.
import { AppError } from "../../protocol/app-error.ts";

export interface SettingsAdmins {
  /** Development mode: any principal may. */
  devMode: boolean;
  /** Production: the principals that may (PI_SETTINGS_ADMINS). */
  settingsAdmins: readonly string[];
}

/** Throws FORBIDDEN unless the principal may change settings; `what` names them in the message. */
export function requireSettingsAdmin(rule: SettingsAdmins, principal: string, what: string): void {
  if (!rule.devMode && !rule.settingsAdmins.includes(principal))
    throw new AppError("FORBIDDEN", `only the principals in PI_SETTINGS_ADMINS may ${what}`);
}
