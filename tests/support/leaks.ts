// Everything the test helpers open (child processes, NATS connections and subscriptions, test
// databases and their pools' clients) is recorded here, so a fixture can name what was left open.

export type ResourceKind =
  | "child process"
  | "NATS connection"
  | "NATS subscription"
  | "pg client"
  | "test database";

export interface Resource {
  kind: ResourceKind;
  /** What a person needs to find it: an entry file and pid, a subject, a database name. */
  name(): string;
  isOpen(): boolean;
  /** Closes it (after a leak was recorded, so the next file starts clean). */
  close(): Promise<void>;
}

let seq = 0;
const entries = new Map<Resource, number>();

/** Records a resource; it counts as a leak of every fixture opened before it while isOpen() holds. */
export function track<R extends Resource>(resource: R): R {
  entries.set(resource, ++seq);
  return resource;
}

/** A point in the record: openSince(mark) sees only what was opened after it. */
export function mark(): number {
  return seq;
}

/** Resources opened after `since` and still open, minus `owned` (closed by their owner). */
export function openSince(since: number, owned: ReadonlySet<Resource> = new Set()): Resource[] {
  return [...entries].filter(([r, n]) => n > since && !owned.has(r) && r.isOpen()).map(([r]) => r);
}

export type Leak = Pick<Resource, "kind" | "name">;

export function describeLeaks(owner: string, leaks: Leak[]): string {
  return `${owner} left ${leaks.length} resource(s) open at teardown: ${leaks
    .map((r) => `${r.kind} ${r.name()}`)
    .join("; ")}`;
}
