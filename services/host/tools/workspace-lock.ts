// One async mutex per real workspace path, process-wide: the tools that change a workspace (Write,
// Edit, Bash) of every session on it run one at a time, so Edit's read-modify-write never runs while
// a Bash command changes the file (docs/architecture.md "Tools"). Read-only tools take no lock: they
// run as the sandbox user, confined to the workspace. The price: a long Bash command delays writes.
const tails = new Map<string, Promise<void>>();

export async function withWorkspaceLock<T>(workspace: string, fn: () => Promise<T>): Promise<T> {
  const previous = tails.get(workspace) ?? Promise.resolve();
  let release!: () => void;
  const mine = new Promise<void>((resolve) => {
    release = resolve;
  });
  const tail = previous.then(() => mine);
  tails.set(workspace, tail);
  await previous;
  try {
    return await fn();
  } finally {
    release();
    if (tails.get(workspace) === tail) tails.delete(workspace);
  }
}
