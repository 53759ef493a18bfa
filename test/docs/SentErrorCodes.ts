import * as Fs from "node:fs"
import * as Path from "node:path"
import ts from "typescript"

/**
 * The error codes the source can send, found by reading it the way its error sites are written (not by
 * running it), so a code added anywhere is seen without anyone listing it:
 * - `code: <literal>` in an object (an error body, `new X({ code })`, `ErrorFields`), a `code` property or
 *   type alias `…Code` whose type is a union of literals, and a parameter `code = <literal>` (a default);
 * - `X.of(…)` of an error class whose static `of` takes a `code` (REST) or `error` (OAuth) parameter, the
 *   literal at that position;
 * - a call of a function that takes such a parameter, by its name (`httpError(401, "missing_token")`);
 * - an OAuth error body: an object with `error` beside `error_description` or `description`.
 * Literals in conditional arguments count (`apiKey ? "api_key_not_accepted" : "missing_token"`).
 */
export interface SentCode {
  readonly code: string
  /** `oauth`: in the OAuth error shape; `rest`: the REST error body, or a model failure's code. */
  readonly kind: "rest" | "oauth"
  readonly file: string
  readonly line: number
}

const CODE = /^[a-z][a-z0-9]*(?:_[a-z0-9]+)*$/

/** The declaration that is the catalogue itself: its entries are what the scan is checked against. */
const CATALOGUE = "ErrorCodes"

const sourceFiles = (root: string, dirs: ReadonlyArray<string>): Array<string> =>
  dirs.flatMap((dir) =>
    Fs.readdirSync(Path.join(root, dir), { recursive: true, encoding: "utf8" })
      .filter((f) => f.endsWith(".ts") && !f.endsWith(".d.ts"))
      .map((f) => Path.join(dir, f))
  )

const nameOf = (name: ts.PropertyName | ts.BindingName | undefined): string | undefined =>
  name !== undefined && (ts.isIdentifier(name) || ts.isStringLiteral(name)) ? name.text : undefined

const COMPARISONS = new Set([
  ts.SyntaxKind.EqualsEqualsEqualsToken,
  ts.SyntaxKind.ExclamationEqualsEqualsToken,
  ts.SyntaxKind.EqualsEqualsToken,
  ts.SyntaxKind.ExclamationEqualsToken
])

/**
 * Every string literal in an expression (or literal type) that looks like a code: the values it can take,
 * so not what a condition or a comparison tests (`kind === "unreachable" ? "a" : "b"` sends a or b).
 */
const literalsIn = (node: ts.Node): Array<string> => {
  const found: Array<string> = []
  const visit = (n: ts.Node): void => {
    if (ts.isConditionalExpression(n)) return [n.whenTrue, n.whenFalse].forEach(visit)
    if (ts.isBinaryExpression(n) && COMPARISONS.has(n.operatorToken.kind)) return
    if ((ts.isStringLiteral(n) || ts.isNoSubstitutionTemplateLiteral(n)) && CODE.test(n.text)) found.push(n.text)
    n.forEachChild(visit)
  }
  visit(node)
  return found
}

/** The position and kind of a `code` or `error: string` parameter of a function. */
const codeParameter = (fn: ts.SignatureDeclarationBase): { index: number; kind: SentCode["kind"] } | undefined => {
  for (const [index, p] of fn.parameters.entries()) {
    const name = nameOf(p.name)
    if (name === "code") return { index, kind: "rest" }
    if (name === "error" && p.type?.kind === ts.SyntaxKind.StringKeyword) return { index, kind: "oauth" }
  }
  return undefined
}

const functionOf = (node: ts.Node | undefined) =>
  node !== undefined && (ts.isArrowFunction(node) || ts.isFunctionExpression(node)) ? node : undefined

export const sentErrorCodes = (root: string, dirs: ReadonlyArray<string> = ["src", "schema", "cluster"]) => {
  const files = sourceFiles(root, dirs).map((file) => {
    const text = Fs.readFileSync(Path.join(root, file), "utf8")
    return { file, source: ts.createSourceFile(file, text, ts.ScriptTarget.Latest, true) }
  })

  // error classes whose static `of` takes the code: BadRequest.of(message, details, code), OAuthError.of(error, …)
  const classes = new Map<string, { index: number; kind: SentCode["kind"] }>()
  for (const { source } of files) {
    source.forEachChild(function visit(n) {
      if (ts.isClassDeclaration(n) && n.name !== undefined) {
        for (const member of n.members) {
          const fn = ts.isPropertyDeclaration(member) && nameOf(member.name) === "of"
            ? functionOf(member.initializer)
            : undefined
          const parameter = fn === undefined ? undefined : codeParameter(fn)
          if (parameter !== undefined) classes.set(n.name.text, parameter)
        }
      }
      n.forEachChild(visit)
    })
  }

  // functions that take a code, by name (helpers such as `httpError` are called from other files)
  const functions = new Map<string, Array<{ index: number; kind: SentCode["kind"] }>>()
  for (const { source } of files) {
    source.forEachChild(function visit(n) {
      const fn = ts.isFunctionDeclaration(n) ? n : ts.isVariableDeclaration(n) ? functionOf(n.initializer) : undefined
      const name = ts.isFunctionDeclaration(n) ? n.name?.text : ts.isVariableDeclaration(n) ? nameOf(n.name) : undefined
      const parameter = fn === undefined ? undefined : codeParameter(fn)
      if (name !== undefined && parameter !== undefined) functions.set(name, [...functions.get(name) ?? [], parameter])
      n.forEachChild(visit)
    })
  }

  const sent: Array<SentCode> = []
  for (const { file, source } of files) {
    const add = (node: ts.Node, kind: SentCode["kind"]) => {
      const line = source.getLineAndCharacterOfPosition(node.getStart()).line + 1
      for (const code of literalsIn(node)) sent.push({ code, kind, file, line })
    }
    source.forEachChild(function visit(n) {
      if (ts.isVariableDeclaration(n) && nameOf(n.name) === CATALOGUE) return
      if (ts.isPropertyAssignment(n) && nameOf(n.name) === "code") add(n.initializer, "rest")
      if (ts.isPropertySignature(n) && nameOf(n.name) === "code" && n.type !== undefined) add(n.type, "rest")
      if (ts.isTypeAliasDeclaration(n) && n.name.text.endsWith("Code")) add(n.type, "rest")
      if (ts.isParameter(n) && nameOf(n.name) === "code" && n.initializer !== undefined) add(n.initializer, "rest")
      if (ts.isObjectLiteralExpression(n)) {
        const properties = new Map(
          n.properties.flatMap((p) => ts.isPropertyAssignment(p) ? [[nameOf(p.name), p.initializer] as const] : [])
        )
        const error = properties.get("error")
        if (error !== undefined && (properties.has("error_description") || properties.has("description"))) {
          add(error, "oauth")
        }
      }
      if (ts.isCallExpression(n)) {
        const callee = n.expression
        const ofClass = ts.isPropertyAccessExpression(callee) && callee.name.text === "of" &&
            ts.isIdentifier(callee.expression)
          ? classes.get(callee.expression.text)
          : undefined
        const targets = ofClass !== undefined
          ? [ofClass]
          : ts.isIdentifier(callee)
          ? functions.get(callee.text) ?? []
          : []
        for (const target of targets) {
          const argument = n.arguments[target.index]
          if (argument !== undefined) add(argument, target.kind)
        }
      }
      n.forEachChild(visit)
    })
  }
  return sent
}
