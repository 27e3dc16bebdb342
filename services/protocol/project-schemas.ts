// Wire schemas of the project methods (docs/protocol.md, "Projects") and the check TypeBox cannot
// express: every BrowserPreview origin is a bare http(s) origin, stored in its canonical form.
import { type Static, Type } from "typebox";
import { AppError } from "./app-error.ts";
import { BeforePage, PageNext } from "./pages.ts";
import { Id, Nullable, Timestamp } from "./values.ts";

/** How many origins a project may list (the migration's CHECK says the same). */
export const MAX_PREVIEW_ORIGINS = 32;

export const ProjectCreateParams = Type.Object(
  {
    name: Type.String({ minLength: 1, maxLength: 200 }),
    workspaceRoot: Type.String({ minLength: 1, maxLength: 4096 }),
  },
  { additionalProperties: false },
);

export const ProjectRef = Type.Object({ projectId: Id }, { additionalProperties: false });

export const ProjectsConfigureParams = Type.Object(
  {
    projectId: Id,
    /** Give the project's sandboxes user-mode networking (slirp4netns, host loopback disabled). */
    network: Type.Optional(Type.Boolean()),
    /** Origins BrowserPreview may load besides loopback and workspace files; replaces the list. */
    previewOrigins: Type.Optional(
      Type.Array(Type.String({ minLength: 1, maxLength: 300 }), { maxItems: MAX_PREVIEW_ORIGINS }),
    ),
    /** Refuse the change unless the project is still at this version. */
    expectedVersion: Type.Optional(Type.Integer({ minimum: 0 })),
  },
  { additionalProperties: false },
);
export type ProjectsConfigureParams = Static<typeof ProjectsConfigureParams>;

export const ProjectView = Type.Object({
  id: Type.String(),
  name: Type.String(),
  workspaceRoot: Type.String(),
  owner: Type.String(),
  /** The project's sandboxes get user-mode networking (docs/protocol.md); false = no network at all. */
  network: Type.Boolean(),
  /** Canonical origins (`scheme://host[:port]`) BrowserPreview may load besides loopback and workspace files. */
  previewOrigins: Type.Array(Type.String()),
  version: Type.Integer(),
  createdAt: Timestamp,
  updatedAt: Nullable(Timestamp),
});
export type ProjectView = Static<typeof ProjectView>;

/** projects.list: the projects the caller is a member of, newest membership first, paged by `before`. */
export const ProjectsListParams = Type.Object({ ...BeforePage }, { additionalProperties: false });
export type ProjectsListParams = Static<typeof ProjectsListParams>;

/** A project as its member sees it, with who made the caller a member and when (null: the migration). */
export const MemberProjectView = Type.Object({
  ...ProjectView.properties,
  addedBy: Nullable(Type.String()),
  addedAt: Timestamp,
});
export type MemberProjectView = Static<typeof MemberProjectView>;

export const ProjectList = Type.Object({ projects: Type.Array(MemberProjectView), next: PageNext });
export type ProjectList = Static<typeof ProjectList>;

/** projects.leave: the caller's membership ends (not the owner's: PROJECT_OWNER_CANNOT_LEAVE). */
export const ProjectLeft = Type.Object({ projectId: Type.String(), left: Type.Literal(true) });
export type ProjectLeft = Static<typeof ProjectLeft>;

/**
 * The canonical form of a preview origin (`https://example.com`, `http://10.0.0.5:8080`), or
 * INVALID_PARAMS naming the bad entry: only http and https, a host, no credentials, path, query or
 * fragment. Duplicates collapse; the order given is kept.
 */
export function normalisePreviewOrigins(raw: readonly string[]): string[] {
  const out: string[] = [];
  for (const [index, entry] of raw.entries()) {
    const refuse = (why: string) =>
      new AppError("INVALID_PARAMS", `previewOrigins[${index}] ${why}`, {
        details: { field: "previewOrigins", index, value: entry },
      });
    let u: URL;
    try {
      u = new URL(entry);
    } catch {
      throw refuse("is not an absolute URL");
    }
    if (u.protocol !== "http:" && u.protocol !== "https:") throw refuse("must be http or https");
    if (!u.hostname) throw refuse("must name a host");
    if (u.username || u.password) throw refuse("must not carry credentials");
    if ((u.pathname !== "/" && u.pathname !== "") || u.search || u.hash || /[?#]/.test(entry))
      throw refuse("must be an origin only (scheme://host[:port]), without path, query or fragment");
    if (!out.includes(u.origin)) out.push(u.origin);
  }
  return out;
}
