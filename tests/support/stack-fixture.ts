// The one disposable stack of an integration file (`await using`, opened around the file or a
// describe by useStack): on teardown it fails when a process, pool client, NATS subscription or
// connection, or database opened through the test helpers is still open (graphile-worker's check).
import { aroundAll } from "vitest";
import { describeLeaks, type Leak, mark, openSince, type Resource } from "./leaks.ts";
import { createStack, type Stack } from "./stack.ts";
import { databaseExists } from "./test-db.ts";

type Teardown = () => void | Promise<void>;

/** Stacks open now: what one of them owns is never another one's leak (nested suites). */
const openStacks = new Set<Stack>();

export interface StackOptions {
  /** Environment for the host and worker (set before they start). */
  extra?: Record<string, string>;
  /** Runs before the processes start (e.g. to open the stack folder to the sandbox user). */
  prepare?: (stack: Stack) => void | Promise<void>;
  host?: boolean;
  worker?: boolean;
  /** Runs after the processes are ready; what it returns runs first at teardown. */
  // biome-ignore lint/suspicious/noConfusingVoidType: a setup returns a teardown or nothing
  setup?: (stack: Stack) => void | Teardown | Promise<void | Teardown>;
  /** A database with no schema (tests of what a host does before or while it migrates). */
  emptyDatabase?: boolean;
  /** Limit for opening (and, apart, for closing) the stack; the hook timeout by default. */
  timeoutMs?: number;
}

export type DisposableStack = Stack & AsyncDisposable;

/** A stack for `await using`: disposing it releases everything and rejects naming any leak. */
export async function openStack(label: string, opts: StackOptions = {}): Promise<DisposableStack> {
  const since = mark();
  const stack = await createStack(label, { emptyDatabase: opts.emptyDatabase === true });
  openStacks.add(stack);
  const teardowns: Teardown[] = [];
  const dispose = () => disposeStack(stack, label, since, teardowns);
  const disposable: DisposableStack = Object.assign(stack, { [Symbol.asyncDispose]: dispose });
  try {
    if (opts.extra) stack.env.extra = { ...stack.env.extra, ...opts.extra };
    await opts.prepare?.(stack);
    if (opts.host) await stack.startHost();
    if (opts.worker) await stack.startWorker();
    const teardown = await opts.setup?.(stack);
    if (teardown) teardowns.push(teardown);
  } catch (err) {
    await dispose().catch(() => {});
    throw err;
  }
  return disposable;
}

async function disposeStack(stack: Stack, label: string, since: number, teardowns: Teardown[]) {
  const errors: unknown[] = [];
  for (const t of teardowns.splice(0).reverse()) await Promise.resolve(t()).catch((e) => errors.push(e));
  await stack.release();
  openStacks.delete(stack);
  const owned = new Set<Resource>([...stack.owned(), ...[...openStacks].flatMap((s) => s.owned())]);
  const leaks = openSince(since, owned);
  // Close what leaked too, so the check reports once and the next file starts clean.
  for (const r of leaks) await r.close().catch((e) => errors.push(e));
  await stack.close().catch((e) => errors.push(e));
  const found: Leak[] = [...leaks];
  if (await databaseExists(stack.db.name).catch(() => false))
    found.push({ kind: "test database", name: () => `${stack.db.name} (still there after its drop)` });
  if (found.length > 0) throw new Error(describeLeaks(`stack fixture "${label}"`, found));
  if (errors.length > 0) throw errors[0];
}

/**
 * The stack of the enclosing file or describe: opened before its tests (and its beforeAll hooks),
 * disposed after its afterAll hooks, failing the suite on a leak. The returned value forwards to
 * the live stack, so module-level helpers may close over it.
 */
export function useStack(label: string, opts: StackOptions = {}): Stack {
  let current: Stack | null = null;
  aroundAll(async (runSuite) => {
    await using stack = await openStack(label, opts);
    current = stack;
    try {
      await runSuite();
    } finally {
      current = null;
    }
  }, opts.timeoutMs);
  const live = (): Stack => {
    if (!current) throw new Error(`stack "${label}" is used outside its suite`);
    return current;
  };
  return new Proxy({} as Stack, {
    get: (_t, key) => Reflect.get(live(), key),
    set: (_t, key, value) => Reflect.set(live(), key, value),
  });
}

/** The fixture's leak check alone, for files that open databases or processes but no stack. */
export function useLeakCheck(label: string): void {
  aroundAll(async (runSuite) => {
    const since = mark();
    await runSuite();
    await checkNoLeaks(label, since);
  });
}

/** Rejects (after closing them) when resources opened after `since` are still open. */
export async function checkNoLeaks(label: string, since: number): Promise<void> {
  const leaks = openSince(since, new Set([...openStacks].flatMap((s) => s.owned())));
  for (const r of leaks) await r.close().catch(() => {});
  if (leaks.length > 0) throw new Error(describeLeaks(`leak check "${label}"`, leaks));
}
