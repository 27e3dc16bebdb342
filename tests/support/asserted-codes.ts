// Which error codes a test file asserts, read from its syntax tree: a code counts inside an
// `expect(...)` chain (the value or a matcher's argument), as an argument of an asserting helper (a
// function whose body calls expect), or through a constant used there; never in a comment or title.
import ts from "typescript";

export interface SourceFile {
  name: string;
  text: string;
}

const isExpectCall = (node: ts.Node): boolean =>
  ts.isCallExpression(node) &&
  ((ts.isIdentifier(node.expression) && node.expression.text === "expect") ||
    (ts.isPropertyAccessExpression(node.expression) &&
      ts.isIdentifier(node.expression.expression) &&
      node.expression.expression.text === "expect"));

/** The call `expect(...)` a member chain starts from, e.g. expect(x).rejects.toMatchObject(...). */
function chainRoot(node: ts.Expression): ts.Node | null {
  let n: ts.Node = node;
  for (;;) {
    if (isExpectCall(n)) return n;
    if (ts.isPropertyAccessExpression(n) || ts.isElementAccessExpression(n)) n = n.expression;
    else if (ts.isCallExpression(n) || ts.isAwaitExpression(n) || ts.isNonNullExpression(n)) n = n.expression;
    else return null;
  }
}

/** Whether node sits inside an expect(...) call or in the arguments of a matcher chained to one. */
function inExpectation(node: ts.Node): boolean {
  for (let n: ts.Node | undefined = node.parent; n; n = n.parent) {
    if (isExpectCall(n)) return true;
    if (ts.isCallExpression(n) && chainRoot(n.expression)) return true;
    if (ts.isFunctionLike(n)) return false;
  }
  return false;
}

function calleeName(call: ts.CallExpression): string | null {
  if (ts.isIdentifier(call.expression)) return call.expression.text;
  if (ts.isPropertyAccessExpression(call.expression)) return call.expression.name.text;
  return null;
}

/** Whether node is an argument (at any depth) of a call to one of the asserting helpers. */
function inHelperCall(node: ts.Node, helpers: ReadonlySet<string>): boolean {
  for (let n: ts.Node | undefined = node.parent; n; n = n.parent) {
    if (ts.isCallExpression(n) && n.arguments.some((a) => a.pos <= node.pos && node.end <= a.end)) {
      const name = calleeName(n);
      if (name && helpers.has(name)) return true;
    }
    if (ts.isFunctionLike(n)) return false;
  }
  return false;
}

function parse(file: SourceFile): ts.SourceFile {
  return ts.createSourceFile(file.name, file.text, ts.ScriptTarget.Latest, true, ts.ScriptKind.TS);
}

function walk(node: ts.Node, visit: (n: ts.Node) => void): void {
  visit(node);
  node.forEachChild((c) => walk(c, visit));
}

/** Functions whose body calls expect: a code passed to one of them is asserted by it. */
export function assertingHelpers(files: SourceFile[]): Set<string> {
  const helpers = new Set<string>();
  for (const file of files)
    walk(parse(file), (n) => {
      let name: string | null = null;
      let body: ts.Node | undefined;
      if (ts.isFunctionDeclaration(n) && n.name) [name, body] = [n.name.text, n.body];
      else if (
        ts.isVariableDeclaration(n) &&
        ts.isIdentifier(n.name) &&
        n.initializer &&
        (ts.isArrowFunction(n.initializer) || ts.isFunctionExpression(n.initializer))
      )
        [name, body] = [n.name.text, n.initializer.body];
      if (!name || !body) return;
      let asserts = false;
      walk(body, (m) => {
        if (isExpectCall(m)) asserts = true;
      });
      if (asserts) helpers.add(name);
    });
  return helpers;
}

/** The codes (of `codes`) that some file asserts, with where: "file:line". */
export function assertedCodes(files: SourceFile[], codes: readonly string[]): Map<string, string[]> {
  const wanted = new Set(codes);
  // A file's own asserting helpers, and those of the support folder every test file may import.
  const shared = assertingHelpers(files.filter((f) => f.name.includes("support/")));
  const found = new Map<string, string[]>();
  const credit = (code: string, sf: ts.SourceFile, node: ts.Node) => {
    const line = sf.getLineAndCharacterOfPosition(node.getStart(sf)).line + 1;
    found.set(code, [...(found.get(code) ?? []), `${sf.fileName}:${line}`]);
  };
  for (const file of files) {
    const sf = parse(file);
    const helpers = new Set([...shared, ...assertingHelpers([file])]);
    const asserting = (n: ts.Node) => inExpectation(n) || inHelperCall(n, helpers);
    // Constants holding codes: `const CODE = "PLAN_X"` or `const CODES = ["PLAN_X", ...]`.
    const constants = new Map<string, string[]>();
    walk(sf, (n) => {
      if (!ts.isVariableDeclaration(n) || !ts.isIdentifier(n.name) || !n.initializer) return;
      const init = n.initializer;
      const values = ts.isArrayLiteralExpression(init) ? [...init.elements] : [init];
      const held = values.filter(ts.isStringLiteralLike).map((v) => v.text);
      if (held.length > 0 && held.every((v) => wanted.has(v))) constants.set(n.name.text, held);
    });
    walk(sf, (n) => {
      if (ts.isStringLiteralLike(n) && wanted.has(n.text) && asserting(n)) credit(n.text, sf, n);
      if (ts.isIdentifier(n) && constants.has(n.text) && !ts.isVariableDeclaration(n.parent) && asserting(n))
        for (const code of constants.get(n.text)!) credit(code, sf, n);
    });
  }
  return found;
}
