// Human-readable text for the views the host returns (projects, sessions, proposals). Pure; `--json`
// bypasses all of it and prints the result as received.
import type { MemberProjectView } from "../protocol/project-schemas.ts";
import type { ProjectView, ProposalView, SessionView } from "../protocol/schemas.ts";

export function formatProjectCreated(p: ProjectView): string[] {
  return [`project ${p.id} created: ${p.name} at ${p.workspaceRoot}`];
}

export function formatProject(p: ProjectView): string[] {
  return [
    `project ${p.id}: ${p.name}`,
    `  workspace:       ${p.workspaceRoot}`,
    `  owner:           ${p.owner}`,
    `  network:         ${p.network ? "on (slirp4netns, host loopback closed)" : "off"}`,
    `  preview origins: ${p.previewOrigins.length > 0 ? p.previewOrigins.join(", ") : "none (loopback and workspace files only)"}`,
    `  version:         ${p.version}${p.updatedAt ? `, updated ${p.updatedAt}` : ""}`,
  ];
}

/** One line per project the caller is a member of: whose it is and who made the caller a member. */
export function formatProjectList(projects: MemberProjectView[]): string[] {
  return projects.map(
    (p) =>
      `${p.id}  owner ${p.owner}  member since ${p.addedAt}${p.addedBy !== null ? ` (added by ${p.addedBy})` : ""}  ${JSON.stringify(p.name)}  ${p.workspaceRoot}`,
  );
}

export function formatSession(s: SessionView): string[] {
  return [
    `session ${s.id}${s.title ? ` "${s.title}"` : ""}`,
    `  project:     ${s.projectId}`,
    `  owner:       ${s.owner}${s.approvers.length > 0 ? ` (approvers: ${s.approvers.join(", ")})` : ""}`,
    `  mode:        ${s.mode} (planning ${s.planningState})`,
    `  permissions: ${s.permissionMode}`,
    `  model:       ${s.model.provider}/${s.model.model}`,
    `  active turn: ${s.activeTurnId ?? "none"}`,
    `  machine:     ${s.machineState}`,
    `  version:     ${s.version}, updated ${s.updatedAt}`,
  ];
}

export function formatSessionCreated(s: SessionView): string[] {
  return [
    `session ${s.id} created: mode ${s.mode}, permissions ${s.permissionMode}, model ${s.model.provider}/${s.model.model}`,
  ];
}

export function formatSessionList(sessions: SessionView[]): string[] {
  if (sessions.length === 0) return ["no sessions"];
  return sessions.map(
    (s) =>
      `${s.id}  ${s.mode.padEnd(5)}  ${s.planningState.padEnd(17)}  ${s.permissionMode.padEnd(12)}  ${s.model.provider}/${s.model.model}${s.title ? `  ${s.title}` : ""}`,
  );
}

export function formatProposalList(proposals: ProposalView[]): string[] {
  if (proposals.length === 0) return ["no pending plans"];
  return proposals.flatMap((p) => [
    `${p.proposalId}  session ${p.sessionId}  ${p.status}  deadline ${p.deadline}`,
    `  title: ${p.title}`,
    `  file:  ${p.artifactPath} (${p.byteSize} bytes)`,
    ...(p.question ? [`  question: ${p.question}`] : []),
  ]);
}

export function formatResolved(p: ProposalView): string[] {
  if (p.action === "reject" || p.status === "rejected") {
    return [`plan rejected: ${p.proposalId}; the session stays in Plan`];
  }
  const exec = p.executionId ? `; execution ${p.executionId} ${p.executionState ?? ""}`.trimEnd() : "";
  return [`plan approved: ${p.proposalId} (permission mode ${p.targetPermissionMode ?? "?"})${exec}`];
}

export function formatAbort(r: { sessionId: string; aborted: { turnId: string } | null }): string[] {
  return r.aborted
    ? [`aborted turn ${r.aborted.turnId} of session ${r.sessionId}`]
    : [`nothing to abort in session ${r.sessionId}`];
}

export function formatHello(r: { protocolVersion: number; hostId: string; devMode: boolean }): string[] {
  return [
    `host ${r.hostId}: protocol ${r.protocolVersion}${r.devMode ? ", development mode (no NATS auth)" : ""}`,
  ];
}
